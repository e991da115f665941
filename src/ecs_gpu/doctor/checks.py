"""Doctor checks: pure functions over a snapshot, one concept each.

Each check has an id, a default severity, a title, the snapshot kinds it
reads and a function returning findings. A finding names its evidence (the
object kind, its id, the field and the value) and the fix. A check whose
kinds are absent from the snapshot reports "unknown", never "ok".

:data:`CHECKS` is ordered the way an expert works down the chain when a GPU
task never starts or the fleet never scales (seeds/001 "When the task never
starts", seeds/000 Act II), so the first broken link prints first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from ecs_gpu import catalog, gpu_metric
from ecs_gpu.aws.facts import COLLECTION_KEY, Snapshot
from ecs_gpu.doctor import host
from ecs_gpu.infra.host import validate_agent_config

Severity = Literal["error", "warning", "info"]
Status = Literal["ok", "finding", "unknown"]
SEVERITY_ORDER: Final = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Evidence:
    kind: str  # snapshot key, e.g. "container_instances"
    id: str  # the object's id or name within that kind
    field: str  # the field path inside the object
    value: Any

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "field": self.field, "value": self.value}


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    title: str
    evidence: tuple[Evidence, ...]
    fix: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity,
            "title": self.title,
            "evidence": [e.as_dict() for e in self.evidence],
            "fix": self.fix,
        }


class Unknown(Exception):
    """Raised by a check that cannot decide from what was collected."""


@dataclass(frozen=True)
class Check:
    id: str
    severity: Severity
    title: str
    requires: tuple[str, ...]
    fn: Callable[[Snapshot, Check], list[Finding]]
    doc: str = ""

    def finding(
        self,
        evidence: Iterable[Evidence],
        fix: str,
        *,
        title: str | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        return Finding(
            self.id, severity or self.severity, title or self.title, tuple(evidence), fix
        )


@dataclass(frozen=True)
class CheckResult:
    check: Check
    status: Status
    findings: tuple[Finding, ...] = ()
    missing: tuple[str, ...] = ()
    reason: str = ""


@dataclass
class Report:
    results: list[CheckResult] = field(default_factory=list)
    missing_permissions: list[dict[str, Any]] = field(default_factory=list)
    collection_errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    @property
    def unknown(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "unknown"]

    @property
    def has_error(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.as_dict() for f in self.findings],
            "unknown": [
                {
                    "id": r.check.id,
                    "title": r.check.title,
                    "missing": list(r.missing),
                    "reason": r.reason,
                }
                for r in self.unknown
            ],
            "ok": [r.check.id for r in self.results if r.status == "ok"],
            "missing_permissions": self.missing_permissions,
            "collection_errors": self.collection_errors,
        }


# --- helpers over raw API shapes ---------------------------------------------------


def _target(s: Snapshot) -> dict[str, Any]:
    meta = s.get(COLLECTION_KEY) or {}
    target: dict[str, Any] = meta.get("target") or {}
    return target


def _short(arn: str) -> str:
    return arn.rsplit("/", 1)[-1] if arn else arn


def _parse_time(value: Any) -> datetime | None:
    """An API timestamp as an aware datetime (naive ones are UTC), or None."""
    when = value if isinstance(value, datetime) else None
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when


# Sorts an object without a timestamp last; aware, so it compares with parsed ones.
_NEVER: Final = datetime.min.replace(tzinfo=UTC)


def _resource_gpus(resources: list[dict[str, Any]]) -> int:
    """GPUs in ECS registered/remainingResources: a STRINGSET of GPU UUIDs."""
    n = 0
    for r in resources:
        if r.get("name") == "GPU":
            if r.get("type") == "STRINGSET":
                n += len(r.get("stringSetValue") or [])
            else:
                n += int(r.get("integerValue") or 0)
    return n


def _attr(ci: dict[str, Any], name: str) -> str | None:
    for a in ci.get("attributes", []):
        if a.get("name") == name:
            value: str | None = a.get("value")
            return value
    return None


def _active_instances(s: Snapshot) -> list[dict[str, Any]]:
    return [ci for ci in s["container_instances"] if ci.get("status") == "ACTIVE"]


def _services(s: Snapshot) -> list[dict[str, Any]]:
    services: list[dict[str, Any]] = s["services"]
    return services


def _task_def(s: Snapshot, arn: str | None) -> dict[str, Any] | None:
    for td in s.get("task_definitions", []):
        if td.get("taskDefinitionArn") == arn:
            found: dict[str, Any] = td
            return found
    return None


def _gpus_per_task(td: dict[str, Any]) -> int:
    total = 0
    for c in td.get("containerDefinitions", []):
        for rr in c.get("resourceRequirements", []):
            if rr.get("type") == "GPU":
                try:
                    total += int(rr.get("value", "0"))
                except ValueError:
                    total += 1  # "ALL" or a fraction: at least one
    return total


def _service_short(s: Snapshot) -> bool:
    """True when some service wants more tasks than run."""
    return any(
        svc.get("pendingCount", 0) > 0 or svc.get("runningCount", 0) < svc.get("desiredCount", 0)
        for svc in _services(s)
    )


def _probes(s: Snapshot) -> dict[str, host.ProbeReport]:
    """Parsed probe output of every instance whose probe ran."""
    out = {}
    for iid, inv in sorted(s["host_probes"].items()):
        if isinstance(inv, dict) and inv.get("Status") == "Success":
            out[iid] = host.parse_probe(inv.get("StandardOutputContent", ""))
    if not out:
        raise Unknown("no host probe succeeded (see HOST000)")
    return out


def _sections(s: Snapshot, name: str) -> dict[str, host.Section]:
    out = {}
    for iid, rep in _probes(s).items():
        sec = rep.section(name)
        if sec is not None and sec.rc is not None:
            out[iid] = sec
    if not out:
        raise Unknown(f"no probe output has the {name!r} section")
    return out


# --- the checks, in chain order -------------------------------------------------------


def _ecs_instances(s: Snapshot, c: Check) -> list[Finding]:
    active = _active_instances(s)
    # A service scaled to zero tasks needs no instance.
    if active or not any(svc.get("desiredCount", 0) > 0 for svc in _services(s)):
        return []
    cluster = _target(s).get("cluster") or "the cluster"
    statuses = sorted({ci.get("status", "?") for ci in s["container_instances"]})
    in_service = [
        i["InstanceId"]
        for g in s.get("auto_scaling_groups", [])
        for i in g.get("Instances", [])
        if i.get("LifecycleState") == "InService"
    ]
    ev = [Evidence("container_instances", cluster, "status", statuses or "none registered")]
    if in_service:
        ev.append(Evidence("auto_scaling_groups", "*", "Instances[].LifecycleState", "InService"))
        fix = (
            f"Instances {', '.join(in_service[:5])} run but never registered: check that "
            f"/etc/ecs/ecs.config has ECS_CLUSTER={cluster}, that the instance role has the "
            "AmazonEC2ContainerServiceforEC2Role permissions, and that the ecs service is "
            "active (ecs-gpu doctor --probe-hosts)."
        )
    else:
        fix = (
            "No instance is running: the capacity provider has not launched one or the launch "
            "failed. Read the Auto Scaling checks below (ASG001 launch failures, CAP001 managed "
            "scaling) and check the ASG's MaxSize."
        )
    return [c.finding(ev, fix)]


def _agent_connected(s: Snapshot, c: Check) -> list[Finding]:
    return [
        c.finding(
            [Evidence("container_instances", ci["ec2InstanceId"], "agentConnected", False)],
            f"The ECS agent on {ci['ec2InstanceId']} is disconnected: ECS places no task there. "
            "Check `systemctl status ecs` and /var/log/ecs/ecs-agent.log on the instance "
            "(ecs-gpu doctor --probe-hosts), or let the ASG replace it.",
        )
        for ci in _active_instances(s)
        if ci.get("agentConnected") is False
    ]


def _meant_for_gpu(s: Snapshot, ci: dict[str, Any]) -> bool:
    """Is this instance one of the GPU fleet's (not another service's CPU host)?"""
    cps = {
        st.get("capacityProvider")
        for svc in s.get("services", [])
        for st in svc.get("capacityProviderStrategy", [])
    } | {_target(s).get("capacity_provider")}
    if ci.get("capacityProviderName") in cps - {None}:
        return True
    return _attr(ci, "ecs.instance-type") in catalog.CATALOG


def _gpus_registered(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for ci in _active_instances(s):
        if _resource_gpus(ci.get("registeredResources", [])) > 0 or not _meant_for_gpu(s, ci):
            continue
        names = [r.get("name") for r in ci.get("registeredResources", [])]
        itype = _attr(ci, "ecs.instance-type")
        out.append(
            c.finding(
                [
                    Evidence(
                        "container_instances",
                        ci["ec2InstanceId"],
                        "registeredResources[].name",
                        names,
                    ),
                    Evidence(
                        "container_instances",
                        ci["ec2InstanceId"],
                        "ecs.ami-id",
                        _attr(ci, "ecs.ami-id"),
                    ),
                ],
                f"{ci['ec2InstanceId']} ({itype or 'unknown type'}) registered no GPU. Either "
                "the AMI is not the ECS GPU-optimized AMI (use the SSM parameter "
                "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id) or "
                "ECS_ENABLE_GPU_SUPPORT=true is missing from /etc/ecs/ecs.config; the two look "
                "the same from ECS. Fix the launch template, then replace the instance.",
            )
        )
    return out


def _td_reserves_gpu(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for svc in _services(s):
        td = _task_def(s, svc.get("taskDefinition"))
        if td is None:
            raise Unknown(f"task definition {svc.get('taskDefinition')} was not collected")
        if _gpus_per_task(td) > 0:
            continue
        out.append(
            c.finding(
                [
                    Evidence(
                        "task_definitions",
                        _short(td["taskDefinitionArn"]),
                        "containerDefinitions[].resourceRequirements",
                        [
                            cd.get("resourceRequirements", [])
                            for cd in td.get("containerDefinitions", [])
                        ],
                    )
                ],
                "No container reserves a GPU, so ECS assigns none and the container runs under "
                'runc with no GPU. Add "resourceRequirements": [{"type": "GPU", "value": "1"}] '
                "to the container ([service] gpus_per_task in the spec) and redeploy.",
            )
        )
    return out


def _gpus_exhausted(s: Snapshot, c: Check) -> list[Finding]:
    active = _active_instances(s)
    if not active or not _service_short(s):
        return []
    need = 1
    for svc in _services(s):
        td = _task_def(s, svc.get("taskDefinition"))
        if td is not None:
            need = max(need, _gpus_per_task(td))
    registered = sum(_resource_gpus(ci.get("registeredResources", [])) for ci in active)
    if registered == 0:
        return []  # GPU001 already says no GPU is registered
    remaining = {
        ci["ec2InstanceId"]: _resource_gpus(ci.get("remainingResources", [])) for ci in active
    }
    if any(v >= need for v in remaining.values()):
        return []
    svc = _services(s)[0]
    return [
        c.finding(
            [
                Evidence("container_instances", "*", "remainingResources[GPU]", remaining),
                Evidence(
                    "services",
                    svc.get("serviceName", "?"),
                    "runningCount/desiredCount",
                    f"{svc.get('runningCount')}/{svc.get('desiredCount')}",
                ),
            ],
            f"All {registered} registered GPUs are reserved and a task needs {need}: ECS pins "
            "whole GPUs, so no free CPU or memory helps. The capacity provider should add an "
            "instance; if it does not, read CAP001/ASG001 below, or raise [capacity] "
            "max_instances.",
        )
    ]


_TYPE_EXPR = re.compile(
    r"attribute:ecs\.instance-type\s*(==|=~|in)\s*(\[[^\]]*\]|\(?[\w.*\-]+\)?)", re.IGNORECASE
)


def _placement_types(expr: str) -> tuple[str, list[str]] | None:
    m = _TYPE_EXPR.search(expr)
    if not m:
        return None
    op, raw = m.group(1).lower(), m.group(2)
    values = [v.strip().strip("'\"") for v in raw.strip("[]()").split(",") if v.strip()]
    return op, values


def _type_matches(op: str, value: str, itype: str) -> bool:
    if op == "=~":
        return re.fullmatch(value.replace(".", r"\.").replace("*", ".*"), itype) is not None
    return value == itype


def _placement_constraint(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    registered = sorted(
        {t for ci in s.get("container_instances", []) if (t := _attr(ci, "ecs.instance-type"))}
    )
    for svc in _services(s):
        # (kind, id, index within that object's own list, constraint)
        constraints = [
            ("services", svc.get("serviceName", "?"), i, p)
            for i, p in enumerate(svc.get("placementConstraints", []))
        ]
        td = _task_def(s, svc.get("taskDefinition"))
        if td is not None:
            constraints += [
                ("task_definitions", _short(td["taskDefinitionArn"]), i, p)
                for i, p in enumerate(td.get("placementConstraints", []))
            ]
        for kind, oid, i, p in constraints:
            if p.get("type") != "memberOf":
                continue
            parsed = _placement_types(p.get("expression", ""))
            if parsed is None:
                continue
            op, values = parsed
            ev = Evidence(kind, oid, f"placementConstraints[{i}].expression", p.get("expression"))
            if op != "=~":
                for v in values:
                    try:
                        catalog.lookup(v)
                    except ValueError as e:
                        out.append(
                            c.finding(
                                [ev],
                                f"{v!r} is not a GPU instance type ECS can use ({e}). A task "
                                "with this constraint stays PENDING with no GPU-specific error. "
                                "Fix the expression to the spec's [capacity] instance_type.",
                            )
                        )
            if registered and not any(_type_matches(op, v, t) for v in values for t in registered):
                out.append(
                    c.finding(
                        [ev, Evidence("container_instances", "*", "ecs.instance-type", registered)],
                        f"The constraint matches none of the registered instance types "
                        f"({', '.join(registered)}): no task can ever be placed. Make the "
                        "constraint and the launch template's InstanceType agree.",
                    )
                )
    return out


def _cp_managed_scaling(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    asgs = {
        g["AutoScalingGroupARN"]: g
        for g in s.get("auto_scaling_groups", [])
        if "AutoScalingGroupARN" in g
    }
    for cp in s["capacity_providers"]:
        prov = cp.get("autoScalingGroupProvider")
        if not prov:
            continue
        name = cp.get("name", "?")
        ms = prov.get("managedScaling", {})
        if ms.get("status") != "ENABLED":
            out.append(
                c.finding(
                    [
                        Evidence(
                            "capacity_providers",
                            name,
                            "autoScalingGroupProvider.managedScaling.status",
                            ms.get("status"),
                        )
                    ],
                    "Managed scaling is off: nothing adds an instance when GPU tasks cannot be "
                    f"placed. Enable it: aws ecs update-capacity-provider --name {name} "
                    "--auto-scaling-group-provider "
                    "'managedScaling={status=ENABLED,targetCapacity=100}'.",
                )
            )
        asg = asgs.get(prov.get("autoScalingGroupArn", ""))
        if (
            prov.get("managedTerminationProtection") == "ENABLED"
            and asg is not None
            and not asg.get("NewInstancesProtectedFromScaleIn", False)
        ):
            out.append(
                c.finding(
                    [
                        Evidence(
                            "capacity_providers",
                            name,
                            "autoScalingGroupProvider.managedTerminationProtection",
                            "ENABLED",
                        ),
                        Evidence(
                            "auto_scaling_groups",
                            asg["AutoScalingGroupName"],
                            "NewInstancesProtectedFromScaleIn",
                            False,
                        ),
                    ],
                    "Managed termination protection needs the ASG to protect new instances from "
                    "scale-in; without it the ASG can terminate an instance running GPU tasks. "
                    "Set NewInstancesProtectedFromScaleIn on the ASG.",
                    severity="warning",
                )
            )
    return out


def _asg_at_max(s: Snapshot, c: Check) -> list[Finding]:
    if not _service_short(s):
        return []
    return [
        c.finding(
            [
                Evidence(
                    "auto_scaling_groups",
                    g["AutoScalingGroupName"],
                    "DesiredCapacity/MaxSize",
                    f"{g['DesiredCapacity']}/{g['MaxSize']}",
                ),
            ],
            f"The ASG is at MaxSize {g['MaxSize']} while the service still waits for tasks: the "
            "capacity provider cannot add an instance. Raise [capacity] max_instances (ASG "
            "MaxSize) or lower [scaling] max_tasks to what the fleet holds.",
        )
        for g in s["auto_scaling_groups"]
        if g.get("DesiredCapacity", 0) >= g.get("MaxSize", 0)
    ]


_STOCKOUT = ("InsufficientInstanceCapacity", "insufficient capacity")
_QUOTA = ("VcpuLimitExceeded", "InstanceLimitExceeded")
_RESERVATION_FULL = ("ReservationCapacityExceeded",)


def _asg_launch_failed(s: Snapshot, c: Check) -> list[Finding]:
    by_asg: dict[str, list[dict[str, Any]]] = {}
    for a in s["scaling_activities"]:
        by_asg.setdefault(a.get("AutoScalingGroupName", "?"), []).append(a)
    out = []
    for asg, acts in sorted(by_asg.items()):
        acts.sort(key=lambda a: _parse_time(a.get("StartTime")) or _NEVER, reverse=True)
        latest = acts[0]
        if latest.get("StatusCode") not in ("Failed", "Cancelled"):
            continue
        msg = latest.get("StatusMessage", "") or latest.get("Description", "")
        if any(k in msg for k in _STOCKOUT):
            fix = (
                "AWS has no capacity of this GPU type in the AZ (stock-out). Add private subnets "
                "in more Availability Zones to [network] subnet_ids, use a capacity reservation "
                "([capacity] capacity_reservation_id), or choose another GPU type; the ASG keeps "
                "retrying on its own."
            )
        elif any(k in msg for k in _RESERVATION_FULL):
            fix = (
                "The launch targeted a Capacity Reservation that is full. Target it from the "
                f"group with {_ODCR_FIRST} (redeploy with `ecs-gpu deploy`; see ASG004), so "
                "launches beyond the reservation run On-Demand."
            )
        elif any(k in msg for k in _QUOTA):
            fix = (
                "The account's On-Demand vCPU quota for this family is exhausted. Request an "
                "increase of 'Running On-Demand G and VT instances' (or P instances) in Service "
                "Quotas, or lower [capacity] max_instances."
            )
        else:
            fix = (
                "Read StatusMessage, fix the launch template or IAM it names, and let the ASG "
                "retry."
            )
        out.append(
            c.finding(
                [
                    Evidence(
                        "scaling_activities", latest.get("ActivityId", asg), "StatusMessage", msg
                    )
                ],
                fix,
            )
        )
    return out


_UNABLE = "unable to place a task"
_STEADY = "has reached a steady state"


def _service_events(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for svc in _services(s):
        events = sorted(
            svc.get("events", []),
            key=lambda e: _parse_time(e.get("createdAt")) or _NEVER,
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
                            "(GPU001), GPUs all reserved (GPU003), placement constraint (PLC001), "
                            "then the ASG (CAP001, ASG001)."
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


def _tasks_failing(s: Snapshot, c: Check) -> list[Finding]:
    service = _target(s).get("service")
    failed = [
        t
        for t in s["tasks"]
        if t.get("lastStatus") == "STOPPED"
        and t.get("stopCode") in _FAILED_STOPS
        and (service is None or t.get("group") == f"service:{service}")
    ]
    if len(failed) < TASK_FAILURES_MIN:
        return []
    failed.sort(key=lambda t: _parse_time(t.get("stoppedAt")) or _NEVER, reverse=True)
    newest = failed[0]
    reasons = [
        f"{ct.get('name')}: exit {ct.get('exitCode')} {ct.get('reason', '')}".strip()
        for ct in newest.get("containers", [])
        if ct.get("exitCode") not in (None, 0) or ct.get("reason")
    ]
    why = newest.get("stoppedReason", "")
    tid = _short(newest.get("taskArn", "?"))
    ev = [Evidence("tasks", tid, "stoppedReason", why)]
    if reasons:
        ev.append(Evidence("tasks", tid, "containers[].exitCode/reason", reasons))
    ev.append(Evidence("tasks", "*", "stopCode (failed, recent)", len(failed)))
    return [
        c.finding(
            ev,
            _task_fix(" ".join([why, *reasons])),
            severity="error" if _service_short(s) else "warning",
        )
    ]


def _series(s: Snapshot) -> dict[str, dict[str, Any]]:
    return {r.get("Label", r.get("Id")): r for r in s["metric_data"]}


def _metric_published(s: Snapshot, c: Check) -> list[Finding]:
    series = _series(s)
    empty = [n for n in gpu_metric.METRIC_NAMES if not series.get(n, {}).get("Values")]
    if not empty:
        return []
    asg = _target(s).get("asg") or "?"
    window = (s.get(COLLECTION_KEY) or {}).get("metric_window", {})
    return [
        c.finding(
            [
                Evidence("metric_data", n, "Values", series.get(n, {}).get("Values", "no series"))
                for n in empty
            ]
            + [Evidence("_collection", "metric_window", "start/end", window)],
            f"No datapoint of {gpu_metric.NAMESPACE} {', '.join(empty)} "
            f"({gpu_metric.DIMENSION}={asg}) in the window: the scaling policy tracks a series "
            "nobody writes. Run `ecs-gpu doctor --probe-hosts` to see the host agent: is "
            "amazon-cloudwatch-agent active, does its config collect nvidia_gpu, can it run "
            "nvidia-smi, and is cloudwatch:PutMetricData allowed on the instance role.",
        )
    ]


def _reads_reservation(p: dict[str, Any]) -> bool:
    return any(
        (m.get("Namespace"), m.get("MetricName"))
        == (gpu_metric.RESERVATION_NAMESPACE, gpu_metric.RESERVATION_METRIC)
        for _, m in _policy_metrics(p)
    )


def _tracked_signal_empty(s: Snapshot, c: Check) -> list[Finding]:
    policies = [p for p in s["scaling_policies"] if _reads_reservation(p)]
    if not policies:
        # asg-average: the policy tracks the agent's series itself (MET001).
        return []
    series = _series(s)
    util = series.get(gpu_metric.UTILIZATION, {}).get("Values")
    if not util:
        # Nothing is written at all: MET001 reports that, first in the chain.
        return []
    if gpu_metric.RESERVATION_METRIC not in series:
        raise Unknown(
            f"metric_data has no {gpu_metric.RESERVATION_METRIC} series (a snapshot from an "
            "ecs-gpu that did not collect it); collect it again"
        )
    if series[gpu_metric.RESERVATION_METRIC].get("Values"):
        return []
    target = _target(s)
    cluster = target.get("cluster") or "?"
    svc = next(iter(_services(s)), {})
    running, desired = svc.get("runningCount"), svc.get("desiredCount")
    only_running = (
        "ECS publishes its metrics only for a cluster with a RUNNING task (ECS developer "
        "guide, 'Amazon ECS CloudWatch metrics')"
    )
    if running == 0 and desired:
        why = (
            f"the service wants {desired} task(s) but runs none, and {only_running}. Fix why "
            "its tasks do not start first (the checks above: GPU003, SVC001, TSK001)."
        )
    elif running == 0:
        why = (
            f"the service runs no task, and {only_running}. Keep a task running ([scaling] "
            "min_tasks >= 1 and the service's desired count above 0), or track the agent's "
            'series alone ([scaling] gpu_metric = "asg-average"), and redeploy.'
        )
    else:
        why = (
            "tasks run, yet ECS wrote no GPU reservation for the cluster in the window. If "
            "they reached RUNNING only minutes ago, run doctor again; otherwise look up "
            f"{gpu_metric.RESERVATION_NAMESPACE} {gpu_metric.RESERVATION_METRIC} "
            f"{gpu_metric.RESERVATION_DIMENSION}={cluster} in the CloudWatch console."
        )
    window = (s.get(COLLECTION_KEY) or {}).get("metric_window", {})
    return [
        c.finding(
            [
                Evidence(
                    "metric_data",
                    gpu_metric.RESERVATION_METRIC,
                    "Values",
                    series[gpu_metric.RESERVATION_METRIC].get("Values", []),
                ),
                Evidence("metric_data", gpu_metric.UTILIZATION, "Values", util[:3]),
                Evidence(
                    "scaling_policies",
                    policies[0].get("PolicyName", "?"),
                    "TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification"
                    ".Metrics",
                    f"divides by {gpu_metric.RESERVATION_NAMESPACE}/"
                    f"{gpu_metric.RESERVATION_METRIC}",
                ),
                Evidence("services", target.get("service") or "?", "runningCount", running),
                Evidence("_collection", "metric_window", "start/end", window),
            ],
            f"The host agent writes {gpu_metric.UTILIZATION}, but the policy's task-gpus "
            f"expression divides it by {gpu_metric.RESERVATION_METRIC} of cluster {cluster}, "
            "which has no datapoint: the expression has none either, so target tracking is "
            f"blind (its alarms go INSUFFICIENT_DATA). Cause: {why}",
            severity="error" if desired else "warning",
        )
    ]


def _is_gpu_alarm(a: dict[str, Any]) -> bool:
    if (
        a.get("Namespace") == gpu_metric.NAMESPACE
        and a.get("MetricName") in gpu_metric.METRIC_NAMES
    ):
        return True
    for q in a.get("Metrics", []):
        m = q.get("MetricStat", {}).get("Metric", {})
        if (
            m.get("Namespace") == gpu_metric.NAMESPACE
            and m.get("MetricName") in gpu_metric.METRIC_NAMES
        ):
            return True
    return False


def _alarms_insufficient(s: Snapshot, c: Check) -> list[Finding]:
    missing_alarm = _target(s).get("missing_metric_alarm")
    return [
        c.finding(
            [
                Evidence("alarms", a["AlarmName"], "StateValue", a["StateValue"]),
                Evidence("alarms", a["AlarmName"], "StateReason", a.get("StateReason")),
            ],
            "Target tracking does nothing while its alarm has no data: the GPU series is not "
            "arriving, or (task-gpus) ECS's GPUReservation divisor is not. Fix the metric "
            "first (MET001, MET004 and the HOST checks).",
        )
        for a in s["alarms"]
        if _is_gpu_alarm(a)
        and a.get("AlarmName") != missing_alarm
        and a.get("StateValue") == "INSUFFICIENT_DATA"
    ]


def _missing_metric_alarm(s: Snapshot, c: Check) -> list[Finding]:
    name = _target(s).get("missing_metric_alarm")
    if not name:
        raise Unknown("the snapshot does not name the missing-metric alarm")
    found = [a for a in s["alarms"] if a.get("AlarmName") == name]
    if not found:
        return [
            c.finding(
                [Evidence("alarms", name, "AlarmName", None)],
                f"The alarm {name} that fires when the GPU metric stops does not exist, so a "
                "dead metric goes unnoticed. Redeploy with `ecs-gpu deploy`.",
                title="GPU missing-metric alarm does not exist",
                severity="warning",
            )
        ]
    a = found[0]
    if a.get("StateValue") != "ALARM":
        return []
    evidence = [
        Evidence("alarms", name, "StateValue", "ALARM"),
        Evidence("alarms", name, "StateReason", a.get("StateReason")),
    ]
    fix = (
        "The GPU metric stopped arriving. Run `ecs-gpu doctor --probe-hosts` and fix what "
        "the HOST checks report (agent down, nvidia-smi missing, PutMetricData denied)."
    )
    if not a.get("AlarmActions"):
        # A firing alarm nobody hears is how the reference's 8.3.0 went unnoticed.
        evidence.append(Evidence("alarms", name, "AlarmActions", a.get("AlarmActions", [])))
        fix += (
            " Nobody was told: the alarm has no actions. Add an [alerts] section "
            "(sns_topic_arn or email, docs/spec.md) to the spec and redeploy."
        )
    return [c.finding(evidence, fix)]


def _policy_metrics(p: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(field path, metric) for every metric a target-tracking policy reads.

    Both forms of CustomizedMetricSpecification: the plain one (MetricName,
    Namespace, Dimensions) and metric math (Metrics[].MetricStat.Metric), the
    form ``gpu_metric = "task-gpus"`` deploys.
    """
    cfg = p.get("TargetTrackingScalingPolicyConfiguration", {})
    cms = cfg.get("CustomizedMetricSpecification")
    base = "TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification"
    if not cms:
        return []
    if "MetricName" in cms:
        return [(base, cms)]
    return [
        (f"{base}.Metrics[{i}].MetricStat.Metric", q["MetricStat"].get("Metric", {}))
        for i, q in enumerate(cms.get("Metrics", []))
        if isinstance(q.get("MetricStat"), dict)
    ]


def _gpu_policy(s: Snapshot, c: Check) -> list[Finding]:
    target = _target(s)
    asg = target.get("asg")
    asgs = [
        g["AutoScalingGroupName"]
        for g in s.get("auto_scaling_groups", [])
        if g.get("AutoScalingGroupName")
    ] or ([asg] if asg else [])
    cluster = target.get("cluster")
    clusters = [cl["clusterName"] for cl in s.get("clusters", []) if cl.get("clusterName")] or (
        [cluster] if cluster else []
    )
    out = []
    tracks_contract = False
    for p in s["scaling_policies"]:
        for path, m in _policy_metrics(p):
            name = m.get("MetricName", "")
            dims = {d.get("Name"): d.get("Value") for d in m.get("Dimensions", [])}
            evidence = [Evidence("scaling_policies", p.get("PolicyName", "?"), path, m)]
            if (m.get("Namespace"), name) == (
                gpu_metric.RESERVATION_NAMESPACE,
                gpu_metric.RESERVATION_METRIC,
            ):
                # The task-gpus divisor: ECS writes it per cluster, by ClusterName only.
                if set(dims) == {gpu_metric.RESERVATION_DIMENSION} and (
                    not clusters or dims.get(gpu_metric.RESERVATION_DIMENSION) in clusters
                ):
                    continue
                out.append(
                    c.finding(
                        evidence,
                        f"The policy divides by {gpu_metric.RESERVATION_NAMESPACE}/{name} "
                        f"{dims}, but ECS writes it for this service's cluster only as "
                        f"{gpu_metric.RESERVATION_DIMENSION}="
                        f"{clusters[0] if clusters else '<cluster>'}: the tracked expression "
                        "reads a series nobody writes. Redeploy the policy from the spec "
                        "(`ecs-gpu deploy`).",
                    )
                )
                continue
            gpuish = name.startswith(gpu_metric.METRIC_PREFIX) or "gpu" in name.lower()
            if not gpuish:
                continue
            ok = (
                name == gpu_metric.UTILIZATION
                and m.get("Namespace") == gpu_metric.NAMESPACE
                and set(dims) == {gpu_metric.DIMENSION}
                and (not asgs or dims.get(gpu_metric.DIMENSION) in asgs)
            )
            if ok:
                tracks_contract = True
                continue
            out.append(
                c.finding(
                    evidence,
                    f"The policy tracks {m.get('Namespace')}/{name} {dims}, but the host agent "
                    f"writes {gpu_metric.NAMESPACE}/{gpu_metric.UTILIZATION} with only "
                    f"{gpu_metric.DIMENSION}={asgs[0] if asgs else '<asg>'}: the policy follows a "
                    "series nobody writes. Redeploy the policy from the spec (`ecs-gpu deploy`).",
                )
            )
    if not tracks_contract and not out:
        out.append(
            c.finding(
                [
                    Evidence(
                        "scaling_policies",
                        target.get("service") or "?",
                        "PolicyName",
                        [p.get("PolicyName") for p in s["scaling_policies"]],
                    )
                ],
                "No target-tracking policy scales the service on GPU utilization: tasks follow "
                "CPU only. Deploy the spec's scaling policies (`ecs-gpu deploy`).",
                title="No GPU target-tracking policy on the service",
                severity="warning",
            )
        )
    return out


def _scaling_active(s: Snapshot, c: Check) -> list[Finding]:
    svc = _target(s).get("service") or "?"
    if not s["scalable_targets"]:
        return [
            c.finding(
                [Evidence("scalable_targets", svc, "ResourceId", "none registered")],
                "The service is not a scalable target, so no policy can change its task count. "
                "Register it (`ecs-gpu deploy` does).",
            )
        ]
    out = []
    for t in s["scalable_targets"]:
        susp = t.get("SuspendedState", {})
        on = [k for k in ("DynamicScalingInSuspended", "DynamicScalingOutSuspended") if susp.get(k)]
        if on:
            out.append(
                c.finding(
                    [Evidence("scalable_targets", t["ResourceId"], "SuspendedState", susp)],
                    f"Scaling is suspended ({', '.join(on)}). Resume it: aws "
                    "application-autoscaling register-scalable-target --service-namespace ecs "
                    "--scalable-dimension "
                    f"ecs:service:DesiredCount --resource-id {t['ResourceId']} --suspended-state "
                    "DynamicScalingInSuspended=false,DynamicScalingOutSuspended=false",
                )
            )
    return out


def _service_scaling_failed(s: Snapshot, c: Check) -> list[Finding]:
    acts = sorted(
        s["service_scaling_activities"],
        key=lambda a: _parse_time(a.get("StartTime")) or _NEVER,
        reverse=True,
    )
    if not acts or acts[0].get("StatusCode") not in ("Failed",):
        return []
    a = acts[0]
    return [
        c.finding(
            [
                Evidence(
                    "service_scaling_activities",
                    a.get("ActivityId", "?"),
                    "StatusMessage",
                    a.get("StatusMessage"),
                )
            ],
            "Application Auto Scaling could not change the task count: fix what StatusMessage "
            "names (usually IAM of the scaling role or a deleted service).",
        )
    ]


def _host_cpu_policy(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for p in s["asg_policies"]:
        name = p.get("PolicyName", "?")
        # The capacity provider's own policy is ECSManagedAutoScalingPolicy-<uuid>.
        if name.startswith("ECSManaged"):
            continue
        pmt = (
            p.get("TargetTrackingConfiguration", {})
            .get("PredefinedMetricSpecification", {})
            .get("PredefinedMetricType")
        )
        cpu = pmt == "ASGAverageCPUUtilization"
        out.append(
            c.finding(
                [
                    Evidence(
                        "asg_policies",
                        name,
                        "TargetTrackingConfiguration.PredefinedMetricSpecification.PredefinedMetricType"
                        if cpu
                        else "PolicyType",
                        pmt if cpu else p.get("PolicyType"),
                    )
                ],
                f"Delete it (aws autoscaling delete-policy --auto-scaling-group-name "
                f"{p.get('AutoScalingGroupName')} --policy-name {name}): the capacity provider "
                "already sizes the GPU ASG from task placement. "
                + (
                    "A host-CPU policy fights it, and a new GPU instance cannot lower the CPU "
                    "of tasks that stay where they are."
                    if cpu
                    else "A second controller on the same ASG makes them fight."
                ),
                title="A host-CPU policy fights the capacity provider" if cpu else None,
                severity="error" if cpu else "warning",
            )
        )
    return out


def _lt_versions(s: Snapshot) -> list[dict[str, Any]]:
    """Launch template versions that say which template and version they are."""
    return [
        v
        for v in s["launch_template_versions"]
        if v.get("LaunchTemplateId") and isinstance(v.get("VersionNumber"), int)
    ]


def _lt_target_versions(s: Snapshot) -> dict[str, dict[str, int]]:
    """Per launch template id: $Latest and $Default version numbers."""
    out: dict[str, dict[str, int]] = {}
    for v in _lt_versions(s):
        d = out.setdefault(v["LaunchTemplateId"], {"$Latest": 0})
        d["$Latest"] = max(d["$Latest"], int(v["VersionNumber"]))
        if v.get("DefaultVersion"):
            d["$Default"] = int(v["VersionNumber"])
    return out


def _old_launch_template(s: Snapshot, c: Check) -> list[Finding]:
    resolved = _lt_target_versions(s)
    images = {
        (v["LaunchTemplateId"], int(v["VersionNumber"])): v.get("LaunchTemplateData", {}).get(
            "ImageId"
        )
        for v in _lt_versions(s)
    }
    out = []
    for g in s["auto_scaling_groups"]:
        spec = g.get("LaunchTemplate") or g.get("MixedInstancesPolicy", {}).get(
            "LaunchTemplate", {}
        ).get("LaunchTemplateSpecification")
        if not spec or spec.get("LaunchTemplateId") not in resolved:
            continue
        lt = spec["LaunchTemplateId"]
        want_raw = str(spec.get("Version", "$Default"))
        want = resolved[lt].get(want_raw) if want_raw.startswith("$") else int(want_raw)
        if want is None:
            continue
        stale = [
            (i["InstanceId"], int(i["LaunchTemplate"]["Version"]))
            for i in g.get("Instances", [])
            if i.get("LaunchTemplate", {}).get("Version", "").isdigit()
            and int(i["LaunchTemplate"]["Version"]) != want
        ]
        if not stale:
            continue
        old_images = sorted({str(images.get((lt, v))) for _, v in stale})
        out.append(
            c.finding(
                [
                    Evidence(
                        "auto_scaling_groups",
                        g["AutoScalingGroupName"],
                        "Instances[].LaunchTemplate.Version",
                        {iid: v for iid, v in stale},
                    ),
                    Evidence("launch_template_versions", lt, f"{want_raw} VersionNumber", want),
                    Evidence(
                        "launch_template_versions",
                        lt,
                        "LaunchTemplateData.ImageId (old -> new)",
                        f"{', '.join(old_images)} -> {images.get((lt, want))}",
                    ),
                ],
                "These instances still run an older launch template (older AMI and NVIDIA driver) "
                "and keep it until replaced. Start an instance refresh: aws autoscaling "
                f"start-instance-refresh --auto-scaling-group-name {g['AutoScalingGroupName']} "
                '--preferences \'{"SkipMatching": true, "InstanceWarmup": 300}\'.',
            )
        )
    return out


def _launched_lt_data(s: Snapshot, g: dict[str, Any]) -> tuple[str, int, dict[str, Any]] | None:
    """(launch template id, version, LaunchTemplateData) the group launches new instances from."""
    spec = g.get("LaunchTemplate") or g.get("MixedInstancesPolicy", {}).get(
        "LaunchTemplate", {}
    ).get("LaunchTemplateSpecification")
    resolved = _lt_target_versions(s)
    if not spec or spec.get("LaunchTemplateId") not in resolved:
        return None
    lt = spec["LaunchTemplateId"]
    raw = str(spec.get("Version", "$Default"))
    want = resolved[lt].get(raw) if raw.startswith("$") else int(raw) if raw.isdigit() else None
    for v in _lt_versions(s):
        if v["LaunchTemplateId"] == lt and int(v["VersionNumber"]) == want:
            return lt, want, v.get("LaunchTemplateData", {})
    return None


# The group preference that fills a reservation, then overflows to On-Demand.
_ODCR_FIRST = "capacity-reservations-first"


def _odcr_blocks_growth(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for g in s["auto_scaling_groups"]:
        name = g.get("AutoScalingGroupName", "?")
        crs = g.get("CapacityReservationSpecification") or {}
        pref = crs.get("CapacityReservationPreference")
        fix_cli = (
            "Redeploy with `ecs-gpu deploy`: the group then targets the reservation with "
            f"{_ODCR_FIRST}, which fills it and launches On-Demand beyond it. By hand: aws "
            f"autoscaling update-auto-scaling-group --auto-scaling-group-name {name} "
            f'--capacity-reservation-specification \'{{"CapacityReservationPreference": '
            f'"{_ODCR_FIRST}", "CapacityReservationTarget": {{"CapacityReservationIds": '
            "[\"cr-...\"]}}' (and drop the launch template's own reservation target)."
        )
        if pref == "capacity-reservations-only":
            out.append(
                c.finding(
                    [
                        Evidence(
                            "auto_scaling_groups",
                            name,
                            "CapacityReservationSpecification.CapacityReservationPreference",
                            pref,
                        )
                    ],
                    "The group launches only into its Capacity Reservation: once the reservation "
                    "is full, every scale-out fails. " + fix_cli,
                )
            )
            continue
        if pref not in (None, "default"):
            continue  # first or none: the group decides, and On-Demand is allowed
        launched = _launched_lt_data(s, g)
        if launched is None:
            continue
        lt, version, data = launched
        target = (data.get("CapacityReservationSpecification") or {}).get(
            "CapacityReservationTarget"
        ) or {}
        if not target:
            continue
        out.append(
            c.finding(
                [
                    Evidence(
                        "launch_template_versions",
                        f"{lt} v{version}",
                        "LaunchTemplateData.CapacityReservationSpecification."
                        "CapacityReservationTarget",
                        target,
                    ),
                    Evidence(
                        "auto_scaling_groups",
                        name,
                        "CapacityReservationSpecification.CapacityReservationPreference",
                        pref,
                    ),
                ],
                "The launch template targets a Capacity Reservation, and EC2 fails a launch that "
                "targets a full reservation (ReservationCapacityExceeded): the fleet cannot grow "
                "past the reservation. " + fix_cli,
            )
        )
    return out


def _probe_ran(s: Snapshot, c: Check) -> list[Finding]:
    return [
        c.finding(
            [
                Evidence(
                    "host_probes",
                    iid,
                    "Status",
                    inv.get("Status") if isinstance(inv, dict) else inv,
                )
            ],
            "The SSM probe did not run on this instance: the SSM agent must be running and the "
            "instance role needs AmazonSSMManagedInstanceCore; you need ssm:SendCommand and "
            "ssm:GetCommandInvocation.",
        )
        for iid, inv in sorted(s["host_probes"].items())
        if not isinstance(inv, dict) or inv.get("Status") != "Success"
    ]


def _nvidia_smi_host(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in _sections(s, "nvidia_smi").items():
        problem = None
        if sec.rc != 0:
            problem = sec.text.strip().splitlines()[-1] if sec.text.strip() else f"rc={sec.rc}"
        else:
            try:
                smi = host.parse_nvidia_smi_xml(host.decode_nvidia_smi_section(sec.text))
            except host.ProbeParseError as e:
                problem = str(e)
            else:
                if not smi.gpus:
                    problem = "nvidia-smi lists no GPU"
        if problem:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, "nvidia_smi", problem)],
                    "nvidia-smi does not work on the host, so neither ECS nor the agent can see "
                    "a GPU: use the ECS GPU-optimized AMI on a GPU instance type, and check "
                    "`journalctl -u nvidia-kmod-load` / dmesg for a driver that failed to load.",
                )
            )
    return out


def _agent_nvidia_stat(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in _sections(s, "agent_log").items():
        lines = host.log_lines_matching(sec.text, host.NVIDIA_SMI_STAT_ERROR, "nvidia-smi")
        if lines:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, "agent_log", lines[-1])],
                    "The CloudWatch agent cannot find nvidia-smi, so it exits and no GPU metric "
                    "is written. A containerized agent never gets the GPU on AL2023 (runc is "
                    "the default runtime and GPU injection follows ECS's GPU assignment): run "
                    "the agent on the host as the systemd service amazon-cloudwatch-agent, "
                    f"configured from {gpu_metric.AGENT_CONFIG_PATH}.",
                )
            )
    return out


def _restart_loop(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in _sections(s, "containers").items():
        for loop in host.restart_loops(sec.text):
            out.append(
                c.finding(
                    [
                        Evidence(
                            "host_probes",
                            iid,
                            f"containers[{loop.name}]",
                            f"{loop.exits} exits, e.g. {loop.example}",
                        )
                    ],
                    f"Container {loop.name} keeps dying. Read its last log "
                    f"(docker logs $(docker ps -aq --filter name={loop.name} | head -1)); a "
                    "CloudWatch agent container that exits 1 usually cannot see nvidia-smi "
                    "(HOST002).",
                )
            )
    return out


def _putmetricdata_denied(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in _sections(s, "agent_log").items():
        lines = [
            line
            for line in sec.text.splitlines()
            if "AccessDenied" in line or "not authorized" in line
        ]
        joined = "\n".join(sec.text.splitlines())
        if lines and "PutMetricData" in joined:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, "agent_log", lines[-1].strip())],
                    "The instance role may not call cloudwatch:PutMetricData, so the GPU metric "
                    "is read and then dropped. Add to the instance role: Allow "
                    "cloudwatch:PutMetricData on * with Condition StringEquals "
                    f'{{"cloudwatch:namespace": "{gpu_metric.NAMESPACE}"}}.',
                )
            )
    return out


def _service_active(
    section: str, unit: str, fix: str
) -> Callable[[Snapshot, Check], list[Finding]]:
    def run(s: Snapshot, c: Check) -> list[Finding]:
        out = []
        for iid, sec in _sections(s, section).items():
            state = host.parse_is_active(sec.text)
            if state != "active":
                out.append(
                    c.finding(
                        [Evidence("host_probes", iid, f"systemctl is-active {unit}", state)], fix
                    )
                )
        return out

    return run


def _agent_config(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in _sections(s, "agent_config").items():
        problems: list[str] = []
        if sec.rc != 0:
            problems.append(sec.text.strip() or f"cannot read {gpu_metric.AGENT_CONFIG_PATH}")
        else:
            try:
                cfg = host.parse_agent_config(sec.text)
            except host.ProbeParseError as e:
                problems.append(str(e))
            else:
                metrics = cfg.get("metrics", {})
                gpu = metrics.get("metrics_collected", {}).get("nvidia_gpu")
                if not isinstance(gpu, dict):
                    problems.append("metrics.metrics_collected.nvidia_gpu is absent")
                else:
                    have = {
                        m.get("name") if isinstance(m, dict) else m
                        for m in gpu.get("measurement", [])
                    }
                    lacking = [m for m in gpu_metric.MEASUREMENTS if m not in have]
                    if lacking:
                        problems.append(f"nvidia_gpu.measurement lacks {', '.join(lacking)}")
                ns = metrics.get("namespace", gpu_metric.NAMESPACE)
                if ns != gpu_metric.NAMESPACE:
                    problems.append(f"metrics.namespace is {ns!r}, not {gpu_metric.NAMESPACE!r}")
                if gpu_metric.DIMENSION not in metrics.get("append_dimensions", {}):
                    problems.append(f"metrics.append_dimensions lacks {gpu_metric.DIMENSION}")
                if [gpu_metric.DIMENSION] not in metrics.get("aggregation_dimensions", []):
                    problems.append(
                        f"metrics.aggregation_dimensions lacks [{gpu_metric.DIMENSION!r}]"
                    )
                # The agent's own schema, as the generator validates it (infra/host.py).
                problems += validate_agent_config(cfg, source=gpu_metric.AGENT_CONFIG_PATH)
        for p in problems:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, gpu_metric.AGENT_CONFIG_PATH, p)],
                    "The host agent's config does not produce the series the scaling policy "
                    f"tracks. Write the config ecs-gpu generates to {gpu_metric.AGENT_CONFIG_PATH} "
                    "(replace the instance from the current launch template) and run "
                    "amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s -c "
                    f"file:{gpu_metric.AGENT_CONFIG_PATH}.",
                )
            )
    return out


def _nvidia_runtime(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in _sections(s, "docker_info").items():
        rt = host.parse_docker_info(sec.text)
        if "nvidia" not in rt.runtimes:
            out.append(
                c.finding(
                    [
                        Evidence(
                            "host_probes",
                            iid,
                            "docker info Runtimes",
                            list(rt.runtimes) or sec.text.strip(),
                        )
                    ],
                    "Docker has no nvidia runtime, so ECS cannot start a GPU container here: "
                    "use the ECS GPU-optimized AMI (it ships nvidia-container-toolkit).",
                )
            )
    return out


_NVIDIA_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")


def _nvidia_env_inert(s: Snapshot, c: Check) -> list[Finding]:
    # Containers that expect NVIDIA env vars to give them a GPU without reserving one.
    hopeful = []
    for td in s.get("task_definitions", []):
        for cd in td.get("containerDefinitions", []):
            env: set[str] = {e.get("name", "") for e in cd.get("environment", [])}
            gpu = any(r.get("type") == "GPU" for r in cd.get("resourceRequirements", []))
            if env & set(_NVIDIA_ENV) and not gpu:
                hopeful.append(
                    (
                        _short(td["taskDefinitionArn"]),
                        cd.get("name", "?"),
                        sorted(env & set(_NVIDIA_ENV)),
                    )
                )
    if not hopeful:
        return []
    out = []
    for iid, sec in _sections(s, "docker_info").items():
        rt = host.parse_docker_info(sec.text)
        if rt.default_runtime == "nvidia":
            continue
        for td, name, names in hopeful:
            out.append(
                c.finding(
                    [
                        Evidence(
                            "host_probes", iid, "docker info Default Runtime", rt.default_runtime
                        ),
                        Evidence(
                            "task_definitions",
                            td,
                            f"containerDefinitions[{name}].environment",
                            names,
                        ),
                    ],
                    f"Docker's default runtime is {rt.default_runtime}, so {', '.join(names)} on "
                    f"container {name} does nothing: only the nvidia runtime reads them, and ECS "
                    "uses it only for containers that reserve a GPU. Reserve a GPU "
                    '(resourceRequirements [{"type": "GPU", "value": "1"}]) or, for telemetry, '
                    "run the collector on the host.",
                )
            )
    return out


def _ecs_config_gpu(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in _sections(s, "ecs_config").items():
        files = host.parse_ecs_config(sec.text)
        values = {path: kv.get("ECS_ENABLE_GPU_SUPPORT") for path, kv in files.items()}
        if not any(v == "true" for v in values.values()):
            out.append(
                c.finding(
                    [
                        Evidence(
                            "host_probes",
                            iid,
                            "ecs.config ECS_ENABLE_GPU_SUPPORT",
                            values or "no ecs.config",
                        )
                    ],
                    "ECS_ENABLE_GPU_SUPPORT=true is missing, so the agent registers no GPU: add "
                    "it to /etc/ecs/ecs.config in the launch template's user data and replace "
                    "the instance.",
                )
            )
    return out


def _ecs_config_cluster(s: Snapshot, c: Check) -> list[Finding]:
    cluster = _target(s).get("cluster")
    if not cluster:
        raise Unknown("the snapshot does not name the cluster")
    out = []
    for iid, sec in _sections(s, "ecs_config").items():
        files = host.parse_ecs_config(sec.text)
        got = files.get("/etc/ecs/ecs.config", {}).get("ECS_CLUSTER")
        if got != cluster:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, "/etc/ecs/ecs.config ECS_CLUSTER", got)],
                    f"The instance registers with {got or 'the default cluster'!s}, not {cluster}: "
                    f"set ECS_CLUSTER={cluster} in the launch template's user data.",
                )
            )
    return out


def _stack_delete_stuck(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for st in s["stacks"]:
        status = st.get("StackStatus", "")
        if status not in ("DELETE_IN_PROGRESS", "DELETE_FAILED"):
            continue
        protected = [
            (g["AutoScalingGroupName"], i["InstanceId"])
            for g in s["auto_scaling_groups"]
            for i in g.get("Instances", [])
            if i.get("ProtectedFromScaleIn")
        ]
        ev = [Evidence("stacks", st.get("StackName", "?"), "StackStatus", status)]
        if st.get("StackStatusReason"):
            ev.append(
                Evidence(
                    "stacks", st.get("StackName", "?"), "StackStatusReason", st["StackStatusReason"]
                )
            )
        if protected:
            ev.append(
                Evidence(
                    "auto_scaling_groups",
                    protected[0][0],
                    "Instances[].ProtectedFromScaleIn",
                    [i for _, i in protected],
                )
            )
            fix = (
                "CloudFormation cannot delete an ASG whose instances are protected from scale-in "
                "(aws-cdk#18179). Remove the protection: aws autoscaling set-instance-protection "
                f"--auto-scaling-group-name {protected[0][0]} --instance-ids "
                f"{' '.join(i for _, i in protected)} --no-protected-from-scale-in; the delete "
                "then proceeds (`ecs-gpu destroy` does this for you)."
            )
        elif status == "DELETE_FAILED":
            fix = "Read StackStatusReason, remove what blocks it, and run `ecs-gpu destroy` again."
        else:
            continue  # deleting normally
        # The first minutes of a delete look the same while ECS drains tasks;
        # only a delete that has run for a while is stuck.
        started = _parse_time(st.get("DeletionTime"))
        now = _parse_time((s.get(COLLECTION_KEY) or {}).get("collected_at"))
        young = (
            status == "DELETE_IN_PROGRESS"
            and started is not None
            and now is not None
            and (now - started).total_seconds() < STUCK_DELETE_S
        )
        out.append(
            c.finding(
                ev,
                fix,
                severity="warning" if young else None,
                title="Stack delete is waiting on protected instances" if young else None,
            )
        )
    return out


# A delete still in progress after this long is stuck, not draining.
STUCK_DELETE_S: Final = 15 * 60


def _c(
    id: str,
    severity: Severity,
    title: str,
    requires: tuple[str, ...],
    fn: Callable[[Snapshot, Check], list[Finding]],
    doc: str,
) -> Check:
    return Check(id, severity, title, requires, fn, doc)


CI, TD, SV = "container_instances", "task_definitions", "services"
PROBES = "host_probes"

CHECKS: Final[tuple[Check, ...]] = (
    _c(
        "ECS001",
        "error",
        "No container instance is registered",
        (CI,),
        _ecs_instances,
        "The cluster has no ACTIVE container instance: nothing can run.",
    ),
    _c(
        "ECS002",
        "error",
        "ECS agent disconnected",
        (CI,),
        _agent_connected,
        "An ACTIVE container instance reports agentConnected=false.",
    ),
    _c(
        "GPU001",
        "error",
        "Container instance registers no GPU",
        (CI,),
        _gpus_registered,
        "registeredResources has no GPU: wrong AMI or ECS_ENABLE_GPU_SUPPORT missing.",
    ),
    _c(
        "GPU002",
        "error",
        "Task definition reserves no GPU",
        (SV, TD),
        _td_reserves_gpu,
        "No container of the service's task definition has a GPU resourceRequirement.",
    ),
    _c(
        "GPU003",
        "error",
        "All GPUs are reserved",
        (CI, SV),
        _gpus_exhausted,
        "The service is short of tasks and no instance has enough free GPUs.",
    ),
    _c(
        "PLC001",
        "error",
        "Placement constraint matches no usable instance type",
        (SV, CI),
        _placement_constraint,
        "A memberOf attribute:ecs.instance-type constraint names an unknown or unregistered type.",
    ),
    _c(
        "CAP001",
        "error",
        "Capacity provider cannot grow the fleet",
        ("capacity_providers",),
        _cp_managed_scaling,
        "Managed scaling is disabled, or termination protection lacks ASG scale-in protection.",
    ),
    _c(
        "ASG001",
        "error",
        "The ASG failed to launch an instance",
        ("scaling_activities",),
        _asg_launch_failed,
        "The newest EC2 Auto Scaling activity failed (GPU stock-out, quota, launch template).",
    ),
    _c(
        "ASG002",
        "warning",
        "The ASG is at its maximum size",
        ("auto_scaling_groups", SV),
        _asg_at_max,
        "DesiredCapacity equals MaxSize while the service waits for tasks.",
    ),
    _c(
        "SVC001",
        "error",
        "Service cannot place a task",
        (SV,),
        _service_events,
        "The newest service event since the last steady state says 'unable to place a task'.",
    ),
    _c(
        "TSK001",
        "error",
        "The service's tasks keep failing",
        ("tasks", SV),
        _tasks_failing,
        "Two or more of the service's recent tasks stopped with TaskFailedToStart or "
        "EssentialContainerExited (warning once the service is back to its desired count).",
    ),
    _c(
        "MET001",
        "error",
        "The GPU metric is not published",
        ("metric_data",),
        _metric_published,
        "GetMetricData returns no datapoint for a series of the GPU metric contract.",
    ),
    _c(
        "MET004",
        "error",
        "The tracked GPU signal has no data",
        ("metric_data", "scaling_policies", SV),
        _tracked_signal_empty,
        "The agent's utilization series has datapoints but the GPUReservation divisor of the "
        "task-gpus policy has none (warning while the service's desired count is 0).",
    ),
    _c(
        "MET002",
        "error",
        "GPU scaling alarm has no data",
        ("alarms",),
        _alarms_insufficient,
        "A target-tracking alarm on the GPU metric is INSUFFICIENT_DATA.",
    ),
    _c(
        "MET003",
        "error",
        "GPU missing-metric alarm is firing",
        ("alarms",),
        _missing_metric_alarm,
        "The missing-metric alarm is in ALARM (or does not exist: warning).",
    ),
    _c(
        "SCL001",
        "error",
        "GPU policy tracks a metric nobody writes",
        ("scaling_policies",),
        _gpu_policy,
        "A GPU target-tracking policy's metric differs from the contract (plain or metric-math "
        "form, GPUReservation divisor included), or none exists.",
    ),
    _c(
        "SCL002",
        "warning",
        "Service auto scaling is off",
        ("scalable_targets",),
        _scaling_active,
        "The service is not a scalable target, or its dynamic scaling is suspended.",
    ),
    _c(
        "SCL003",
        "warning",
        "Service scaling activity failed",
        ("service_scaling_activities",),
        _service_scaling_failed,
        "The newest Application Auto Scaling activity failed.",
    ),
    _c(
        "ASG003",
        "error",
        "Another policy sizes the GPU ASG",
        ("asg_policies",),
        _host_cpu_policy,
        "A scaling policy other than ECSManaged* is attached to the ASG (host CPU: error).",
    ),
    _c(
        "LT001",
        "warning",
        "Instances run an old launch template",
        ("auto_scaling_groups", "launch_template_versions"),
        _old_launch_template,
        "ASG instances run a launch template version other than the one the ASG launches.",
    ),
    _c(
        "ASG004",
        "warning",
        "Scale-out cannot pass the capacity reservation",
        ("auto_scaling_groups", "launch_template_versions"),
        _odcr_blocks_growth,
        "The launch template targets a Capacity Reservation by id while the group sets no "
        "reservation preference, or the group launches only into reservations.",
    ),
    _c(
        "HOST000",
        "warning",
        "Host probe did not run",
        (PROBES,),
        _probe_ran,
        "The SSM command did not succeed on an instance.",
    ),
    _c(
        "HOST001",
        "error",
        "nvidia-smi fails on the host",
        (PROBES,),
        _nvidia_smi_host,
        "nvidia-smi is missing, fails, or lists no GPU on the host.",
    ),
    _c(
        "HOST002",
        "error",
        "CloudWatch agent cannot find nvidia-smi",
        (PROBES,),
        _agent_nvidia_stat,
        'The agent log says "Cannot get file\'s stat /usr/bin/nvidia-smi".',
    ),
    _c(
        "HOST003",
        "error",
        "A container is restarting in a loop",
        (PROBES,),
        _restart_loop,
        "docker ps -a shows one container exited non-zero 3 or more times.",
    ),
    _c(
        "HOST004",
        "error",
        "Instance role denied cloudwatch:PutMetricData",
        (PROBES,),
        _putmetricdata_denied,
        "The agent log shows AccessDenied for cloudwatch:PutMetricData.",
    ),
    _c(
        "HOST005",
        "error",
        "ECS agent is not active",
        (PROBES,),
        _service_active(
            "ecs_active",
            "ecs",
            "The ECS agent is down, so the instance runs no task. Run "
            "`systemctl start ecs`; never restart docker on a live host "
            "(ecs.service is PartOf=docker.service).",
        ),
        "systemctl is-active ecs is not active.",
    ),
    _c(
        "HOST006",
        "error",
        "Host CloudWatch agent is not active",
        (PROBES,),
        _service_active(
            "agent_active",
            "amazon-cloudwatch-agent",
            "The host CloudWatch agent is not running, so no GPU metric is written. "
            "Start it: amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s -c "
            f"file:{gpu_metric.AGENT_CONFIG_PATH}, then read its log.",
        ),
        "systemctl is-active amazon-cloudwatch-agent is not active.",
    ),
    _c(
        "HOST007",
        "error",
        "Host agent config does not collect the GPU metric",
        (PROBES,),
        _agent_config,
        "The agent config file is missing or differs from the GPU metric contract.",
    ),
    _c(
        "HOST008",
        "error",
        "Docker has no nvidia runtime",
        (PROBES,),
        _nvidia_runtime,
        "docker info Runtimes lacks nvidia.",
    ),
    _c(
        "HOST009",
        "error",
        "NVIDIA env vars do nothing under runc",
        (PROBES, TD),
        _nvidia_env_inert,
        "Default runtime is not nvidia and a container sets NVIDIA_* env without reserving a GPU.",
    ),
    _c(
        "HOST010",
        "error",
        "ECS GPU support is not enabled",
        (PROBES,),
        _ecs_config_gpu,
        "Neither /etc/ecs/ecs.config nor /var/lib/ecs/ecs.config has ECS_ENABLE_GPU_SUPPORT=true.",
    ),
    _c(
        "HOST011",
        "error",
        "Instance joins the wrong cluster",
        (PROBES,),
        _ecs_config_cluster,
        "ECS_CLUSTER in /etc/ecs/ecs.config differs from the service's cluster.",
    ),
    _c(
        "STK001",
        "error",
        "Stack delete is stuck on protected instances",
        ("stacks", "auto_scaling_groups"),
        _stack_delete_stuck,
        "The stack is DELETE_IN_PROGRESS/DELETE_FAILED and ASG instances are scale-in protected.",
    ),
)

CHECKS_BY_ID: Final = {c.id: c for c in CHECKS}


def _why_missing(s: Snapshot, kinds: tuple[str, ...]) -> str:
    meta = s.get(COLLECTION_KEY) or {}
    reasons = []
    for d in meta.get("denied", []):
        if set(d.get("kinds", [])) & set(kinds):
            reasons.append(f"{d.get('call')} denied (needs {d.get('permission')})")
    for e in meta.get("errors", []):
        if set(e.get("kinds", [])) & set(kinds):
            reasons.append(f"{e.get('call')} failed: {e.get('message')}")
    if "host_probes" in kinds and not meta.get("probe_hosts"):
        reasons.append("run with --probe-hosts to probe the instances")
    return "; ".join(reasons) or "not collected"


def run_check(check: Check, snapshot: Snapshot) -> CheckResult:
    missing = tuple(k for k in check.requires if k not in snapshot)
    if missing:
        return CheckResult(
            check, "unknown", missing=missing, reason=_why_missing(snapshot, missing)
        )
    try:
        findings = check.fn(snapshot, check)
    except Unknown as e:
        return CheckResult(check, "unknown", reason=str(e))
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        # A hand-edited or truncated snapshot: say what is wrong, never crash.
        return CheckResult(
            check,
            "unknown",
            reason=f"the snapshot lacks or mistypes a field this check reads ({e!r})",
        )
    return CheckResult(check, "finding" if findings else "ok", tuple(findings))


def run_checks(snapshot: Snapshot, checks: Iterable[Check] = CHECKS) -> Report:
    """Every check over the snapshot, in chain order."""
    meta = snapshot.get(COLLECTION_KEY) or {}
    return Report(
        results=[run_check(c, snapshot) for c in checks],
        missing_permissions=list(meta.get("denied", [])),
        collection_errors=list(meta.get("errors", [])),
    )
