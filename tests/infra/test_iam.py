"""IAM on every example's template: the instance role (infra/iam.py), log permissions never on
"*", no wildcard action."""

from __future__ import annotations

from typing import Any

from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.spec import Spec

from .test_template import _lt_data
from .tpl import as_list, one, render, resources, statements

T = dict[str, Any]


def _instance_role(t: T) -> tuple[str, dict[str, Any]]:
    data = _lt_data(t)
    profile_id = data["IamInstanceProfile"]["Arn"]["Fn::GetAtt"][0]
    (role_ref,) = t["Resources"][profile_id]["Properties"]["Roles"]
    role_id = role_ref["Ref"]
    return role_id, t["Resources"][role_id]


def _role_statements(t: T, role_id: str) -> list[dict[str, Any]]:
    out = []
    for _, r in resources(t, "AWS::IAM::Policy").items():
        if {"Ref": role_id} in r["Properties"]["Roles"]:
            out.extend(r["Properties"]["PolicyDocument"]["Statement"])
    return out


def test_instance_role_ecs_ssm_and_namespace_scoped_metrics(t: T, spec: Spec) -> None:
    role_id, role = _instance_role(t)
    managed = [render(a) for a in role["Properties"].get("ManagedPolicyArns", [])]
    assert any(a.endswith(":iam::aws:policy/AmazonSSMManagedInstanceCore") for a in managed)
    sts = _role_statements(t, role_id)
    actions = {a for st in sts for a in as_list(st["Action"])}
    for needed in ("ecs:RegisterContainerInstance", "ecs:Poll", "ecs:DiscoverPollEndpoint"):
        assert needed in actions
    cluster_id, _ = one(t, "AWS::ECS::Cluster")
    register = next(st for st in sts if "ecs:RegisterContainerInstance" in as_list(st["Action"]))
    assert register["Resource"] == {"Fn::GetAtt": [cluster_id, "Arn"]}
    put = [st for st in sts if "cloudwatch:PutMetricData" in as_list(st["Action"])]
    assert len(put) == 1
    assert put[0]["Condition"] == {"StringEquals": {"cloudwatch:namespace": gpu_metric.NAMESPACE}}


def test_log_permissions_never_on_star(t: T, spec: Spec) -> None:
    names = Names(spec.service.name)
    log_statements = [
        st
        for _, st in statements(t)
        if any(str(a).startswith("logs:") for a in as_list(st["Action"]))
    ]
    assert log_statements
    groups = {
        lid: r["Properties"].get("LogGroupName")
        for lid, r in resources(t, "AWS::Logs::LogGroup").items()
    }
    for st in log_statements:
        for res in as_list(st["Resource"]):
            assert res != "*"
            assert res["Fn::GetAtt"][0] in groups  # a log group this stack owns
    role_id, _ = _instance_role(t)
    host_logs = [
        st
        for st in _role_statements(t, role_id)
        if any(str(a).startswith("logs:") for a in as_list(st["Action"]))
    ]
    (host_st,) = host_logs
    assert groups[host_st["Resource"]["Fn::GetAtt"][0]] == names.host_log_group


def test_no_wildcard_actions(t: T) -> None:
    for _, st in statements(t):
        for a in as_list(st["Action"]):
            assert not str(a).endswith("*"), a
