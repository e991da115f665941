"""Link 4, capacity: the capacity provider and the ASG add instances."""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu import host
from ecs_gpu.checks.doctor import capacity_provider
from ecs_gpu.checks.doctor.common import (
    NEVER,
    ODCR_FIRST,
    collection_target,
    parse_time,
    service_short,
    spot_groups,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.checks.runner import why_missing
from ecs_gpu.checks.snapshot import COLLECTION_KEY, Snapshot
from ecs_gpu.contracts.naming import Names


@check(
    "ASG008",
    link="capacity",
    severity="error",
    title="Capacity provider cannot grow the fleet",
    requires=("capacity_providers",),
    doc="Managed scaling is disabled, or termination protection lacks ASG scale-in protection.",
)
def _cp_managed_scaling(s: Snapshot, c: Check) -> list[Finding]:
    return capacity_provider.judge_managed_scaling(s, c)


_STOCKOUT = ("InsufficientInstanceCapacity", "insufficient capacity")


_QUOTA = ("VcpuLimitExceeded", "InstanceLimitExceeded")


# A Spot launch EC2 cannot fill: EC2's error text, and the code a Spot group's
# failed activity carries (aws-semantics §11 "No Spot capacity").
_SPOT_STOCKOUT = ("UnfulfillableCapacity", "no Spot capacity available")


_RESERVATION_FULL = ("ReservationCapacityExceeded",)


@check(
    "ASG001",
    link="capacity",
    severity="error",
    title="The ASG failed to launch an instance",
    requires=("scaling_activities",),
    doc="The newest EC2 Auto Scaling activity failed (GPU stock-out, quota, launch template).",
)
def _asg_launch_failed(s: Snapshot, c: Check) -> list[Finding]:
    by_asg: dict[str, list[dict[str, Any]]] = {}
    for a in s["scaling_activities"]:
        by_asg.setdefault(a.get("AutoScalingGroupName", "?"), []).append(a)
    out = []
    for asg, acts in sorted(by_asg.items()):
        acts.sort(key=lambda a: parse_time(a.get("StartTime")) or NEVER, reverse=True)
        latest = acts[0]
        if latest.get("StatusCode") not in ("Failed", "Cancelled"):
            continue
        msg = latest.get("StatusMessage", "") or latest.get("Description", "")
        if any(k in msg for k in _SPOT_STOCKOUT):
            fix = (
                "EC2 has no Spot capacity for the group's types in its Availability Zones, so "
                "the service's Spot share of tasks waits in PROVISIONING (the Spot shortfall "
                "alarm, ALM003, pages on it). Now: raise [capacity.spot] on_demand_base or lower "
                "spot_percent and redeploy with `ecs-gpu deploy` (a new strategy: it forces the "
                "new deployment ECS needs, each task replaced once); then list more "
                "interchangeable instance_types. The group keeps retrying on its own."
            )
        elif any(k in msg for k in _STOCKOUT):
            fix = (
                "AWS has no capacity of this GPU type in the AZ (stock-out). Add private subnets "
                "in more Availability Zones to [network] subnet_ids, use a capacity reservation "
                "([capacity] capacity_reservation_id), or choose another GPU type; the ASG keeps "
                "retrying on its own."
            )
        elif any(k in msg for k in _RESERVATION_FULL):
            fix = (
                "The launch targeted a Capacity Reservation that is full. Target it from the "
                f"group with {ODCR_FIRST} (redeploy with `ecs-gpu deploy`; see LT002), so "
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


@check(
    "ASG002",
    link="capacity",
    severity="warning",
    title="The ASG is at its maximum size",
    requires=("auto_scaling_groups", "services"),
    doc="DesiredCapacity equals MaxSize while the service waits for tasks.",
)
def _asg_at_max(s: Snapshot, c: Check) -> list[Finding]:
    if not service_short(s):
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


# What a Spot group's activity history says of an instance EC2 reclaimed: the
# group finds it terminated by its EC2 health check and replaces it (the cause
# AWS's knowledge center quotes; a stopped instance reads the same, hence Spot
# groups only: aws-semantics §11 [gap]), and any activity that names the
# interruption itself.
_INTERRUPTED: Final = (
    "health check indicating it has been terminated or stopped",
    "spot instance interruption",
)


@check(
    "ASG009",
    link="capacity",
    severity="warning",
    title="Spot instances were interrupted",
    requires=("auto_scaling_groups", "scaling_activities"),
    doc="A Spot group's recent activities replace instances EC2 terminated (interruptions).",
)
def _spot_interrupted(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for g in spot_groups(s):
        name = g.get("AutoScalingGroupName", "?")
        hits = [
            a
            for a in s["scaling_activities"]
            if a.get("AutoScalingGroupName") == name
            and any(k in str(a.get("Cause", "")).lower() for k in _INTERRUPTED)
        ]
        if not hits:
            continue
        hits.sort(key=lambda a: parse_time(a.get("StartTime")) or NEVER, reverse=True)
        newest = hits[0]
        out.append(
            c.finding(
                [
                    Evidence(
                        "scaling_activities",
                        newest.get("ActivityId", name),
                        "Cause",
                        newest.get("Cause"),
                    ),
                    Evidence(
                        "scaling_activities", name, "interruptions in the activities", len(hits)
                    ),
                ],
                f"EC2 reclaimed {len(hits)} Spot instance(s) of {name} among its recent "
                "activities; each time the tasks on it were replaced elsewhere (with "
                "ECS_ENABLE_SPOT_INSTANCE_DRAINING, LT003) and a new instance started. If they "
                "come often: list more interchangeable types in [capacity.spot] instance_types "
                "(more pools for price-capacity-optimized), raise on_demand_base or lower "
                "spot_percent (`ecs-gpu deploy` replaces each task once for the new strategy), "
                "and check `ecs-gpu plan` with [simulation] "
                "spot_interruption_band set to the Spot Instance Advisor's band for your types.",
            )
        )
    return out


# --- the warm pool ([capacity.warm_pool], docs/host.md "Warm pool") ----------------------

# The LifecycleTransition of a launch hook (botocore's autoscaling model), the
# one infra.capacity.LAUNCHING deploys; a test holds the two equal (that
# module loads the CDK, which doctor does not).
LAUNCHING: Final = "autoscaling:EC2_INSTANCE_LAUNCHING"
# PutWarmPool's documented defaults, for a configuration that leaves one out.
_POOL_DEFAULTS: Final = {"PoolState": "Stopped", "MinSize": 0}
# How an instance waits for a launch hook, in each place it can be.
_WAITING: Final = {"warm_pools": "Warmed:Pending:Wait", "auto_scaling_groups": "Pending:Wait"}


def _put_warm_pool(group: str, want: dict[str, Any]) -> str:
    """The put-warm-pool command with the spec's [capacity.warm_pool] values (an unset
    max_prepared is left out: the group's MaxSize)."""
    prepared = want.get("max_prepared")
    return (
        f"aws autoscaling put-warm-pool --auto-scaling-group-name {group} "
        f"--min-size {want['min_size']}"
        + (f" --max-group-prepared-capacity {prepared}" if prepared is not None else "")
        + f" --pool-state {want['pool_state']}"
    )


def _put_launch_hook(group: str, hook: str, heartbeat: Any) -> str:
    """The put-lifecycle-hook command for the warm-pool unit's launch hook, as the
    template writes it (CONTINUE: at the heartbeat the instance goes on, pulled or not)."""
    return (
        f"aws autoscaling put-lifecycle-hook --lifecycle-hook-name {hook} "
        f"--auto-scaling-group-name {group} --lifecycle-transition {LAUNCHING} "
        f"--heartbeat-timeout {heartbeat} --default-result CONTINUE"
    )


def _warm_pool_target(s: Snapshot) -> dict[str, Any] | None:
    """The spec's [capacity.warm_pool] as collected; None without one or without a spec."""
    want: dict[str, Any] | None = collection_target(s).get("warm_pool")
    return want


def _pool_groups(s: Snapshot) -> list[dict[str, Any]]:
    """Every group when the spec deploys a warm pool, else the groups that have one."""
    groups: list[dict[str, Any]] = s["auto_scaling_groups"]
    if _warm_pool_target(s):
        return groups
    return [g for g in groups if g.get("WarmPoolConfiguration")]


def _need(s: Snapshot, kinds: tuple[str, ...]) -> None:
    # Collected only for a warm pool (facts.WARM_POOL_PERMISSIONS), so not in requires.
    missing = tuple(k for k in kinds if k not in s)
    if missing:
        raise Unknown(f"{', '.join(missing)} missing: {why_missing(s, missing)}")


def _pool_differences(cfg: dict[str, Any], want: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """(field, value, what differs) for each WarmPoolConfiguration field off the spec."""
    out = []
    for field, key in (("PoolState", "pool_state"), ("MinSize", "min_size")):
        got = cfg.get(field, _POOL_DEFAULTS[field])
        if got != want[key]:
            out.append((field, got, f"{field} {got} where the spec has {key} = {want[key]!r}"))
    got = cfg.get("MaxGroupPreparedCapacity")
    # Unset reads back absent or as -1 (the API's "no value"): the group's MaxSize.
    unset = got is None or got == -1
    if (None if unset else got) != want["max_prepared"]:
        shown = "unset" if unset else got
        spec = (
            "leaves max_prepared unset (the group's MaxSize)"
            if want["max_prepared"] is None
            else f"has max_prepared = {want['max_prepared']} (set, or its default: min_size)"
        )
        what = f"MaxGroupPreparedCapacity {shown} where the spec {spec}"
        out.append(("MaxGroupPreparedCapacity", got, what))
    return out


@check(
    "ASG005",
    link="capacity",
    severity="error",
    title="The group has no warm pool",
    requires=("auto_scaling_groups",),
    doc="The spec has [capacity.warm_pool] but the group has none (or it is being deleted), or "
    "its PoolState, MinSize or MaxGroupPreparedCapacity differ from the spec (warning).",
)
def _warm_pool_config(s: Snapshot, c: Check) -> list[Finding]:
    want = _warm_pool_target(s)
    if not want:
        return []  # no spec, or a spec without a warm pool: nothing to compare with
    out = []
    for g in s["auto_scaling_groups"]:
        name = g.get("AutoScalingGroupName", "?")
        cfg = g.get("WarmPoolConfiguration")
        if not cfg or cfg.get("Status") == "PendingDelete":
            out.append(
                c.finding(
                    [
                        Evidence("auto_scaling_groups", name, "WarmPoolConfiguration", cfg),
                        Evidence("_collection", "target", "warm_pool", want),
                    ],
                    f"The spec has [capacity.warm_pool] (min_size {want['min_size']}, "
                    f"pool_state {want['pool_state']}), but the group {name} has no warm pool"
                    + (" (it is being deleted)" if cfg else "")
                    + ": every scale-out boots a new instance and pulls the image, minutes "
                    "instead of the spec's warm start. "
                    + (
                        "Once its delete has finished, put"
                        if cfg
                        else "A redeploy of the unchanged stack does not recreate a pool "
                        "deleted by hand (CloudFormation compares templates); put"
                    )
                    + " it back with the spec's values: "
                    + _put_warm_pool(name, want)
                    + ".",
                )
            )
            continue
        diffs = _pool_differences(cfg, want)
        if diffs:
            out.append(
                c.finding(
                    [
                        Evidence("auto_scaling_groups", name, f"WarmPoolConfiguration.{f}", v)
                        for f, v, _ in diffs
                    ],
                    f"The warm pool of {name} has {'; '.join(d[2] for d in diffs)}: it holds "
                    "another number of instances, or keeps them in another state, than the "
                    "spec (and `ecs-gpu plan`'s warm starts) assume. Set the spec's values "
                    "(PutWarmPool updates the pool; a redeploy of the unchanged stack leaves a "
                    "change made by hand): " + _put_warm_pool(name, want) + ".",
                    title="The warm pool differs from the spec",
                    severity="warning",
                )
            )
    return out


def _group_hooks(s: Snapshot, asg: str) -> list[dict[str, Any]]:
    return [h for h in s["lifecycle_hooks"] if h.get("AutoScalingGroupName") == asg]


def _launch_hook(s: Snapshot, asg: str) -> dict[str, Any] | None:
    """The group's launch hook the warm-pool unit completes: the spec's name, else any."""
    want = _warm_pool_target(s)
    for h in _group_hooks(s, asg):
        if h.get("LifecycleTransition") == LAUNCHING and (
            not want or h.get("LifecycleHookName") == want["hook_name"]
        ):
            return h
    return None


@check(
    "ASG006",
    link="capacity",
    severity="error",
    title="The warm pool's launch hook is missing",
    requires=("auto_scaling_groups",),
    doc="A warm-pool group has no launch lifecycle hook of the spec's name (error), or its "
    "HeartbeatTimeout differs from host.hook_timeout_s (warning).",
)
def _warm_pool_hook(s: Snapshot, c: Check) -> list[Finding]:
    groups = _pool_groups(s)
    if not groups:
        return []
    _need(s, ("lifecycle_hooks",))
    want = _warm_pool_target(s)
    out = []
    for g in groups:
        name = g.get("AutoScalingGroupName", "?")
        hook = _launch_hook(s, name)
        if hook is None:
            wanted = f"named {want['hook_name']} " if want else ""
            found = [
                f"{h.get('LifecycleHookName')} ({h.get('LifecycleTransition')})"
                for h in _group_hooks(s, name)
            ]
            out.append(
                c.finding(
                    [
                        Evidence(
                            "lifecycle_hooks",
                            name,
                            "LifecycleHookName (LifecycleTransition)",
                            found or "none",
                        )
                    ],
                    f"The group {name} has a warm pool but no launch lifecycle hook {wanted}"
                    f"({LAUNCHING}). The host's warm-pool unit ({host.WARM_UNIT}) completes "
                    "that hook, so its complete-lifecycle-action fails; and without the hook "
                    "EC2 Auto Scaling stops a warming instance as soon as it runs, before the "
                    "image pull ends (it does not wait for user data), so a warm start pulls "
                    "again. "
                    + (
                        "A redeploy of the unchanged stack does not put back a hook deleted by "
                        "hand (it is in the group's LifecycleHookSpecificationList, which has "
                        "not changed); put it with the spec's values: "
                        + _put_launch_hook(name, want["hook_name"], want["hook_timeout_s"])
                        + "."
                        if want
                        else "Run `ecs-gpu doctor SPEC` for the hook's name and heartbeat, "
                        "or redeploy with `ecs-gpu deploy` after a change that reaches the "
                        "group."
                    ),
                )
            )
            continue
        beat = hook.get("HeartbeatTimeout")
        if want and beat != want["hook_timeout_s"]:
            hook_name = hook.get("LifecycleHookName", "?")
            out.append(
                c.finding(
                    [
                        Evidence("lifecycle_hooks", hook_name, "HeartbeatTimeout", beat),
                        Evidence(
                            "_collection",
                            "target",
                            "warm_pool.hook_timeout_s",
                            want["hook_timeout_s"],
                        ),
                    ],
                    f"The launch hook {hook_name} waits {beat} s; the spec's is "
                    f"{want['hook_timeout_s']} s (host.hook_timeout_s: every pull attempt the "
                    f"warm-pool unit may make, the delays between them and "
                    f"{host.HOOK_MARGIN_S} s for boot and login). Shorter, EC2 Auto Scaling "
                    "goes on before a slow pull ends and a warm start pulls again; longer, an "
                    "instance whose unit failed holds its launch that much longer. Set the "
                    "spec's (PutLifecycleHook updates the hook): "
                    + _put_launch_hook(name, hook_name, want["hook_timeout_s"])
                    + ".",
                    title="The warm pool's launch hook has another heartbeat",
                    severity="warning",
                )
            )
    return out


@check(
    "ASG007",
    link="capacity",
    severity="warning",
    title="An instance waits on the launch hook past its heartbeat",
    requires=("auto_scaling_groups",),
    doc="A warm-pool instance in Warmed:Pending:Wait, or a group instance in Pending:Wait, "
    "launched longer ago than the launch hook's HeartbeatTimeout: the warm-pool unit did not "
    "complete the hook.",
)
def _hook_not_completed(s: Snapshot, c: Check) -> list[Finding]:
    groups = _pool_groups(s)
    if not groups:
        return []
    _need(s, ("warm_pools", "lifecycle_hooks", "instances"))
    collected = (s.get(COLLECTION_KEY) or {}).get("collected_at")
    now = parse_time(collected)
    if now is None:
        raise Unknown("the snapshot has no collected_at to measure the wait from")
    launched = {i.get("InstanceId"): parse_time(i.get("LaunchTime")) for i in s["instances"]}
    log_group = Names(collection_target(s).get("service") or "<service>").host_log_group
    stream = dict(host.HOST_LOG_FILES)[host.HOST_SETUP_LOG]
    out, undecided = [], []
    for g in groups:
        name = g.get("AutoScalingGroupName", "?")
        hook = _launch_hook(s, name)
        beat = None if hook is None else hook.get("HeartbeatTimeout")
        if not isinstance(beat, int):
            continue  # no launch hook holds the instances (ASG006)
        waiting = [
            ("warm_pools", i)
            for i in s["warm_pools"].get(name, {}).get("Instances", [])
            if i.get("LifecycleState") == _WAITING["warm_pools"]
        ]
        # A Running pool's instance enters service without a restart, so its
        # LaunchTime is when it warmed, not when it left the pool.
        if (g.get("WarmPoolConfiguration") or {}).get("PoolState") != "Running":
            waiting += [
                ("auto_scaling_groups", i)
                for i in g.get("Instances", [])
                if i.get("LifecycleState") == _WAITING["auto_scaling_groups"]
            ]
        for kind, inst in waiting:
            iid = inst.get("InstanceId", "?")
            start = launched.get(iid)
            if start is None:
                undecided.append(iid)
                continue
            waited = (now - start).total_seconds()
            if waited <= beat:
                continue
            hook_name = hook.get("LifecycleHookName", "?") if hook else "?"
            out.append(
                c.finding(
                    [
                        Evidence(kind, name, f"Instances[{iid}].LifecycleState", _WAITING[kind]),
                        Evidence("instances", iid, "LaunchTime", start.isoformat()),
                        Evidence("lifecycle_hooks", hook_name, "HeartbeatTimeout", beat),
                        Evidence("_collection", "collected_at", "collected_at", collected),
                    ],
                    f"{iid} has waited {waited / 60:.0f} min in {_WAITING[kind]}, longer than "
                    f"the {beat} s heartbeat of the launch hook {hook_name}: the host's "
                    f"warm-pool unit ({host.WARM_UNIT}), which completes the hook when its "
                    f"pre-pull ends, did not. Read its log {host.HOST_SETUP_LOG} on the "
                    f"instance (aws ssm start-session --target {iid}); once the host agent runs "
                    f"(in service, not while warming) it is in the log group {log_group}, "
                    f"stream {iid}/{stream}. Usual causes: the instance role lacks "
                    "autoscaling:CompleteLifecycleAction (policy ecs-gpu-warm-pool), the "
                    "hook's name is not the one the unit completes (ASG006), or the pull is "
                    "slower than the heartbeat. At the heartbeat EC2 Auto Scaling goes on with "
                    "the hook's DefaultResult, so each launch waits that long. To let this one "
                    "go on now, pulled or not: aws autoscaling complete-lifecycle-action "
                    f"--lifecycle-hook-name {hook_name} --auto-scaling-group-name {name} "
                    f"--lifecycle-action-result CONTINUE --instance-id {iid}.",
                )
            )
    out += _timed_out_launches(s, c, groups)
    if undecided and not out:
        raise Unknown(
            f"{', '.join(undecided)} wait on the launch hook, but instances has no LaunchTime "
            "for them"
        )
    return out


# A launch's activity (DescribeScalingActivities), into the group or its warm pool:
# "Launching a new EC2 instance: i-..." / "... into warm pool: i-...".
_LAUNCH_ACTIVITY: Final = "launching a new ec2 instance"


def _timed_out_launches(s: Snapshot, c: Check, groups: list[dict[str, Any]]) -> list[Finding]:
    """What a timed-out launch hook leaves once the instance has gone on: a launch
    activity that lasted as long as the hook's heartbeat (the instance waited it out,
    then EC2 Auto Scaling took the hook's DefaultResult). One finding per group, the
    newest such activity; nothing without scaling_activities (the waiting instances
    above are the live case)."""
    out = []
    for g in groups:
        name = g.get("AutoScalingGroupName", "?")
        hook = _launch_hook(s, name)
        beat = None if hook is None else hook.get("HeartbeatTimeout")
        if hook is None or not isinstance(beat, int):
            continue
        slow = []
        for a in s.get("scaling_activities", []):
            if a.get("AutoScalingGroupName") != name:
                continue
            if not str(a.get("Description", "")).lower().startswith(_LAUNCH_ACTIVITY):
                continue
            start, end = parse_time(a.get("StartTime")), parse_time(a.get("EndTime"))
            if start is not None and end is not None and (end - start).total_seconds() >= beat:
                slow.append((end, (end - start).total_seconds(), a))
        if not slow:
            continue
        slow.sort(key=lambda t: t[0], reverse=True)
        _, took, newest = slow[0]
        aid = newest.get("ActivityId", name)
        hook_name = hook.get("LifecycleHookName", "?")
        result = hook.get("DefaultResult", "ABANDON")
        went_on = (
            "put it in service (CONTINUE), pulled or not"
            if result == "CONTINUE"
            else "terminated it (ABANDON) and launched another"
        )
        out.append(
            c.finding(
                [
                    Evidence("scaling_activities", aid, "Description", newest.get("Description")),
                    Evidence(
                        "scaling_activities",
                        aid,
                        "EndTime - StartTime (s)",
                        round(took),
                    ),
                    Evidence("lifecycle_hooks", hook_name, "HeartbeatTimeout", beat),
                    Evidence("lifecycle_hooks", hook_name, "DefaultResult", result),
                    Evidence(
                        "scaling_activities", name, "launches as long as the heartbeat", len(slow)
                    ),
                ],
                f"{len(slow)} launch(es) of {name} lasted as long as the {beat} s heartbeat of "
                f"the launch hook {hook_name} (the newest {round(took)} s: "
                f"{newest.get('Description')}): the hook timed out, the host's warm-pool unit "
                f"({host.WARM_UNIT}) never completed it, and EC2 Auto Scaling then {went_on}. "
                "Each such launch waits the whole heartbeat. Read the unit's log "
                f"{host.HOST_SETUP_LOG} on an instance it launched. Usual causes: the instance "
                "role lacks autoscaling:CompleteLifecycleAction (policy ecs-gpu-warm-pool), the "
                "hook's name is not the one the unit completes (ASG006), or the pull is slower "
                "than the heartbeat.",
                title="A launch waited out the launch hook's heartbeat",
            )
        )
    return out
