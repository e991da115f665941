"""[scaling]: the signal's prerequisites, and targets that no policy reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ecs_gpu.contracts import schedule
from ecs_gpu.spec.messages import Problem

# ECS's "Tasks per service" quota, "the maximum number of tasks per service (the
# desired count)": 5,000 by default, adjustable (aws-semantics.md §8). Above it
# the deploy works and a scale-out past it fails; a raised quota makes it fine.
ECS_TASKS_PER_SERVICE_QUOTA = 5000

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec


def _signal_needs_metrics(spec: Spec) -> Iterator[Problem]:
    # Without [service.metrics] the default signal is a GPU one, so this is
    # only reached by writing signal = "concurrency".
    if spec.scaling.signal == "concurrency" and spec.service.metrics is None:
        yield Problem(
            "scaling.signal",
            "concurrency",
            "scaling on concurrency reads the requests running and waiting from the "
            "server's Prometheus metrics, and [service.metrics] (where to scrape them) "
            "is missing",
            'add a [service.metrics] table, e.g. `preset = "vllm"` (or "tgi", "sglang", '
            '"triton"), or scale on GPU utilization with signal = "task-gpus"',
        )


def _signal_needs_target(spec: Spec) -> Iterator[Problem]:
    sc, sim = spec.scaling, spec.simulation
    if sc.signal == "concurrency" and sc.target_concurrency_per_task is None:
        # Little's law: a task at full load holds rps x seconds per request.
        full = sim.task_capacity_rps * sim.mean_request_s
        yield Problem(
            "scaling.signal",
            "concurrency",
            "needs scaling.target_concurrency_per_task, the requests running plus "
            "waiting per task that target tracking holds (signal is 'concurrency' by "
            "default when [service.metrics] is present)",
            "add `target_concurrency_per_task = N` under [scaling]: the batch size at "
            f"which latency is still acceptable (at [simulation]'s speeds a task at full "
            f"load holds {full:g}, so about {max(0.7 * full, 0.1):.3g} keeps 30 % headroom), "
            'or scale on GPU utilization with signal = "task-gpus"',
        )


def _fast_path_needs_concurrency(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.fast_scale_out is True and sc.signal != "concurrency":
        yield Problem(
            "scaling.fast_scale_out",
            True,
            f"the fast path reads a 10-second concurrency series, and signal = {sc.signal!r} "
            "has none (GPU metrics arrive once a minute)",
            'remove fast_scale_out, or set signal = "concurrency" with a [service.metrics] table',
        )


def _fast_scale_in_needs_concurrency(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.fast_scale_in is True and sc.signal != "concurrency":
        yield Problem(
            "scaling.fast_scale_in",
            True,
            f"the fast scale-in reads a 10-second concurrency series, and signal = {sc.signal!r} "
            "has none (GPU metrics arrive once a minute)",
            'remove fast_scale_in, or set signal = "concurrency" with a [service.metrics] table',
        )


def _guard_needs_concurrency(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.gpu_guard and sc.signal != "concurrency":
        yield Problem(
            "scaling.gpu_guard",
            True,
            f"the GPU guard adds a GPU policy beside the concurrency one, and with "
            f"signal = {sc.signal!r} the GPU policy is already the signal",
            'remove gpu_guard, or set signal = "concurrency" with a [service.metrics] table',
        )


def _unused_concurrency_target(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.target_concurrency_per_task is not None and sc.signal != "concurrency":
        yield Problem(
            "scaling.target_concurrency_per_task",
            sc.target_concurrency_per_task,
            f"is not used: the service scales on signal = {sc.signal!r}",
            'remove it, or set signal = "concurrency" with a [service.metrics] table',
        )


# The next two notes fire only on keys the user wrote (model_fields_set): the
# defaults are there in every spec and say nothing about intent.


def _unused_gpu_target(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if "gpu_target_percent" not in sc.model_fields_set:
        return
    if sc.signal == "concurrency" and not sc.gpu_guard:
        yield Problem(
            "scaling.gpu_target_percent",
            sc.gpu_target_percent,
            "is not used: the service scales on signal = 'concurrency' and, without "
            "gpu_guard, no policy tracks GPU utilization",
            "remove it, or add `gpu_guard = true` under [scaling] for a GPU policy beside "
            "the concurrency one",
        )


def _unused_panic_threshold(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if "panic_threshold_percent" not in sc.model_fields_set or sc.fast_scale_out_enabled:
        return
    why = (
        "fast_scale_out = false"
        if sc.signal == "concurrency"
        else f"signal = {sc.signal!r} has no 10-second series"
    )
    yield Problem(
        "scaling.panic_threshold_percent",
        sc.panic_threshold_percent,
        f"is not used: it sets when the fast path fires, and the fast path is off ({why})",
        'remove it, or turn the fast path on: signal = "concurrency" with fast_scale_out '
        "unset or true",
    )


def _target_above_simulated_capacity(spec: Spec) -> Iterator[Problem]:
    # The simulator's task holds task_capacity_rps x mean_request_s requests at
    # full load (Little's law); a target above that can never be reached there,
    # so `plan` would show a fleet that runs overloaded for a reason of its own.
    sc, sim = spec.scaling, spec.simulation
    if sc.signal != "concurrency" or sc.target_concurrency_per_task is None:
        return
    full = sim.task_capacity_rps * sim.mean_request_s
    if sc.target_concurrency_per_task > full:
        yield Problem(
            "scaling.target_concurrency_per_task",
            sc.target_concurrency_per_task,
            f"is above the {full:g} requests a task holds at full load in the simulation "
            f"(task_capacity_rps {sim.task_capacity_rps:g} x mean_request_s "
            f"{sim.mean_request_s:g}), so plan/simulate show a fleet that never catches up",
            "set [simulation] task_capacity_rps and mean_request_s to what you measured for "
            f"one task, or lower the target (70 % of full load here: {0.7 * full:g})",
        )


def _zero_needs_wake(spec: Spec) -> Iterator[Problem]:
    # With no task no policy has a datapoint, so nothing but a wake path
    # starts one again (ecs_gpu.design.paths.wake).
    sc = spec.scaling
    zeros = [i for i, e in enumerate(sc.schedule) if e.min_tasks == 0]
    if (sc.min_tasks != 0 and not zeros) or spec.load_balancer is not None:
        return
    if any(e.min_tasks >= 1 for e in sc.schedule):
        return
    key = "scaling.min_tasks" if sc.min_tasks == 0 else f"scaling.schedule[{zeros[0]}].min_tasks"
    yield Problem(
        key,
        0,
        "lets the service stop its last task, and nothing would start one again: with no "
        "task there is no GPU, CPU or concurrency datapoint for a policy to scale on, and "
        "without a [load_balancer] there is no request count for the wake alarm",
        "add a [load_balancer] (its request count wakes the service), or a "
        '[[scaling.schedule]] entry that raises min_tasks, e.g. cron = "0 8 ? * MON-FRI *", '
        "min_tasks = 1, max_tasks = N; or keep min_tasks = 1",
    )


def _schedule_within_max(spec: Spec) -> Iterator[Problem]:
    # The fleet (max_instances, the warm pool, the fast path's steps) is sized
    # for [scaling] max_tasks; a schedule may lower it, not raise it.
    sc = spec.scaling
    for i, entry in enumerate(sc.schedule):
        if entry.max_tasks > sc.max_tasks:
            yield Problem(
                f"scaling.schedule[{i}].max_tasks",
                entry.max_tasks,
                f"is above scaling.max_tasks ({sc.max_tasks}), which sizes the fleet",
                f"lower it to {sc.max_tasks} or less, or raise scaling.max_tasks",
            )


def _duplicate_schedules(spec: Spec) -> Iterator[Problem]:
    # Two actions on one scalable target at the same minute: Application
    # Auto Scaling runs a target's actions "in the order that they are
    # specified" but says nothing of actions due at one time, so which min/max
    # holds is undefined (aws-semantics.md §10 "Scheduled actions at one
    # minute"). Compared by the minutes they run at, however written ("MON-FRI"
    # and "*" share the weekdays); entries that set the same bounds do not clash.
    entries = spec.scaling.schedule
    parsed = [schedule.parse(e.cron) for e in entries]
    for j, entry in enumerate(entries):
        for i in range(j):
            earlier = entries[i]
            if (earlier.min_tasks, earlier.max_tasks) == (entry.min_tasks, entry.max_tasks):
                continue
            at = schedule.first_shared_minute(parsed[i], parsed[j])
            if at is None:
                continue
            yield Problem(
                f"scaling.schedule[{j}].cron",
                entry.cron,
                f"runs at minutes scaling.schedule[{i}].cron ({earlier.cron!r}) runs at too "
                f"(first {at:%Y-%m-%d %H:%M} UTC), with other min_tasks/max_tasks: the two "
                "scheduled actions fire together and Application Auto Scaling does not say "
                "which one's min_tasks and max_tasks hold",
                f"make the two schedules run at different minutes (e.g. scaling.schedule[{j}] "
                f"a minute later, or exclude the shared days from one), or give "
                f"scaling.schedule[{j}] and scaling.schedule[{i}] the same min_tasks and "
                "max_tasks",
            )
            break


def _max_tasks_above_service_quota(spec: Spec) -> Iterator[Problem]:
    # A note, not an error: the quota is adjustable, and the spec cannot read
    # the account's value (ECS reports no applied value to Service Quotas).
    sc = spec.scaling
    if sc.max_tasks > ECS_TASKS_PER_SERVICE_QUOTA:
        yield Problem(
            "scaling.max_tasks",
            sc.max_tasks,
            f"is above ECS's default 'Tasks per service' quota ({ECS_TASKS_PER_SERVICE_QUOTA:,}, "
            "the most a service's desired count may be): unless the account's is raised, "
            f"the service never scales past {ECS_TASKS_PER_SERVICE_QUOTA:,} tasks",
            f"lower it to {ECS_TASKS_PER_SERVICE_QUOTA} or less, or request an increase of "
            "the Amazon ECS quota 'Tasks per service' (Service Quotas console) before the "
            "fleet grows past it",
        )
