"""The scaling specs the template tests of infra/scaling.py synthesize, and what they read.

Each spec (concurrency with and without the fast paths, the GPU guard, scale to
zero on a load balancer or a schedule) is validated once per process (synth,
cfn-lint, cdk-nag) for test_scaling_policies.py, test_scaling_steps.py and
test_scaling_zero.py. The alarms and policies mirror CloudWatch's and Application
Auto Scaling's API shapes, so ``_valid`` checks them against botocore's models.
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.session
from botocore.model import StructureShape
from botocore.validate import ParamValidator

from ecs_gpu.contracts import demand_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design.paths import fast_path
from ecs_gpu.infra.scaling import (
    FAST_PATH_POLICY_ID,
    FAST_SCALE_IN_POLICY_ID,
)
from ecs_gpu.spec import Spec, parse_spec
from ecs_gpu.template.validate import ValidationReport

from .conftest import ALERT_EMAILS, G5
from .tpl import render, resources

T = dict[str, Any]
METRICS = '\n[service.metrics]\npreset = "vllm"\n'


def _scaling(keys: str) -> str:
    return G5.replace("[scaling]\n", "[scaling]\n" + keys) + METRICS


SPECS = {
    # The defaults that follow from [service.metrics]: signal concurrency, fast path on.
    "concurrency": _scaling("target_concurrency_per_task = 16\n"),
    "concurrency-guard-email": _scaling(
        "target_concurrency_per_task = 8\npanic_threshold_percent = 150\ngpu_guard = true\n"
    )
    + ALERT_EMAILS,
    "concurrency-no-fast-path": _scaling(
        "target_concurrency_per_task = 16\nfast_scale_out = false\n"
    ),
    "concurrency-fast-scale-in": _scaling(
        "target_concurrency_per_task = 16\nfast_scale_in = true\n"
    ),
    # Scale to zero: the wake path on the load balancer's requests, and a night schedule.
    "zero-alb": _scaling("target_concurrency_per_task = 16\n")
    .replace("min_instances = 1", "min_instances = 0")
    .replace("min_tasks = 1", "min_tasks = 0")
    + '\n[load_balancer]\nscheme = "internal"\n'
    + '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    + '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 0\nmax_tasks = 4\n',
    # The sidecars' series is the requests in flight: the sleep alarm adds it.
    "zero-alb-in-flight": _scaling(
        'target_concurrency_per_task = 16\ndemand_estimate = "in-flight"\n'
    )
    .replace("min_instances = 1", "min_instances = 0")
    .replace("min_tasks = 1", "min_tasks = 0")
    + '\n[load_balancer]\nscheme = "internal"\n',
    # A 15-minute model load: the sleep alarm's window outlasts it (wake.quiet_minutes),
    # and the request-count policy holds target tracking's scale-in until it serves
    # (without it the spec is refused: wake.unprotected_wake).
    "zero-alb-slow-model": _scaling("target_concurrency_per_task = 16\n")
    .replace("min_instances = 1", "min_instances = 0")
    .replace("min_tasks = 1", "min_tasks = 0")
    .replace("mean_request_s = 8.0\n", "mean_request_s = 8.0\nmodel_load_s = 900\n")
    + '\n[load_balancer]\nscheme = "internal"\nrequest_count_target = 60\n',
    # Without a load balancer: only the schedule wakes it.
    "zero-schedule": _scaling("target_concurrency_per_task = 16\n").replace(
        "min_tasks = 1", "min_tasks = 0"
    )
    + '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n',
}
NAMES = Names("vllm-g5")
STEP_POLICY = "StepScaling"


@functools.cache
def parsed_specs() -> dict[str, Spec]:
    return {k: parse_spec(text, f"{k}.toml") for k, text in SPECS.items()}


@functools.cache
def validated_reports() -> dict[str, ValidationReport]:
    """validate() of each spec (synth, cfn-lint, cdk-nag): once per process, for every module
    here that reads them."""
    from ecs_gpu.template.validate import validate

    return {k: validate(spec, path=k) for k, spec in parsed_specs().items()}


def _policies(t: T, policy_type: str) -> dict[str, dict[str, Any]]:
    return {
        k: r["Properties"]
        for k, r in resources(t, "AWS::ApplicationAutoScaling::ScalingPolicy").items()
        if r["Properties"]["PolicyType"] == policy_type
    }


def _tracking(t: T) -> list[dict[str, Any]]:
    return [
        p["TargetTrackingScalingPolicyConfiguration"]
        for p in _policies(t, "TargetTrackingScaling").values()
    ]


def _custom(t: T) -> list[dict[str, Any]]:
    return [
        c["CustomizedMetricSpecification"]
        for c in _tracking(t)
        if "CustomizedMetricSpecification" in c
    ]


def _alarms(t: T) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in resources(t, "AWS::CloudWatch::Alarm").items()}


def _is_missing_alarm(a: dict[str, Any]) -> bool:
    """A missing-metric alarm in its plain form: missing data is breaching."""
    return a["TreatMissingData"] == "breaching" and not a.get("AlarmDescription", "").startswith(
        "Sleep path"
    )


def _concurrency_plain() -> dict[str, Any]:
    """The concurrency series in a plain metric form, spelled from the contract."""
    return {
        "Namespace": demand_metric.NAMESPACE,
        "MetricName": demand_metric.METRIC_NAME,
        "Dimensions": demand_metric.dimensions(NAMES.cluster, NAMES.service),
    }


def _fast_out_policies(t: T) -> dict[str, dict[str, Any]]:
    return {k: p for k, p in _policies(t, STEP_POLICY).items() if FAST_PATH_POLICY_ID in k}


def _fast_in_policies(t: T) -> dict[str, dict[str, Any]]:
    return {k: p for k, p in _policies(t, STEP_POLICY).items() if FAST_SCALE_IN_POLICY_ID in k}


def _fast_alarm(t: T) -> tuple[str, dict[str, Any]]:
    found = [(k, a) for k, a in _alarms(t).items() if a.get("Period") == fast_path.ALARM_PERIOD_S]
    assert len(found) == 1, sorted(_alarms(t))
    return found[0]


# --- botocore: the template mirrors the API shapes ------------------------------------------

_SESSION = botocore.session.get_session()


def _input_shape(service: str, operation: str) -> StructureShape:
    shape = _SESSION.get_service_model(service).operation_model(operation).input_shape
    assert isinstance(shape, StructureShape)
    return shape


def _valid(service: str, operation: str, params: dict[str, Any]) -> None:
    report = ParamValidator().validate(params, _input_shape(service, operation))
    assert not report.has_errors(), report.generate_report()


def _concrete(value: Any) -> Any:
    """CloudFormation intrinsics replaced by an ARN-shaped string, for the API validator."""
    if isinstance(value, dict) and set(value) <= {"Ref", "Fn::GetAtt", "Fn::Join"}:
        return "arn:aws:sns:us-east-1:123456789012:" + render(value).strip("${}").replace(".", "-")
    if isinstance(value, dict):
        return {k: _concrete(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_concrete(v) for v in value]
    return value
