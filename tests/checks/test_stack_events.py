"""Change-set and stack-event logic (checks/stack_events.py) on CloudFormation's answers.

The events and changes here are the shapes AWS returns in a rollback, a stuck delete
or a change set (tests/support/cfn_events.py), so the logic is tested on data AWS
could actually send.
"""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.checks.stack_events import (
    ChangeSummary,
    ResourceChange,
    StackEvent,
    explain_stuck_delete,
    first_failure,
    is_no_change_reason,
    parse_changes,
    parse_event,
    required_capabilities,
)
from support.cfn_events import ASG_T, ROLLBACK, STACK, STACK_T, ev


def test_first_failure_is_the_root_cause_not_the_cascade() -> None:
    events = [parse_event(e) for e in reversed(ROLLBACK)]  # API order: newest first
    f = first_failure(events)
    assert f is not None
    assert (f.logical_id, f.status) == ("Asg", "CREATE_FAILED")
    assert "instance limit" in f.reason


def test_first_failure_falls_back_to_a_cancellation_when_nothing_else_failed() -> None:
    only = [
        parse_event(
            ev(1, "LogGroup", "AWS::Logs::LogGroup", "CREATE_FAILED", "Resource creation cancelled")
        ),
        parse_event(
            ev(
                2,
                STACK,
                STACK_T,
                "ROLLBACK_IN_PROGRESS",
                "The following resource(s) failed to create: [LogGroup].",
            )
        ),
    ]
    f = first_failure(only)
    assert f is not None and f.logical_id == "LogGroup"
    assert first_failure([parse_event(e) for e in ROLLBACK[:7]]) is None


def test_capabilities_follow_the_iam_resources() -> None:
    assert required_capabilities({"Resources": {"L": {"Type": "AWS::Logs::LogGroup"}}}) == []
    role = {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}}}
    assert required_capabilities({"Resources": {"R": role}}) == ["CAPABILITY_IAM"]
    named = {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "x"}}
    assert required_capabilities({"Resources": {"R": role, "N": named}}) == ["CAPABILITY_NAMED_IAM"]


def test_no_change_reasons_cover_both_wordings() -> None:
    assert is_no_change_reason(
        "The submitted information didn't contain changes. Submit different information to "
        "create a change set."
    )
    assert is_no_change_reason("No updates are to be performed.")
    assert not is_no_change_reason("Template format error: unresolved reference")
    assert not is_no_change_reason(None)


def test_stuck_delete_names_the_protected_asg() -> None:
    events = [
        parse_event(ev(0, STACK, STACK_T, "DELETE_IN_PROGRESS", "User Initiated")),
        parse_event(ev(1, "Service", "AWS::ECS::Service", "DELETE_IN_PROGRESS")),
        parse_event(ev(9, "Service", "AWS::ECS::Service", "DELETE_COMPLETE")),
        parse_event(ev(10, "Asg", ASG_T, "DELETE_IN_PROGRESS")),
        parse_event(ev(10, "CapacityProvider", "AWS::ECS::CapacityProvider", "DELETE_IN_PROGRESS")),
    ]
    lines = explain_stuck_delete(events)
    assert len(lines) == 2  # the service finished; the stack itself is not a resource
    assert any("Asg" in ln and "protected from scale-in" in ln for ln in lines)
    assert any("CapacityProvider" in ln and "associated with a cluster" in ln for ln in lines)


def test_event_line_carries_status_type_and_reason() -> None:
    e: StackEvent = parse_event(ROLLBACK[7])
    line = e.line()
    assert "CREATE_FAILED" in line and ASG_T in line and "instance limit" in line


@pytest.mark.parametrize(
    ("props", "disruption"),
    [
        (["VPCZoneIdentifier"], "fleet-rebalanced"),
        (["AvailabilityZones"], "fleet-rebalanced"),
        (["AvailabilityZoneIds"], "fleet-rebalanced"),
        (["PlacementGroup"], "fleet-rebalanced"),
        # With the template too, the refresh replaces every instance anyway.
        (["VPCZoneIdentifier", "LaunchTemplate"], "fleet-refreshed"),
        (["MaxSize"], None),
    ],
)
def test_a_group_whose_zones_change_rebalances_its_fleet(
    props: list[str], disruption: str | None
) -> None:
    details = [{"Target": {"Attribute": "Properties", "Name": p}} for p in props]
    assert _modify("Asg", ASG_T, Details=details).disruption == disruption


def test_the_spot_group_and_a_subnet_the_stack_replaces_rebalance_too() -> None:
    # Without [network] the stack's own subnets may be replaced (Fn::GetAZs answering
    # otherwise); the group's VPCZoneIdentifier then changes through a reference.
    dynamic = {
        "Target": {"Attribute": "Properties", "Name": "VPCZoneIdentifier"},
        "Evaluation": "Dynamic",
        "ChangeSource": "ResourceReference",
        "CausingEntity": "PrivateSubnet1",
    }
    for group in ("Asg", "SpotAsg"):
        c = _modify(group, ASG_T, Scope=["Properties"], Details=[dynamic])
        assert c.disruption == "fleet-rebalanced"


def test_a_group_change_that_is_not_its_template_refreshes_nothing() -> None:
    (c,) = parse_changes(
        [
            {
                "Type": "Resource",
                "ResourceChange": {
                    "Action": "Modify",
                    "LogicalResourceId": "Asg",
                    "ResourceType": ASG_T,
                    "Replacement": "False",
                    "Details": [{"Target": {"Attribute": "Properties", "Name": "MaxSize"}}],
                },
            }
        ]
    )
    assert c.properties == ("MaxSize",) and c.disruption is None


def test_parse_changes_keeps_order_and_replacement_flags() -> None:
    summary = ChangeSummary(
        tuple(
            parse_changes(
                [
                    {
                        "Type": "Resource",
                        "ResourceChange": {
                            "Action": "Modify",
                            "LogicalResourceId": "Svc",
                            "ResourceType": "AWS::ECS::Service",
                            "Replacement": "Conditional",
                        },
                    },
                    {
                        "Type": "Resource",
                        "ResourceChange": {
                            "Action": "Remove",
                            "LogicalResourceId": "Old",
                            "ResourceType": "AWS::SNS::Topic",
                        },
                    },
                ]
            )
        )
    )
    assert [c.logical_id for c in summary.changes] == ["Svc", "Old"]
    assert summary.changes[0].disruption == "service-replaced"
    assert summary.changes[1].disruption is None
    assert summary.of("Remove")[0].logical_id == "Old"


def _modify(logical_id: str, resource_type: str, **change: Any) -> ResourceChange:
    """The one resource change of a DescribeChangeSet Modify, as parse_changes reads it."""
    rc = {"Action": "Modify", "LogicalResourceId": logical_id, "ResourceType": resource_type}
    (c,) = parse_changes(
        [{"Type": "Resource", "ResourceChange": {**rc, "Replacement": "False", **change}}]
    )
    return c


@pytest.mark.parametrize(
    ("prop", "disruption"),
    [
        # UpdateService: "This parameter triggers a new service deployment."
        ("NetworkConfiguration", "tasks-replaced"),
        ("LoadBalancers", "tasks-replaced"),
        ("ServiceRegistries", "tasks-replaced"),
        ("ForceNewDeployment", "tasks-replaced"),
        # "This parameter doesn't trigger a new service deployment."
        ("DesiredCount", None),
        ("HealthCheckGracePeriodSeconds", None),
        ("CapacityProviderStrategy", None),
    ],
)
def test_a_service_change_ecs_applies_by_a_new_deployment_restarts_every_task(
    prop: str, disruption: str | None
) -> None:
    details = [{"Target": {"Attribute": "Properties", "Name": prop}}]
    c = _modify("Service", "AWS::ECS::Service", Details=details)
    assert c.disruption == disruption


@pytest.mark.parametrize(
    ("scope", "disruption"),
    [
        (["Tags"], None),  # the stack's tags, propagated: no new version
        (["Properties"], "fleet-refreshed"),
        (["Properties", "Tags"], "fleet-refreshed"),
        ([], "fleet-refreshed"),  # CloudFormation did not say: assume the worst
    ],
)
def test_a_launch_template_refreshes_the_fleet_unless_only_its_tags_change(
    scope: list[str], disruption: str | None
) -> None:
    c = _modify("LaunchTemplate", "AWS::EC2::LaunchTemplate", Scope=scope)
    assert c.disruption == disruption
