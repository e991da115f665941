"""A stand-in for the AWS CLI's ``aws cloudwatch put-metric-data``, as the sidecar calls it.

The end-to-end test puts this on the sidecar's PATH as ``aws``. It does what
the CLI does for the options the sidecar passes: it maps each option onto
PutMetricData's input (awscli's put-metric-data customization turns
``--metric-name``, ``--value``, ``--unit``, ``--dimensions`` and
``--storage-resolution`` into one MetricDatum), checks every name against
botocore's model, and sends the request through boto3 (whose parameter
validation is botocore's) to AWS_ENDPOINT_URL, the moto server. Before
sending, it applies the task role's IAM policies (a JSON file of policy
documents, read from the deployed role) the way IAM would; moto cannot judge
the ``cloudwatch:namespace`` condition (tests/e2e/agent.py). A denial prints
the CLI's error line and exits 254, the CLI's code for a service error.

Each call appends one JSON line to STANDIN_LOG: the request, and whether it
was sent or denied.

Not the real CLI: awscli v1 pins one botocore version and v2 is not on PyPI,
so installing it would replace the project's botocore.
"""

from __future__ import annotations

import json
import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import botocore.session
from botocore.model import ListShape, StructureShape

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from e2e.agent import put_metric_data_denial

# CLI option -> MetricDatum member (awscli/customizations/putmetricdata.py).
DATUM_OPTIONS = {
    "--metric-name": "MetricName",
    "--value": "Value",
    "--unit": "Unit",
    "--dimensions": "Dimensions",
    "--storage-resolution": "StorageResolution",
}
EXIT_SERVICE_ERROR = 254


def request(args: list[str]) -> dict[str, Any]:
    """The PutMetricData input the CLI sends for ``args``; refuses what the CLI would."""
    if args[:2] != ["cloudwatch", "put-metric-data"]:
        raise SystemExit(f"aws stand-in: only `cloudwatch put-metric-data`, got {args[:2]}")
    if len(args[2:]) % 2:
        raise SystemExit(f"aws stand-in: an option without a value in {args[2:]}")
    opts = dict(zip(args[2::2], args[3::2], strict=True))
    model = botocore.session.get_session().get_service_model("cloudwatch")
    op_input = model.operation_model("PutMetricData").input_shape
    assert op_input is not None
    metric_data = op_input.members["MetricData"]
    assert isinstance(metric_data, ListShape)
    datum_shape = metric_data.member
    assert isinstance(datum_shape, StructureShape)
    datum: dict[str, Any] = {}
    out: dict[str, Any] = {"MetricData": [datum]}
    for opt, value in opts.items():
        if opt == "--namespace":
            out["Namespace"] = value
            continue
        member = DATUM_OPTIONS.get(opt)
        if member is None or member not in datum_shape.members:
            raise SystemExit(f"aws stand-in: unknown option {opt}")
        if member == "Value":
            datum[member] = float(Decimal(value))
        elif member == "StorageResolution":
            datum[member] = int(value)
        elif member == "Dimensions":
            datum[member] = [
                dict(zip(("Name", "Value"), pair.split("=", 1), strict=True))
                for pair in value.split(",")
            ]
        else:
            datum[member] = value
    missing = [m for m in op_input.required_members if m not in out]
    missing += [m for m in datum_shape.required_members if m not in datum]
    if missing:
        raise SystemExit(f"aws stand-in: required {missing} missing")
    return out


def main() -> int:
    req = request(sys.argv[1:])
    policies = json.loads(Path(os.environ["STANDIN_POLICIES"]).read_text())
    denial = put_metric_data_denial(policies, req["Namespace"])
    with Path(os.environ["STANDIN_LOG"]).open("a") as log:
        log.write(json.dumps({"request": req, "denied": denial}) + "\n")
    if denial is not None:
        print(
            "\nAn error occurred (AccessDenied) when calling the PutMetricData operation: "
            f"{denial}",
            file=sys.stderr,
        )
        return EXIT_SERVICE_ERROR
    boto3.client("cloudwatch").put_metric_data(**req)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
