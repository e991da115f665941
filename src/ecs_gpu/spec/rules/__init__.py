"""Cross-field rules: small functions of a validated Spec that yield Problems.

RULES are errors (a spec that breaks one is refused, exit 2) and NOTES are
worth saying about a valid spec; each list holds its functions in the order
their lines are reported. A rule names the key the user has to change, shows
its value, and says what to write instead. The rules live by concept in the
modules beside this one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ecs_gpu.spec.messages import Problem
from ecs_gpu.spec.rules.alerts import (
    _alerts,
)
from ecs_gpu.spec.rules.capacity import (
    _all_on_spot,
    _gp3_ratios,
    _root_volume_holds_the_model,
    _running_warm_pool,
    _spot,
    _spot_unpriced,
    _warm_pool,
)
from ecs_gpu.spec.rules.network import (
    _duplicate_subnets,
    _ingress_rules_quota,
    _load_balancer_subnets,
    _open_to_the_internet,
    _plain_http_on_the_internet,
    _public_listener_needs_cidrs,
)
from ecs_gpu.spec.rules.placement import (
    _instance_bounds,
    _max_tasks_reachable,
    _min_tasks_reachable,
    _reservation_floor,
    _reservation_pair,
    _task_bounds,
    _task_cpu,
    _task_gpus,
    _task_memory,
)
from ecs_gpu.spec.rules.scaling import (
    _duplicate_schedules,
    _fast_path_needs_concurrency,
    _fast_scale_in_needs_concurrency,
    _guard_needs_concurrency,
    _max_tasks_above_service_quota,
    _schedule_within_max,
    _signal_needs_metrics,
    _signal_needs_target,
    _target_above_simulated_capacity,
    _unused_concurrency_target,
    _unused_gpu_target,
    _unused_panic_threshold,
    _zero_needs_wake,
)
from ecs_gpu.spec.rules.service import (
    _metrics_port,
    _model_fits_gpu_memory,
    _secret_not_also_plain,
    _shm_fits_memory,
    _sidecar_room,
    _task_definition_size,
)
from ecs_gpu.spec.rules.simulation import (
    _cpu_idle_within_full_load,
    _unused_spot_simulation,
)
from ecs_gpu.spec.rules.strings import (
    _cdk_tokens,
    _control_characters,
    _unexpanded_variables,
)

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec

Rule = Callable[["Spec"], Iterator[Problem]]

# Errors: a spec that breaks one is refused (exit 2).
RULES: list[Rule] = [
    _task_gpus,
    _task_cpu,
    _task_memory,
    _instance_bounds,
    _task_bounds,
    _reservation_pair,
    _reservation_floor,
    _max_tasks_reachable,
    _min_tasks_reachable,
    _zero_needs_wake,
    _schedule_within_max,
    _duplicate_schedules,
    _signal_needs_metrics,
    _signal_needs_target,
    _fast_path_needs_concurrency,
    _fast_scale_in_needs_concurrency,
    _guard_needs_concurrency,
    _shm_fits_memory,
    _model_fits_gpu_memory,
    _root_volume_holds_the_model,
    _ingress_rules_quota,
    _control_characters,
    _task_definition_size,
    _cdk_tokens,
    _sidecar_room,
    _secret_not_also_plain,
    _metrics_port,
    _gp3_ratios,
    _warm_pool,
    _spot,
    _duplicate_subnets,
    _load_balancer_subnets,
    _public_listener_needs_cidrs,
    _alerts,
    _cpu_idle_within_full_load,
]
# Notes: the spec is valid and deploys, but does something the user should know
# about (an endpoint open to the internet). validate/synth/plan print them.
NOTES: list[Rule] = [
    _open_to_the_internet,
    _plain_http_on_the_internet,
    _unused_concurrency_target,
    _unused_gpu_target,
    _unused_panic_threshold,
    _target_above_simulated_capacity,
    _max_tasks_above_service_quota,
    _running_warm_pool,
    _all_on_spot,
    _spot_unpriced,
    _unused_spot_simulation,
    _unexpanded_variables,
]


def cross_field_problems(spec: Spec, path: str = "spec") -> list[str]:
    """Rules that span keys. Each returned line names file, key, value and the fix."""
    return [p.format(path) for rule in RULES for p in rule(spec)]


def spec_warnings(spec: Spec, path: str = "spec") -> list[str]:
    """Notes on a valid spec (same one-line form as problems); they never refuse it."""
    return [p.format(path) for note in NOTES for p in note(spec)]
