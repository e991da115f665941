"""Physical names of the resources a spec creates.

The CDK stack, deploy, destroy, verify and doctor all find a deployment by
these names, so they are derived from the service name in one place.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final, Protocol

from ecs_gpu.errors import BadInputError


class _Service(Protocol):
    @property
    def name(self) -> str: ...


class Spec(Protocol):
    """What naming reads of a spec (``ecs_gpu.spec.Spec``): its service's name."""

    @property
    def service(self) -> _Service: ...


# The construct id GpuService gets in the standalone stack. A user's app that
# uses the same id gets the same logical ids (README).
CONSTRUCT_ID: Final = "GpuService"
# CreateStack's StackName rule (botocore cloudformation model, CreateStack.StackName).
STACK_NAME_RE: Final = re.compile(r"[a-zA-Z][-a-zA-Z0-9]*")
STACK_NAME_MAX: Final = 128
# A service name (spec NAME_RE): every name below is built to fit AWS's
# limits for a base of at most 32 characters.
_BASE_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")
MAX_BASE_LEN: Final = 32
HASH_LEN: Final = 6


def deployment_base(
    service_name: str, stack_name: str | None, path_in_stack: str, *, standalone_id: str
) -> str:
    """The base of every physical name of one GpuService, unique per stack and construct.

    * The standalone stack (construct ``standalone_id`` directly in the stack)
      named after the service keeps the service name: what deploy, verify and
      doctor look up by default.
    * The standalone construct in a stack of another valid name (``--stack``)
      takes the stack's name, so one spec deploys as several stacks.
    * Anywhere else (a user's app, two services in one stack) the base is the
      service name plus a hash of stack name and construct path.
    """
    # Service names are valid stack names, so the first case is in the second.
    valid = stack_name is not None and _BASE_RE.fullmatch(stack_name) and "--" not in stack_name
    if path_in_stack == standalone_id and stack_name is not None and valid:
        return stack_name
    digest = hashlib.sha256(f"{stack_name}/{path_in_stack}".encode()).hexdigest()[:HASH_LEN]
    head = service_name[: MAX_BASE_LEN - HASH_LEN - 1].rstrip("-")
    return f"{head}-{digest}"


def scalable_target_id(cluster: str, service: str) -> str:
    """Application Auto Scaling's ResourceId of an ECS service's scalable target."""
    return f"service/{cluster}/{service}"


def check_stack_name(name: str, option: str = "--stack") -> str:
    """Refuse a name CloudFormation would refuse, before any call (exit 2)."""
    if len(name) > STACK_NAME_MAX or not STACK_NAME_RE.fullmatch(name):
        raise BadInputError(
            f"{option} {name!r}: not a CloudFormation stack name. A stack name has 1 to "
            f"{STACK_NAME_MAX} characters, letters, digits and hyphens only, and starts with "
            "a letter. Fix: e.g. vllm-g5-staging."
        )
    return name


def stack_name_of(spec: Spec, stack: str | None = None) -> str:
    """The stack's name: ``--stack`` when given (checked: exit 2), else the spec's own.

    The one rule synth, deploy, verify and doctor name a stack by.
    """
    return check_stack_name(stack) if stack is not None else Names(spec.service.name).stack


@dataclass(frozen=True)
class Names:
    """Every physical name derived from ``service.name``."""

    service_name: str

    @classmethod
    def for_deployment(cls, spec: Spec, stack: str | None = None) -> Names:
        """The physical names of ``spec`` deployed as stack ``stack`` (the spec's own by default).

        The same derivation the construct uses (:func:`deployment_base`), so
        deploy, verify and doctor find the ASG and cluster of a ``--stack``
        deployment.
        """
        base = deployment_base(
            spec.service.name, stack_name_of(spec, stack), CONSTRUCT_ID, standalone_id=CONSTRUCT_ID
        )
        return cls(base)

    @property
    def stack(self) -> str:
        return self.service_name

    @property
    def cluster(self) -> str:
        return self.service_name

    @property
    def service(self) -> str:
        return self.service_name

    @property
    def asg(self) -> str:
        return f"{self.service_name}-gpu-asg"

    @property
    def capacity_provider(self) -> str:
        # Capacity provider names may not start with "aws", "ecs" or "fargate".
        return f"cp-{self.service_name}-gpu"

    @property
    def spot_asg(self) -> str:
        """The [capacity.spot] group."""
        return f"{self.service_name}-spot-asg"

    @property
    def spot_capacity_provider(self) -> str:
        return f"cp-{self.service_name}-spot"

    @property
    def task_family(self) -> str:
        return self.service_name

    @property
    def task_log_group(self) -> str:
        return f"/ecs-gpu/{self.service_name}/tasks"

    @property
    def host_log_group(self) -> str:
        """Log group the host CloudWatch agent ships the ECS agent's logs to."""
        return f"/ecs-gpu/{self.service_name}/host"

    @property
    def dashboard(self) -> str:
        return f"{self.service_name}-gpu"

    @property
    def gpu_metric_missing_alarm(self) -> str:
        return f"{self.service_name}-gpu-metric-missing"

    @property
    def spot_gpu_metric_missing_alarm(self) -> str:
        """[capacity.spot]: the Spot group's GPU series missing while it has instances."""
        return f"{self.service_name}-spot-gpu-metric-missing"

    @property
    def spot_capacity_shortfall_alarm(self) -> str:
        """[capacity.spot]: the Spot group short of its desired capacity."""
        return f"{self.service_name}-spot-capacity-shortfall"

    @property
    def scalable_target_resource_id(self) -> str:
        return scalable_target_id(self.cluster, self.service)
