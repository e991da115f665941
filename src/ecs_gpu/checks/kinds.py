"""The snapshot format's vocabulary: its kinds (one table) and its target.

raw.py reads raw `aws` CLI output with these names and the snapshot
validator (snapshot.py) checks a file with them; both import them from here,
so neither imports the other's module back (no import cycle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from ecs_gpu.contracts.signals import Signal

Snapshot = dict[str, Any]

SNAPSHOT_VERSION: Final = 1
COLLECTION_KEY: Final = "_collection"


@dataclass(frozen=True)
class KindSource:
    """Where one snapshot kind comes from: the call, its IAM actions, its output shape."""

    # botocore service (also the boto3 client name) and the operation whose
    # output shape the items have.
    service: str
    operation: str
    # Output members down to one item; () for an object kind (``object_of``).
    items: tuple[str, ...]
    # Every IAM action collecting the kind needs (a List call before a Describe).
    permissions: tuple[str, ...]
    # "core": without it there is nothing to diagnose (aws/facts stops);
    # "always": every collection; "warm_pool": only when a group has or the
    # spec deploys a warm pool; "probe": only with --probe-hosts.
    need: Literal["core", "always", "warm_pool", "probe"] = "always"
    # The call a failure is reported under, when it is not ``operation``.
    step_operation: str | None = None
    # For an object kind (one JSON object, key -> the whole output of one call):
    # what maps to what.
    object_of: str | None = None

    @property
    def collected_by(self) -> str:
        """The operation a denied or failed collection of this kind names."""
        return self.step_operation or self.operation


# Every kind a snapshot may hold, in the order the collector reads them (each
# after what it needs: the warm pools before DescribeInstances, which also
# reads the pool's instances) and docs/doctor.md lists them. A new kind is a
# row here and a Collector._collect_<kind> method in aws/facts.py.
KIND_TABLE: Final[dict[str, KindSource]] = {
    "clusters": KindSource(
        "ecs", "DescribeClusters", ("clusters",), ("ecs:DescribeClusters",), need="core"
    ),
    "services": KindSource(
        "ecs", "DescribeServices", ("services",), ("ecs:DescribeServices",), need="core"
    ),
    "task_definitions": KindSource(
        "ecs", "DescribeTaskDefinition", ("taskDefinition",), ("ecs:DescribeTaskDefinition",)
    ),
    "container_instances": KindSource(
        "ecs",
        "DescribeContainerInstances",
        ("containerInstances",),
        ("ecs:ListContainerInstances", "ecs:DescribeContainerInstances"),
    ),
    "tasks": KindSource("ecs", "DescribeTasks", ("tasks",), ("ecs:ListTasks", "ecs:DescribeTasks")),
    "capacity_providers": KindSource(
        "ecs",
        "DescribeCapacityProviders",
        ("capacityProviders",),
        ("ecs:DescribeCapacityProviders",),
    ),
    "auto_scaling_groups": KindSource(
        "autoscaling",
        "DescribeAutoScalingGroups",
        ("AutoScalingGroups",),
        ("autoscaling:DescribeAutoScalingGroups",),
    ),
    "scaling_activities": KindSource(
        "autoscaling",
        "DescribeScalingActivities",
        ("Activities",),
        ("autoscaling:DescribeScalingActivities",),
    ),
    "asg_policies": KindSource(
        "autoscaling",
        "DescribePolicies",
        ("ScalingPolicies",),
        ("autoscaling:DescribePolicies",),
    ),
    # DescribeWarmPool's output names no group, so the group name is the key.
    "warm_pools": KindSource(
        "autoscaling",
        "DescribeWarmPool",
        (),
        ("autoscaling:DescribeWarmPool",),
        need="warm_pool",
        object_of="Auto Scaling group name -> DescribeWarmPool output",
    ),
    "lifecycle_hooks": KindSource(
        "autoscaling",
        "DescribeLifecycleHooks",
        ("LifecycleHooks",),
        ("autoscaling:DescribeLifecycleHooks",),
        need="warm_pool",
    ),
    "launch_template_versions": KindSource(
        "ec2",
        "DescribeLaunchTemplateVersions",
        ("LaunchTemplateVersions",),
        ("ec2:DescribeLaunchTemplateVersions",),
    ),
    "instances": KindSource(
        "ec2", "DescribeInstances", ("Reservations", "Instances"), ("ec2:DescribeInstances",)
    ),
    "scalable_targets": KindSource(
        "application-autoscaling",
        "DescribeScalableTargets",
        ("ScalableTargets",),
        ("application-autoscaling:DescribeScalableTargets",),
    ),
    "scaling_policies": KindSource(
        "application-autoscaling",
        "DescribeScalingPolicies",
        ("ScalingPolicies",),
        ("application-autoscaling:DescribeScalingPolicies",),
    ),
    "service_scaling_activities": KindSource(
        "application-autoscaling",
        "DescribeScalingActivities",
        ("ScalingActivities",),
        ("application-autoscaling:DescribeScalingActivities",),
    ),
    # The scalable target's scheduled actions ([[scaling.schedule]], SCL008, SCL009).
    "scheduled_actions": KindSource(
        "application-autoscaling",
        "DescribeScheduledActions",
        ("ScheduledActions",),
        ("application-autoscaling:DescribeScheduledActions",),
    ),
    "alarms": KindSource(
        "cloudwatch", "DescribeAlarms", ("MetricAlarms",), ("cloudwatch:DescribeAlarms",)
    ),
    "metric_data": KindSource(
        "cloudwatch",
        "GetMetricData",
        ("MetricDataResults",),
        ("cloudwatch:GetMetricData",),
    ),
    "stacks": KindSource(
        "cloudformation", "DescribeStacks", ("Stacks",), ("cloudformation:DescribeStacks",)
    ),
    # Items are GetCommandInvocation outputs; the collection starts with SendCommand.
    "host_probes": KindSource(
        "ssm",
        "GetCommandInvocation",
        (),
        ("ssm:SendCommand", "ssm:GetCommandInvocation"),
        need="probe",
        step_operation="SendCommand",
        object_of="instance id -> invocation",
    ),
}
# Every kind a full collection writes, in the order docs/doctor.md lists them.
KINDS: Final[tuple[str, ...]] = tuple(KIND_TABLE)
if TYPE_CHECKING:
    Kind = str
else:
    # The table's names as a Literal, so pydantic refuses any other kind name
    # in _collection (and names the allowed ones in its message).
    Kind = Literal[KINDS]

# kind -> (botocore service, operation, output members down to one item).
# The object kinds (OBJECT_KINDS) map a key to the whole output instead.
KIND_SOURCES: Final[dict[str, tuple[str, str, tuple[str, ...]]]] = {
    k: (src.service, src.operation, src.items) for k, src in KIND_TABLE.items()
}
# The kinds that are one JSON object, key -> the whole output of one call.
OBJECT_KINDS: Final[dict[str, str]] = {
    k: src.object_of for k, src in KIND_TABLE.items() if src.object_of is not None
}


def permissions(*needs: str) -> tuple[str, ...]:
    """The IAM actions of the kinds collected under ``needs`` (KindSource.need), in table order."""
    return tuple(
        dict.fromkeys(
            p for src in KIND_TABLE.values() if src.need in needs for p in src.permissions
        )
    )


class _Model(BaseModel):
    # Strict and closed: a typo is refused, not silently ignored.
    model_config = ConfigDict(extra="forbid", strict=True)


class WarmPoolTarget(_Model):
    """What the spec's [capacity.warm_pool] deploys, which ASG005-ASG007 compare with."""

    min_size: int
    # None: the spec leaves MaxGroupPreparedCapacity unset (the group's MaxSize).
    max_prepared: int | None = None
    pool_state: str
    # host.warm_pool_hook_name and host.hook_timeout_s of the deployed spec.
    hook_name: str
    hook_timeout_s: int


class SpotTarget(_Model):
    """What the spec's [capacity.spot] deploys, which SVC003 compares the service with."""

    asg: str
    capacity_provider: str
    on_demand_base: int
    spot_percent: int
    # The Spot group's alarms the template names (Names.spot_gpu_metric_missing_alarm,
    # Names.spot_capacity_shortfall_alarm), which ALM003 expects; None in a
    # snapshot taken before they existed.
    gpu_missing_alarm: str | None = None
    shortfall_alarm: str | None = None


class ScheduleTarget(_Model):
    """One [[scaling.schedule]] entry as the template deploys it, which SCL009 compares with."""

    # The scheduled action's Schedule: schedule.Cron.expression, "cron(<six fields>)".
    schedule: str
    min_tasks: int
    max_tasks: int


class TargetNames(_Model):
    """``_collection.target``: the deployment's names and what its spec deploys.

    aws/facts.Target builds it (from a spec, or a cluster and service);
    doctor's checks read it back from the snapshot.
    """

    cluster: str
    service: str
    asg: str | None = None
    capacity_provider: str | None = None
    stack: str | None = None
    missing_metric_alarm: str | None = None
    signal: Signal | None = None
    # The spec's [scaling] gpu_guard; None without a spec.
    gpu_guard: bool | None = None
    # The design's fast_path.threshold when the spec deploys the fast path, else None
    # (with a signal: the spec deploys none; without: no spec was given).
    fast_path_threshold: float | None = None
    # The design's fast_path.cooldown_s when the spec deploys the fast path, else None.
    fast_path_cooldown_s: int | None = None
    # fast_scale_in.threshold when the spec deploys the fast scale-in, else None
    # (with a signal: the spec deploys none; without: no spec was given).
    fast_scale_in_threshold: float | None = None
    # The spec's [capacity.warm_pool]; None without one or without a spec.
    warm_pool: WarmPoolTarget | None = None
    # The spec's [capacity.spot]; None without one or without a spec.
    spot: SpotTarget | None = None
    # The spec's [[scaling.schedule]] entries, in order ([] without any); None
    # without a spec (or in a snapshot from before the field).
    schedule: list[ScheduleTarget] | None = None
    # Whether the spec deploys the sleep path (ecs_gpu.design.paths.sleep.sleep_path), SCL010's
    # whatever MinCapacity is now; None without a spec (or in an older snapshot).
    sleep_path: bool | None = None
    # Its quiet window (sleep.quiet_minutes: the model's load may lengthen it), which
    # SCL010 holds the alarm's periods to; None without a sleep path, without a spec
    # (any window of at least sleep.MIN_QUIET_MINUTES then) or in an older snapshot.
    sleep_minutes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """As the snapshot's ``_collection.target`` holds it (every key, None included)."""
        return self.model_dump()
