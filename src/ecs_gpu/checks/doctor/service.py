"""Link 5, service: the service places tasks and they keep running."""

from __future__ import annotations

import re
from typing import Any, Final

from ecs_gpu.checks.doctor.common import (
    NEVER,
    collection_target,
    parse_time,
    service_items,
    service_short,
    short_name,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.model import Check, Evidence, Finding
from ecs_gpu.checks.snapshot import Snapshot

_UNABLE = "unable to place a task"


def _short_cluster(svc: dict[str, Any]) -> str | None:
    arn = svc.get("clusterArn")
    return short_name(arn) if isinstance(arn, str) else None


@check(
    "SVC000",
    link="service",
    severity="error",
    title="The service does not exist",
    requires=("services",),
    doc="No ACTIVE service of the target's name (services is empty, holds another service, "
    "or the service is DRAINING/INACTIVE: being deleted or deleted), or the cluster is not "
    "among the ACTIVE clusters collected.",
)
def _service_exists(s: Snapshot, c: Check) -> list[Finding]:
    target = collection_target(s)
    want_svc, want_cluster = target.get("service"), target.get("cluster")
    cluster = _cluster_missing(s, c, want_cluster)
    out = [] if cluster is None else [cluster]
    named = [
        svc
        for svc in s["services"]
        if (want_svc is None or svc.get("serviceName") == want_svc)
        and (want_cluster is None or _short_cluster(svc) in (None, want_cluster))
    ]
    if any(svc.get("status", "ACTIVE") == "ACTIVE" for svc in named):
        return out
    found = {
        f"{_short_cluster(svc) or '?'}/{svc.get('serviceName', '?')}": svc.get("status")
        for svc in s["services"]
    }
    out.append(
        c.finding(
            [Evidence("services", want_svc or "?", "serviceName/status", found or "none")],
            f"The service {want_svc or ''} does not exist in cluster {want_cluster or '?'} "
            f"({_why_no_service(s, named)}). Check the service name (the spec's [service] name, "
            "--service) and the region, or deploy it with `ecs-gpu deploy`.",
        )
    )
    return out


def _cluster_missing(s: Snapshot, c: Check, want_cluster: str | None) -> Finding | None:
    """The finding when the target's cluster is not among the ACTIVE clusters collected."""
    if "clusters" not in s:
        return None
    active = [
        cl.get("clusterName")
        for cl in s["clusters"]
        if cl.get("status", "ACTIVE") == "ACTIVE"
        and (want_cluster is None or cl.get("clusterName") == want_cluster)
    ]
    if active:
        return None
    return c.finding(
        [
            Evidence(
                "clusters",
                want_cluster or "?",
                "clusterName/status",
                {cl.get("clusterName"): cl.get("status") for cl in s["clusters"]} or "none",
            )
        ],
        f"The cluster {want_cluster or ''} is not among the ACTIVE clusters "
        "collected: it was deleted, or the snapshot is of another cluster. Check "
        "the cluster name (the spec's [service] name, --cluster) and the region, "
        "or deploy it with `ecs-gpu deploy`.",
        title="The cluster does not exist",
    )


def _why_no_service(s: Snapshot, named: list[dict[str, Any]]) -> str:
    """Why no service of the target's name is ACTIVE: its status, or what was collected."""
    if named:
        status = named[0].get("status")
        return (
            f"its status is {status}: "
            + ("it is being deleted" if status == "DRAINING" else "it was deleted")
            + ", so no task of it runs or starts"
        )
    if s["services"]:
        return "the snapshot holds only other services"
    return "services is empty: DescribeServices found no such service"


_STEADY = "has reached a steady state"


@check(
    "SVC001",
    link="service",
    severity="error",
    title="Service cannot place a task",
    requires=("services",),
    doc="The newest service event since the last steady state says 'unable to place a task'.",
)
def _service_events(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for svc in service_items(s):
        events = sorted(
            svc.get("events", []),
            key=lambda e: parse_time(e.get("createdAt")) or NEVER,
            reverse=True,
        )
        for e in events:
            msg = e.get("message", "")
            if _STEADY in msg:
                break  # the service recovered after any older placement failure
            if _UNABLE in msg:
                gpu = "GPU" in msg
                out.append(
                    c.finding(
                        [
                            Evidence(
                                "services",
                                svc.get("serviceName", "?"),
                                f"events[{e.get('id')}].message",
                                msg,
                            )
                        ],
                        (
                            "ECS found no instance with a free GPU for the task. Work down the "
                            "checks above: instances registered (ECS001), GPUs registered "
                            "(ECS003), GPUs all reserved (PLC002), placement constraint (PLC001), "
                            "then the ASG (ASG008, ASG001)."
                            if gpu
                            else "No instance met the task's requirements (CPU, memory, ports, "
                            "constraint): compare the task size with the instance type and read "
                            "the checks above."
                        ),
                        title="Service cannot place a GPU task" if gpu else None,
                    )
                )
                break  # the newest failure is the one that matters
    return out


_FAILED_STOPS = ("TaskFailedToStart", "EssentialContainerExited")


# Task loops this many times before it is a pattern, not one bad start.
TASK_FAILURES_MIN: Final = 2


# How a task that cannot read its secrets at start stops (stopCode TaskFailedToStart):
# "ResourceInitializationError: unable to pull secrets or registry auth: execution
# resource retrieval failed: unable to retrieve secret from asm / secrets from ssm ..."
# (aws-semantics.md §12 "A task's secrets at start").
_SECRETS_FAILED: Final = ("unable to pull secrets", "unable to retrieve secret")
_SECRET_ARN: Final = re.compile(r"arn:aws[\w-]*:(?:secretsmanager|ssm):[^\s,;\]\[)(\"']+")


def _secret_arn(value_from: str, task_def_arn: str) -> str:
    """The IAM resource ARN of one ``secrets[].valueFrom``: a Secrets Manager ARN without
    its ``:json-key:stage:id`` tail, a Parameter Store ARN, or a parameter name as the ARN
    in the task definition's Region and account (valueFrom may be a name only there)."""
    if value_from.startswith("arn:"):
        parts = value_from.split(":")
        return ":".join(parts[:7]) if parts[2] == "secretsmanager" else value_from
    arn = task_def_arn.split(":")
    where = ":".join(arn[1:5]) if len(arn) > 5 else "aws:ssm:REGION:ACCOUNT"
    partition, _, region, account = where.split(":")
    return f"arn:{partition}:ssm:{region}:{account}:parameter/{value_from.lstrip('/')}"


def _secrets_fix(s: Snapshot, task: dict[str, Any], reason: str) -> str | None:
    """Which secret the task could not read, and the permission its execution role lacks;
    None when the task did not stop on its secrets."""
    if not any(k in reason for k in _SECRETS_FAILED):
        return None
    role, failing, arns = _failing_secrets(s, str(task.get("taskDefinitionArn", "")), reason)
    which = (
        "; ".join(f"container {ct}'s secret {name} (valueFrom {v})" for ct, name, v in failing)
        or ", ".join(arns)
        or "a secret the snapshot does not name"
    )
    actions = sorted(
        {"ssm:GetParameters" if ":ssm:" in a else "secretsmanager:GetSecretValue" for a in arns}
    )
    if "ResourceNotFoundException" in reason or "invalid parameters" in reason.lower():
        return (
            f"The task stopped before it started: {which} does not exist where valueFrom "
            "points (another Region or account, a typo, or deleted). Create it, or correct "
            "[service] secrets, and redeploy with `ecs-gpu deploy`."
        )
    kms = "kms:" in reason or "KMS" in reason
    check = (
        f" Check: aws iam simulate-principal-policy --policy-source-arn {role} "
        f"--action-names {' '.join(actions)} --resource-arns {' '.join(arns)}."
        if role.startswith("arn:") and arns and actions
        else ""
    )
    if kms:
        return (
            f"The task stopped before it started: ECS could not decrypt {which} with the task "
            f"execution role {role}: the secret's customer-managed KMS key must let the role use "
            "kms:Decrypt (add it to the key's policy; `ecs-gpu deploy` grants no KMS "
            "permission, and the AWS-managed key needs none)." + check
        )
    return (
        f"The task stopped before it started: ECS could not read {which} with the task "
        f"execution role {role}, which needs {' and '.join(actions) or 'the read permission'} "
        f"on {', '.join(arns) or 'that secret'} (a Secrets Manager secret's ARN as IAM names "
        "it: without a :json-key:stage:id tail). `ecs-gpu deploy` grants it for each of "
        "[service] secrets; a role edited by hand needs the statement back." + check
    )


def _failing_secrets(
    s: Snapshot, td_arn: str, reason: str
) -> tuple[str, list[tuple[str, str, str]], list[str]]:
    """The task definition's execution role, the (container, name, valueFrom) of each
    secret ``reason`` names (every secret when it names none), and their IAM ARNs."""
    td: dict[str, Any] = next(
        (t for t in s.get("task_definitions", []) if t.get("taskDefinitionArn") == td_arn), {}
    )
    role = str(td.get("executionRoleArn") or "the task execution role")
    secrets = [
        (str(ct.get("name")), str(sec.get("name")), str(sec.get("valueFrom", "")))
        for ct in td.get("containerDefinitions", [])
        for sec in ct.get("secrets", []) or []
    ]
    named = {m.rstrip(".") for m in _SECRET_ARN.findall(reason)}
    failing = [
        sec for sec in secrets if sec[2] in reason or _secret_arn(sec[2], td_arn) in named
    ] or secrets
    arns = list(dict.fromkeys([_secret_arn(v, td_arn) for *_, v in failing] or sorted(named)))
    return role, failing, arns


def _task_fix(reason: str) -> str:
    if "CannotPullContainer" in reason:
        return (
            "ECS cannot pull the image: check the image name and tag, the task execution "
            "role's ECR permissions, and the subnets' route to the registry (NAT)."
        )
    if "OutOfMemory" in reason or "OOM" in reason:
        return "The container ran out of memory: raise [service] memory_mib."
    if "nvidia" in reason.lower():
        return (
            "The NVIDIA runtime failed to start the container: check the host with "
            "`ecs-gpu doctor --probe-hosts` (HOST001, HOST008) and the driver on the AMI."
        )
    return "The service's tasks keep stopping: read their logs in the task log group."


@check(
    "SVC002",
    link="service",
    severity="error",
    title="The service's tasks keep failing",
    requires=("tasks", "services"),
    doc="Two or more of the service's recent tasks stopped with TaskFailedToStart or "
    "EssentialContainerExited (warning once the service is back to its desired count).",
)
def _tasks_failing(s: Snapshot, c: Check) -> list[Finding]:
    service = collection_target(s).get("service")
    failed = [
        t
        for t in s["tasks"]
        if t.get("lastStatus") == "STOPPED"
        and t.get("stopCode") in _FAILED_STOPS
        and (service is None or t.get("group") == f"service:{service}")
    ]
    if len(failed) < TASK_FAILURES_MIN:
        return []
    failed.sort(key=lambda t: parse_time(t.get("stoppedAt")) or NEVER, reverse=True)
    newest = failed[0]
    reasons = [
        f"{ct.get('name')}: exit {ct.get('exitCode')} {ct.get('reason', '')}".strip()
        for ct in newest.get("containers", [])
        if ct.get("exitCode") not in (None, 0) or ct.get("reason")
    ]
    why = newest.get("stoppedReason", "")
    tid = short_name(newest.get("taskArn", "?"))
    ev = [Evidence("tasks", tid, "stoppedReason", why)]
    if reasons:
        ev.append(Evidence("tasks", tid, "containers[].exitCode/reason", reasons))
    ev.append(Evidence("tasks", "*", "stopCode (failed, recent)", len(failed)))
    return [
        c.finding(
            ev,
            _secrets_fix(s, newest, " ".join([why, *reasons]))
            or _task_fix(" ".join([why, *reasons])),
            severity="error" if service_short(s) else "warning",
        )
    ]


@check(
    "SVC003",
    link="service",
    severity="error",
    title="The service's strategy is not the spec's Spot split",
    requires=("services",),
    doc="With [capacity.spot]: the service's capacity-provider strategy lacks the Spot "
    "provider, or its On-Demand base or weights differ from the spec's.",
)
def _spot_strategy(s: Snapshot, c: Check) -> list[Finding]:
    target = collection_target(s)
    spot = target.get("spot")
    if not spot:
        return []  # without [capacity.spot] (or without a spec) there is no split to check
    od_cp, spot_cp = target.get("capacity_provider"), spot["capacity_provider"]
    want = {
        od_cp: (spot["on_demand_base"], 100 - spot["spot_percent"]),
        spot_cp: (0, spot["spot_percent"]),
    }
    out = []
    for svc in service_items(s):
        have = {
            st.get("capacityProvider"): (st.get("base", 0), st.get("weight", 0))
            for st in svc.get("capacityProviderStrategy", [])
        }
        if have == want:
            continue
        name = svc.get("serviceName", "?")
        shown = {k: f"base {b}, weight {w}" for k, (b, w) in have.items()} or "none"
        spec = {k: f"base {b}, weight {w}" for k, (b, w) in want.items()}
        if spot_cp not in have:
            why = (
                f"does not name the Spot provider {spot_cp}: every task runs On-Demand, and "
                "the Spot group never launches"
            )
        else:
            why = "splits the tasks otherwise than the spec's on_demand_base and spot_percent"
        cluster = short_name(svc.get("clusterArn", "")) or target.get("cluster") or "<cluster>"
        items = " ".join(
            f"capacityProvider={cp},base={b},weight={w}" for cp, (b, w) in want.items()
        )
        out.append(
            c.finding(
                [Evidence("services", name, "capacityProviderStrategy", shown)],
                f"The service's capacity-provider strategy {why} (the spec deploys {spec}). "
                "If the spec changed since the last deploy, `ecs-gpu deploy` applies it and "
                "replaces every task. If the strategy was changed by hand, a deploy does not "
                "undo it: CloudFormation compares the new template with the last one, not with "
                "the service (aws-semantics §11). Restore it with `aws ecs update-service "
                f"--cluster {cluster} --service {name} --capacity-provider-strategy {items} "
                "--force-new-deployment`, which also replaces every task.",
                severity="error" if spot_cp not in have else "warning",
            )
        )
    return out
