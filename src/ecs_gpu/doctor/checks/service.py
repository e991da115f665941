"""Link 5, service: the service places tasks and they keep running."""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu.doctor.checks.common import (
    NEVER,
    collection_target,
    parse_time,
    service_items,
    service_short,
    short_name,
)
from ecs_gpu.doctor.checks.model import Check, Evidence, Finding
from ecs_gpu.doctor.checks.registry import check
from ecs_gpu.doctor.snapshot import Snapshot

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
    out = []
    if "clusters" in s:
        active = [
            cl.get("clusterName")
            for cl in s["clusters"]
            if cl.get("status", "ACTIVE") == "ACTIVE"
            and (want_cluster is None or cl.get("clusterName") == want_cluster)
        ]
        if not active:
            out.append(
                c.finding(
                    [
                        Evidence(
                            "clusters",
                            want_cluster or "?",
                            "clusterName/status",
                            {cl.get("clusterName"): cl.get("status") for cl in s["clusters"]}
                            or "none",
                        )
                    ],
                    f"The cluster {want_cluster or ''} is not among the ACTIVE clusters "
                    "collected: it was deleted, or the snapshot is of another cluster. Check "
                    "the cluster name (the spec's [service] name, --cluster) and the region, "
                    "or deploy it with `ecs-gpu deploy`.",
                    title="The cluster does not exist",
                )
            )
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
    if named:
        status = named[0].get("status")
        why = (
            f"its status is {status}: "
            + ("it is being deleted" if status == "DRAINING" else "it was deleted")
            + ", so no task of it runs or starts"
        )
    elif s["services"]:
        why = "the snapshot holds only other services"
    else:
        why = "services is empty: DescribeServices found no such service"
    out.append(
        c.finding(
            [Evidence("services", want_svc or "?", "serviceName/status", found or "none")],
            f"The service {want_svc or ''} does not exist in cluster {want_cluster or '?'} "
            f"({why}). Check the service name (the spec's [service] name, --service) and the "
            "region, or deploy it with `ecs-gpu deploy`.",
        )
    )
    return out


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
            _task_fix(" ".join([why, *reasons])),
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
