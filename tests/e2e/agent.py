"""A stand-in for the host CloudWatch agent, driven only by what the stack deployed.

The end-to-end test cannot run the real agent binary or a GPU. Everything
else is real: this module reads the agent config out of the deployed launch
template's user data (base64 -> ``#cloud-config`` YAML -> the ``write_files``
entry at :data:`ecs_gpu.contracts.gpu_metric.AGENT_CONFIG_PATH` -> JSON), reads the
instance role's policies from IAM (launch template -> instance profile ->
role), reads each instance's identity and tags from EC2, and publishes with
``PutMetricData`` what the agent would publish for that config. Nothing here
reads the metric contract from Python: a config that names another
namespace or dimension publishes exactly that, so a broken chain shows.

The agent's publishing semantics emulated (docs/aws-semantics.md §5,
"CloudWatch agent nvidia_gpu collector"; sources cited there: the agent's
Configuration-File-Details.md and aws/amazon-cloudwatch-agent@ab55b8d):

* each ``nvidia_gpu`` measurement ``m`` becomes the metric ``nvidia_smi_<m>``,
  with no Unit unless the measurement sets one; memory values are MiB as
  nvidia-smi reports them;
* ``metrics.namespace`` is the namespace, default ``CWAgent``;
* each GPU's series carries the plugin's ``index`` and ``name`` tags (``arch``
  too on schema v12; the project's parser does not read it, and no check
  depends on it), plus ``host`` unless ``append_dimensions`` is set, which
  removes ``host``;
* global ``append_dimensions`` supports only ``ImageId``, ``InstanceId``,
  ``InstanceType`` and ``AutoScalingGroupName``, each as ``${aws:<Key>}``,
  resolved per instance (the ASG name from the instance's
  ``aws:autoscaling:groupName`` tag, read with ec2:DescribeTags as the agent
  does; without the tag the dimension is left off);
* ``aggregation_dimensions`` also publishes every datapoint once per listed
  set with only that set's dimensions (``[["AutoScalingGroupName"]]``: one
  series per ASG across all instances and GPUs; ``[]``: no dimensions);
* ``metrics_collection_interval`` (plugin, else ``agent``, else 60 s): one
  sample per interval; below 60 s the agent publishes high resolution.

The instance role decides whether a publish happens at all: the agent's
``PutMetricData`` is refused (AccessDenied in the agent log, nothing
published) unless a statement allows ``cloudwatch:PutMetricData`` with its
``cloudwatch:namespace`` condition met. moto's IAM enforcement cannot judge
that condition (it only feeds ``sts:ExternalId`` to conditions), so
:func:`put_metric_data_denial` evaluates the deployed policies itself and
refuses any policy construct it does not understand rather than guess.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import boto3
import yaml

from ecs_gpu.host.probe import Gpu

DEFAULT_NAMESPACE: Final = "CWAgent"
DEFAULT_INTERVAL_S: Final = 60
METRIC_PREFIX: Final = "nvidia_smi_"
# Global append_dimensions: only these keys, each as "${aws:<Key>}".
APPEND_KEYS: Final = frozenset({"ImageId", "InstanceId", "InstanceType", "AutoScalingGroupName"})
ASG_TAG: Final = "aws:autoscaling:groupName"
PUT_METRIC_DATA: Final = "cloudwatch:PutMetricData"
NAMESPACE_KEY: Final = "cloudwatch:namespace"
PUT_BATCH: Final = 1000  # PutMetricData's MetricData limit


class EmulationError(ValueError):
    """A config or policy the emulator cannot honour exactly: it refuses to guess."""


# --- reading what was deployed -----------------------------------------------------


def _stack_resources(session: boto3.Session, stack: str, rtype: str) -> list[str]:
    cfn = session.client("cloudformation")
    ids = []
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack):
        for r in page["StackResourceSummaries"]:
            if r["ResourceType"] == rtype:
                ids.append(r["PhysicalResourceId"])
    return ids


def _only(items: Sequence[str], what: str) -> str:
    if len(items) != 1:
        raise EmulationError(f"expected one {what} in the stack, found {len(items)}: {items}")
    return items[0]


def launch_template_data(session: boto3.Session, stack: str) -> dict[str, Any]:
    """LaunchTemplateData of the stack's launch template, latest version, as EC2 serves it."""
    lt_id = _only(_stack_resources(session, stack, "AWS::EC2::LaunchTemplate"), "launch template")
    versions = session.client("ec2").describe_launch_template_versions(
        LaunchTemplateId=lt_id, Versions=["$Latest"]
    )["LaunchTemplateVersions"]
    return dict(versions[0]["LaunchTemplateData"])


def _write_file_content(entry: Mapping[str, Any]) -> str:
    """A cloud-init write_files entry's content, decoded per its ``encoding``."""
    content = entry.get("content", "")
    encoding = str(entry.get("encoding", "text/plain")).lower()
    if encoding in ("text/plain", ""):
        return str(content)
    raw = base64.b64decode(str(content), validate=True)
    if encoding in ("b64", "base64"):
        return raw.decode()
    if encoding in ("gz+b64", "gzip+base64", "gz+base64", "gzip+b64"):
        return gzip.decompress(raw).decode()
    raise EmulationError(f"write_files encoding {encoding!r} is not one cloud-init documents")


def agent_config_from_user_data(user_data_b64: str, path: str) -> dict[str, Any]:
    """The JSON cloud-init writes to ``path``, from base64 launch-template user data."""
    try:
        text = base64.b64decode(user_data_b64, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as e:
        raise EmulationError(f"user data is not base64 text: {e}") from None
    if not text.startswith("#cloud-config\n"):
        raise EmulationError(f"user data is not #cloud-config: starts {text[:40]!r}")
    doc = yaml.safe_load(text)
    entries = [e for e in doc.get("write_files", []) if e.get("path") == path]
    if len(entries) != 1:
        raise EmulationError(f"user data writes {path} {len(entries)} times, expected once")
    cfg: dict[str, Any] = json.loads(_write_file_content(entries[0]))
    return cfg


def instance_role_policies(session: boto3.Session, lt_data: Mapping[str, Any]) -> list[Any]:
    """Policy documents of the role the launch template's instance profile carries."""
    iam = session.client("iam")
    profile = lt_data.get("IamInstanceProfile") or {}
    if "Arn" in profile:
        name = str(profile["Arn"]).rsplit("/", 1)[-1]
    elif "Name" in profile:
        name = str(profile["Name"])
    else:
        raise EmulationError("the launch template names no instance profile")
    roles = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]["Roles"]
    return [doc for role in roles for doc in role_policies(session, role["RoleName"])]


def role_policies(session: boto3.Session, rname: str) -> list[Any]:
    """Policy documents of one IAM role: inline and attached (default version)."""
    iam = session.client("iam")
    docs: list[Any] = []
    for pname in iam.list_role_policies(RoleName=rname)["PolicyNames"]:
        docs.append(iam.get_role_policy(RoleName=rname, PolicyName=pname)["PolicyDocument"])
    for att in iam.list_attached_role_policies(RoleName=rname)["AttachedPolicies"]:
        pol = iam.get_policy(PolicyArn=att["PolicyArn"])["Policy"]
        ver = iam.get_policy_version(PolicyArn=att["PolicyArn"], VersionId=pol["DefaultVersionId"])
        docs.append(ver["PolicyVersion"]["Document"])
    # boto3 decodes IAM's URL-encoded JSON already; moto may hand back a string.
    return [json.loads(d) if isinstance(d, str) else d for d in docs]


@dataclass(frozen=True)
class Instance:
    """What the agent learns about its own instance (metadata and tags)."""

    instance_id: str
    image_id: str
    instance_type: str
    hostname: str
    tags: Mapping[str, str]


def asg_instances(session: boto3.Session, stack: str) -> tuple[str, list[Instance]]:
    """The stack's ASG name and its instances as each instance's agent sees itself."""
    asg_name = _only(_stack_resources(session, stack, "AWS::AutoScaling::AutoScalingGroup"), "ASG")
    groups = session.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[asg_name]
    )["AutoScalingGroups"]
    ids = [i["InstanceId"] for g in groups for i in g["Instances"]]
    if not ids:
        return asg_name, []
    ec2 = session.client("ec2")
    tags: dict[str, dict[str, str]] = {i: {} for i in ids}
    for page in ec2.get_paginator("describe_tags").paginate(
        Filters=[{"Name": "resource-id", "Values": ids}]
    ):
        for t in page["Tags"]:
            tags[t["ResourceId"]][t["Key"]] = t["Value"]
    out = []
    for r in ec2.describe_instances(InstanceIds=ids)["Reservations"]:
        for i in r["Instances"]:
            out.append(
                Instance(
                    instance_id=i["InstanceId"],
                    image_id=i["ImageId"],
                    instance_type=i["InstanceType"],
                    hostname=i.get("PrivateDnsName") or i["InstanceId"],
                    tags=tags[i["InstanceId"]],
                )
            )
    return asg_name, out


# --- IAM: may the instance role publish into this namespace? -------------------------


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else [v]


def _action_matches(patterns: Iterable[str], action: str) -> bool:
    # IAM action names are case-insensitive; * and ? are wildcards.
    return any(fnmatch.fnmatchcase(action.lower(), str(p).lower()) for p in patterns)


def _condition_holds(condition: Mapping[str, Any], context: Mapping[str, str]) -> bool:
    for op, pairs in condition.items():
        if op not in ("StringEquals", "StringLike"):
            raise EmulationError(f"condition operator {op} is not emulated")
        for key, wanted in pairs.items():
            if key not in context:
                raise EmulationError(f"condition key {key} is not emulated")
            got = context[key]
            values = [str(w) for w in as_list(wanted)]
            if op == "StringEquals" and got not in values:
                return False
            if op == "StringLike" and not any(fnmatch.fnmatchcase(got, w) for w in values):
                return False
    return True


def put_metric_data_denial(policies: Sequence[Mapping[str, Any]], namespace: str) -> str | None:
    """Why IAM would refuse the role's PutMetricData into ``namespace``; None if allowed.

    Explicit Deny wins, then any Allow; no matching Allow is an implicit deny.
    PutMetricData has no resource-level permissions, so only ``*`` resources count.
    """
    context = {NAMESPACE_KEY: namespace}
    allowed = False
    for doc in policies:
        for st in as_list(doc.get("Statement", [])):
            if "NotAction" in st or "NotResource" in st:
                raise EmulationError(f"statement {st.get('Sid')} uses NotAction/NotResource")
            if not _action_matches(as_list(st.get("Action", [])), PUT_METRIC_DATA):
                continue
            if "*" not in as_list(st.get("Resource", [])):
                continue
            if not _condition_holds(st.get("Condition", {}), context):
                continue
            if st.get("Effect") == "Deny":
                return f"explicit Deny of {PUT_METRIC_DATA} in statement {st.get('Sid')}"
            allowed = True
    if allowed:
        return None
    return (
        f"AccessDenied: no statement allows {PUT_METRIC_DATA} with "
        f"{NAMESPACE_KEY}={namespace} (implicit deny)"
    )


# --- the agent's publishing --------------------------------------------------------


@dataclass(frozen=True)
class Datum:
    metric: str
    dimensions: tuple[tuple[str, str], ...]  # sorted (name, value)
    value: float
    timestamp: datetime
    unit: str | None
    high_resolution: bool

    def as_api(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "MetricName": self.metric,
            "Dimensions": [{"Name": n, "Value": v} for n, v in self.dimensions],
            "Value": self.value,
            "Timestamp": self.timestamp,
        }
        if self.unit is not None:
            d["Unit"] = self.unit
        if self.high_resolution:
            d["StorageResolution"] = 1
        return d


def _measurements(plugin: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    """(measurement, metric name, unit) for each configured measurement."""
    out = []
    for m in plugin.get("measurement", []):
        if isinstance(m, str):
            name, rename, unit = m, None, None
        else:
            name, rename, unit = m["name"], m.get("rename"), m.get("unit")
        # The agent takes both "utilization_gpu" and "nvidia_smi_utilization_gpu".
        short = name.removeprefix(METRIC_PREFIX)
        out.append((short, rename or METRIC_PREFIX + short, unit))
    return out


def _gpu_value(gpu: Gpu, measurement: str) -> float:
    source = {
        "utilization_gpu": gpu.utilization_gpu_percent,
        "memory_used": gpu.memory_used_mib,
        "memory_total": gpu.memory_total_mib,
    }
    if measurement not in source:
        raise EmulationError(
            f"measurement {measurement} has no source in the parsed nvidia-smi sample"
        )
    value = source[measurement]
    if value is None:
        raise EmulationError(f"the nvidia-smi sample has no value for {measurement}")
    return float(value)


def _appended(append: Mapping[str, Any], inst: Instance) -> dict[str, str]:
    resolved = {
        "InstanceId": inst.instance_id,
        "ImageId": inst.image_id,
        "InstanceType": inst.instance_type,
        "AutoScalingGroupName": inst.tags.get(ASG_TAG),
    }
    out = {}
    for key, value in append.items():
        if key not in APPEND_KEYS or value != f"${{aws:{key}}}":
            raise EmulationError(
                f"global append_dimensions {key}={value!r}: only ${{aws:<Key>}} for "
                f"{sorted(APPEND_KEYS)} is supported"
            )
        got = resolved[key]
        if got is not None:
            out[key] = got
    return out


def agent_datums(
    config: Mapping[str, Any],
    instances: Sequence[Instance],
    gpus: Sequence[Gpu],
    *,
    samples: int,
    now: datetime,
) -> tuple[str, list[Datum]]:
    """The namespace and every datum the agent would send for ``samples`` intervals."""
    metrics = config["metrics"]
    namespace = str(metrics.get("namespace", DEFAULT_NAMESPACE))
    plugin = metrics["metrics_collected"]["nvidia_gpu"]
    interval = int(
        plugin.get(
            "metrics_collection_interval",
            config.get("agent", {}).get("metrics_collection_interval", DEFAULT_INTERVAL_S),
        )
    )
    append = metrics.get("append_dimensions") or {}
    aggregations = [list(s) for s in metrics.get("aggregation_dimensions", [])]
    measurements = _measurements(plugin)
    datums: list[Datum] = []
    for k in range(samples):
        # A few seconds back: the newest sample is already flushed, not in the future.
        at = now - timedelta(seconds=5 + k * interval)
        for inst in instances:
            extra = _appended(append, inst) if append else {"host": inst.hostname}
            for gpu in gpus:
                dims = {"index": str(gpu.index), "name": gpu.product_name, **extra}
                dim_sets = [dims] + [
                    {n: dims[n] for n in agg} for agg in aggregations if set(agg) <= set(dims)
                ]
                for measurement, metric, unit in measurements:
                    value = _gpu_value(gpu, measurement)
                    for ds in dim_sets:
                        datums.append(
                            Datum(
                                metric=metric,
                                dimensions=tuple(sorted(ds.items())),
                                value=value,
                                timestamp=at,
                                unit=unit,
                                high_resolution=interval < 60,
                            )
                        )
    return namespace, datums


@dataclass(frozen=True)
class PublishResult:
    namespace: str
    published: int  # datums accepted by PutMetricData
    denied: str | None  # IAM's refusal, as the agent log would show it


def run_agent(
    session: boto3.Session,
    config: Mapping[str, Any],
    policies: Sequence[Mapping[str, Any]],
    instances: Sequence[Instance],
    gpus: Sequence[Gpu],
    *,
    samples: int = 3,
    now: datetime | None = None,
) -> PublishResult:
    """Publish what the agent would, unless the instance role's policy refuses it."""
    namespace, datums = agent_datums(
        config, instances, gpus, samples=samples, now=now or datetime.now(UTC)
    )
    denial = put_metric_data_denial(policies, namespace)
    if denial is not None:
        return PublishResult(namespace=namespace, published=0, denied=denial)
    cw = session.client("cloudwatch")
    for i in range(0, len(datums), PUT_BATCH):
        batch = [d.as_api() for d in datums[i : i + PUT_BATCH]]
        cw.put_metric_data(Namespace=namespace, MetricData=batch)  # type: ignore[arg-type]
    return PublishResult(namespace=namespace, published=len(datums), denied=None)
