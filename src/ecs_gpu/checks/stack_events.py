"""Pure logic over CloudFormation data: change sets, stack events, statuses.

No AWS calls here. :mod:`ecs_gpu.aws.deploy` fetches the raw API objects
(shaped as botocore returns them) and these functions decide what they mean:
what a change set adds, modifies or replaces; whether a stack status is
final; which failure started a rollback; why a delete is stuck.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from ecs_gpu.design.redeploy import SERVICE_TYPE

STACK_TYPE = "AWS::CloudFormation::Stack"
ASG_TYPE = "AWS::AutoScaling::AutoScalingGroup"
LAUNCH_TEMPLATE_TYPE = "AWS::EC2::LaunchTemplate"
TASK_DEFINITION_TYPE = "AWS::ECS::TaskDefinition"

# What a change does to the running GPU instances or tasks, beyond the
# resource itself. A diff must shout about each before deploy asks:
# - "fleet-replaced": a new group launches a new fleet (cold GPU boots, image
#   pulls, model loads) and the old one is terminated;
# - "fleet-refreshed": the group's update policy is an instance refresh
#   (infra/capacity.py), which CloudFormation starts when the group's launch
#   template or mixed instances policy changes (aws-semantics §4 "An instance
#   refresh on update"), and any change to a launch template's data is a new
#   version the groups launch from: every GPU instance is replaced, in place;
# - "fleet-rebalanced": the group's subnets, Availability Zones or placement
#   group change (ZONE_PROPERTIES) and nothing it launches from does:
#   CloudFormation replaces old instances with new ones in the new subnets:
#   at least those in a zone the group no longer uses, possibly every one
#   (AWS does not say whether the refresh's skip matching spares the rest;
#   aws-semantics §4 "New subnets under the instance refresh");
# - "service-replaced": a new service, every task stopped and started anew;
# - "tasks-replaced": a task definition is immutable, so any change is a new
#   revision, and the service's rolling deployment replaces every task; so
#   does a change to a service property that ECS applies by a new deployment
#   (DEPLOYMENT_PROPERTIES).
Disruption = Literal[
    "fleet-replaced", "fleet-refreshed", "fleet-rebalanced", "service-replaced", "tasks-replaced"
]
DISRUPTIONS: Final[tuple[Disruption, ...]] = (
    "fleet-replaced",
    "fleet-refreshed",
    "fleet-rebalanced",
    "service-replaced",
    "tasks-replaced",
)
# A group's properties whose change starts its instance refresh.
REFRESH_PROPERTIES: Final = frozenset({"LaunchTemplate", "MixedInstancesPolicy"})
# A group's properties that say where its instances run: a change moves at
# least the instances its new zones leave out ("replaces old instances with
# new ones, according to the specified subnets", CloudFormation's
# VPCZoneIdentifier).
# PlacementGroup: the UpdatePolicy page lists it beside VPCZoneIdentifier.
ZONE_PROPERTIES: Final = frozenset(
    {"VPCZoneIdentifier", "AvailabilityZones", "AvailabilityZoneIds", "PlacementGroup"}
)
# A service's properties whose change "triggers a new service deployment"
# (botocore's ECS model, UpdateService: taskDefinition, networkConfiguration,
# loadBalancers, serviceRegistries, platformVersion, serviceConnectConfiguration,
# volumeConfigurations, vpcLatticeConfigurations; forceNewDeployment starts one
# by definition), which replaces every task. Not among them: desiredCount,
# capacityProviderStrategy, placement, deploymentConfiguration and the health
# check grace period ("doesn't trigger a new service deployment").
DEPLOYMENT_PROPERTIES: Final = frozenset(
    {
        "TaskDefinition",
        "NetworkConfiguration",
        "LoadBalancers",
        "ServiceRegistries",
        "PlatformVersion",
        "ServiceConnectConfiguration",
        "VolumeConfigurations",
        "VpcLatticeConfigurations",
        "ForceNewDeployment",
    }
)

# Statuses in which CloudFormation has finished with the stack.
TERMINAL_STATUSES = frozenset(
    {
        "CREATE_COMPLETE",
        "CREATE_FAILED",
        "ROLLBACK_COMPLETE",
        "ROLLBACK_FAILED",
        "DELETE_COMPLETE",
        "DELETE_FAILED",
        "UPDATE_COMPLETE",
        "UPDATE_FAILED",
        "UPDATE_ROLLBACK_COMPLETE",
        "UPDATE_ROLLBACK_FAILED",
        "IMPORT_COMPLETE",
        "IMPORT_ROLLBACK_COMPLETE",
        "IMPORT_ROLLBACK_FAILED",
    }
)
SUCCESS_STATUSES = frozenset(
    {"CREATE_COMPLETE", "UPDATE_COMPLETE", "DELETE_COMPLETE", "IMPORT_COMPLETE"}
)

# Reasons CloudFormation gives a change set that has nothing to do. The
# first is the CreateChangeSet wording, the second the UpdateStack one.
_NO_CHANGE_MARKERS = ("didn't contain changes", "No updates are to be performed")

# Events that are the consequence of an earlier failure, not its cause.
_CASCADE_MARKERS = (
    "Resource creation cancelled",
    "Resource update cancelled",
    "Resource deletion cancelled",
    "The following resource(s) failed",
)

_NAMED_IAM_KEYS = {
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::IAM::InstanceProfile": "InstanceProfileName",
    "AWS::IAM::User": "UserName",
    "AWS::IAM::Group": "GroupName",
}


def is_terminal(status: str) -> bool:
    return status in TERMINAL_STATUSES


def is_success(status: str) -> bool:
    return status in SUCCESS_STATUSES


def is_in_progress(status: str) -> bool:
    """True while another operation owns the stack (REVIEW_IN_PROGRESS is not one)."""
    return status.endswith("_IN_PROGRESS") and status != "REVIEW_IN_PROGRESS"


def is_no_change_reason(reason: str | None) -> bool:
    return bool(reason) and any(m in str(reason) for m in _NO_CHANGE_MARKERS)


def required_capabilities(template: Mapping[str, Any]) -> list[str]:
    """The IAM capabilities CloudFormation demands for ``template``.

    CAPABILITY_NAMED_IAM when any IAM resource has an explicit name, else
    CAPABILITY_IAM when there is any IAM resource, else none.
    """
    named = False
    any_iam = False
    for res in (template.get("Resources") or {}).values():
        rtype = str(res.get("Type", ""))
        if not rtype.startswith("AWS::IAM::"):
            continue
        any_iam = True
        key = _NAMED_IAM_KEYS.get(rtype)
        if key and key in (res.get("Properties") or {}):
            named = True
    if named:
        return ["CAPABILITY_NAMED_IAM"]
    return ["CAPABILITY_IAM"] if any_iam else []


# --- change sets ------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceChange:
    """One resource a change set touches."""

    action: str  # Add | Modify | Remove | Import | Dynamic | SyncWithActual
    logical_id: str
    resource_type: str
    replacement: str | None = None  # "True" | "False" | "Conditional" (Modify only)
    physical_id: str | None = None
    # The properties the change names (Details[].Target.Name of Attribute Properties).
    properties: tuple[str, ...] = ()
    # What the change touches (ResourceChange.Scope: Properties, Metadata, Tags, ...);
    # empty when CloudFormation does not say.
    scope: tuple[str, ...] = ()

    @property
    def replaces(self) -> bool:
        return self.action == "Modify" and self.replacement in ("True", "Conditional")

    @property
    def disruption(self) -> Disruption | None:
        """What this change does to running GPU instances or tasks (DISRUPTIONS), or None."""
        if self.action != "Modify":
            return None
        kind = self.resource_type
        if kind == ASG_TYPE:
            if self.replaces:
                return "fleet-replaced"
            if REFRESH_PROPERTIES & set(self.properties):
                return "fleet-refreshed"
            return "fleet-rebalanced" if ZONE_PROPERTIES & set(self.properties) else None
        if kind == LAUNCH_TEMPLATE_TYPE:
            # A new version or a new template: the groups launching from it refresh.
            # Not a change of tags alone (the stack's ecs-gpu:version after an
            # upgrade): that tags the template and makes no version.
            if self.scope and "Properties" not in self.scope and not self.replaces:
                return None
            return "fleet-refreshed"
        if kind == SERVICE_TYPE:
            if self.replaces:
                return "service-replaced"
            return "tasks-replaced" if DEPLOYMENT_PROPERTIES & set(self.properties) else None
        if kind == TASK_DEFINITION_TYPE and self.replaces:
            return "tasks-replaced"
        return None


def _changed_properties(details: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The property names a change's Details name, each once, in order."""
    targets = (d.get("Target") or {} for d in details)
    return tuple(
        dict.fromkeys(
            str(t["Name"]) for t in targets if t.get("Attribute") == "Properties" and t.get("Name")
        )
    )


def parse_changes(changes: Iterable[Mapping[str, Any]]) -> list[ResourceChange]:
    """``DescribeChangeSet.Changes`` -> resource changes, in CloudFormation's order."""
    out = []
    for ch in changes:
        rc = ch.get("ResourceChange")
        if ch.get("Type", "Resource") != "Resource" or not rc:
            continue
        out.append(
            ResourceChange(
                action=str(rc.get("Action", "")),
                logical_id=str(rc.get("LogicalResourceId", "")),
                resource_type=str(rc.get("ResourceType", "")),
                replacement=rc.get("Replacement"),
                physical_id=rc.get("PhysicalResourceId"),
                properties=_changed_properties(rc.get("Details") or []),
                scope=tuple(str(x) for x in rc.get("Scope") or ()),
            )
        )
    return out


def changes_from_template(template: Mapping[str, Any]) -> list[ResourceChange]:
    """Every resource of a template a new stack would add (no change set needed)."""
    return [
        ResourceChange("Add", logical_id, str(res.get("Type", "")))
        for logical_id, res in (template.get("Resources") or {}).items()
    ]


@dataclass(frozen=True)
class ChangeSummary:
    changes: tuple[ResourceChange, ...]

    def of(self, action: str) -> list[ResourceChange]:
        return [c for c in self.changes if c.action == action]

    @property
    def empty(self) -> bool:
        return not self.changes

    def disruptions(self) -> dict[Disruption, list[ResourceChange]]:
        """The changes that disrupt running instances or tasks, by kind, in DISRUPTIONS order."""
        out: dict[Disruption, list[ResourceChange]] = {}
        for kind in DISRUPTIONS:
            hit = [c for c in self.changes if c.disruption == kind]
            if hit:
                out[kind] = hit
        return out

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.changes:
            out[c.action] = out.get(c.action, 0) + 1
        return out

    def as_list(self) -> list[dict[str, Any]]:
        """The change list as ``diff --json`` and ``deploy --json`` write it."""
        return [
            {
                "action": c.action,
                "resource_type": c.resource_type,
                "logical_id": c.logical_id,
                "physical_id": c.physical_id,
                "replacement": c.replacement,
                "replaces": c.replaces,
                "disruption": c.disruption,
            }
            for c in self.changes
        ]


# --- stack events -----------------------------------------------------------------


@dataclass(frozen=True)
class StackEvent:
    """One ``DescribeStackEvents`` entry, reduced to what we show and reason on."""

    event_id: str
    timestamp: datetime
    logical_id: str
    resource_type: str
    status: str
    reason: str
    physical_id: str

    @property
    def is_stack(self) -> bool:
        return self.resource_type == STACK_TYPE

    @property
    def failed(self) -> bool:
        return self.status.endswith("_FAILED")

    @property
    def is_cascade(self) -> bool:
        return any(m in self.reason for m in _CASCADE_MARKERS)

    def line(self) -> str:
        t = self.timestamp.strftime("%H:%M:%S")
        why = f"  {self.reason}" if self.reason else ""
        return f"{t}  {self.status:<28} {self.resource_type:<40} {self.logical_id}{why}"


def parse_event(e: Mapping[str, Any]) -> StackEvent:
    return StackEvent(
        event_id=str(e.get("EventId", "")),
        timestamp=e["Timestamp"],
        logical_id=str(e.get("LogicalResourceId", "")),
        resource_type=str(e.get("ResourceType", "")),
        status=str(e.get("ResourceStatus", "")),
        reason=str(e.get("ResourceStatusReason") or ""),
        physical_id=str(e.get("PhysicalResourceId") or ""),
    )


def chronological(events: Iterable[StackEvent]) -> list[StackEvent]:
    """Oldest first. DescribeStackEvents returns newest first; the sort is stable."""
    return sorted(events, key=lambda e: e.timestamp)


def first_failure(events: Sequence[StackEvent]) -> StackEvent | None:
    """The failure that started it all, not the cancellations that followed.

    ``events`` in any order. A rollback produces one root failure (e.g. the
    ASG's "You have requested more instances than your current instance
    limit allows"), then "Resource creation cancelled" for every sibling,
    then the stack's own summary "The following resource(s) failed to
    create: [...]". The user needs the first.
    """
    ordered = chronological(events)
    failed = [e for e in ordered if e.failed]
    for e in failed:
        if not e.is_stack and not e.is_cascade:
            return e
    for e in failed:
        if not e.is_stack:
            return e
    return failed[0] if failed else None


def latest_by_resource(events: Iterable[StackEvent]) -> dict[str, StackEvent]:
    """The newest event of each resource (the stack itself excluded)."""
    out: dict[str, StackEvent] = {}
    for e in chronological(events):
        if not e.is_stack:
            out[e.logical_id] = e
    return out


# Why a resource hangs in DELETE_IN_PROGRESS (aws-cdk #14732, #18179, #19275).
_STUCK_CAUSES = {
    "AWS::AutoScaling::AutoScalingGroup": (
        "its instances are still protected from scale-in (managed termination protection), "
        "and CloudFormation will not terminate protected instances. Fix: "
        "aws autoscaling set-instance-protection --no-protected-from-scale-in "
        "--auto-scaling-group-name {physical} --instance-ids <ids>"
    ),
    "AWS::ECS::CapacityProvider": (
        "a capacity provider cannot be deleted while it is associated with a cluster or "
        "while its ASG still has instances. Fix: stop the service's tasks and let the ASG "
        "reach 0 instances"
    ),
    "AWS::ECS::ClusterCapacityProviderAssociations": (
        "the association is held while the capacity provider still has tasks or instances. "
        "Fix: scale the service to 0 and wait for its tasks to stop"
    ),
    "AWS::ECS::Cluster": (
        "a cluster cannot be deleted while container instances are registered or tasks run. "
        "Fix: wait for the ASG's instances to terminate, or deregister them"
    ),
    "AWS::ECS::Service": (
        "the service waits for its tasks to drain. Fix: check for tasks stuck in "
        "DEACTIVATING/STOPPING (aws ecs list-tasks --cluster ...)"
    ),
}


def explain_stuck_delete(events: Sequence[StackEvent]) -> list[str]:
    """One line per resource still in DELETE_IN_PROGRESS, with its likely cause."""
    lines = []
    for e in latest_by_resource(events).values():
        if e.status != "DELETE_IN_PROGRESS":
            continue
        cause = _STUCK_CAUSES.get(e.resource_type)
        if cause is None:
            cause = "CloudFormation is still waiting on the service that owns it"
        lines.append(
            f"{e.logical_id} ({e.resource_type}, {e.physical_id or 'no id'}) is still "
            f"DELETE_IN_PROGRESS since {e.timestamp:%H:%M:%S}: likely "
            + cause.format(physical=e.physical_id or "<asg>")
        )
    return lines
