"""[simulation]: the CPU model's two ends, and the Spot inputs a fleet without Spot ignores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ecs_gpu.spec.messages import Problem

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec

# The keys ecs_gpu.design.spot reads only for a [capacity.spot] group.
SPOT_ONLY_KEYS = (
    "spot_discount_percent",
    "spot_interruption_band",
    "spot_interruptions_per_instance_hour",
)


def _cpu_idle_within_full_load(spec: Spec) -> Iterator[Problem]:
    # The simulator interpolates task CPU from idle to full load
    # (docs/simulator.md "CPU model"); an idle task busier than a saturated one
    # would make the CPU policy scale in as load rises.
    sim = spec.simulation
    idle, full = sim.cpu_idle_percent, sim.cpu_percent_at_full_load
    if idle <= full:
        return
    why = "an idle task cannot use more CPU than one whose GPUs are 100 % busy"
    written = sim.model_fields_set
    if "cpu_percent_at_full_load" in written and "cpu_idle_percent" not in written:
        # The key the user wrote is the one to change; the other is the default.
        yield Problem(
            "simulation.cpu_percent_at_full_load",
            full,
            f"is below simulation.cpu_idle_percent ({idle:g}, the default): {why}",
            f"raise it to {idle:g} or more, or set cpu_idle_percent below it (measure both "
            "on one task: idle, and at full load)",
        )
        return
    default = "" if "cpu_percent_at_full_load" in written else ", the default"
    yield Problem(
        "simulation.cpu_idle_percent",
        idle,
        f"is above simulation.cpu_percent_at_full_load ({full:g}{default}): {why}",
        f"lower it to {full:g} or less, or raise cpu_percent_at_full_load (measure both on "
        "one task: idle, and at full load)",
    )


def _unused_spot_simulation(spec: Spec) -> Iterator[Problem]:
    # Only keys the user wrote (model_fields_set): the band has a default.
    if spec.capacity.spot is not None:
        return
    sim = spec.simulation
    for key in SPOT_ONLY_KEYS:
        if key in sim.model_fields_set:
            yield Problem(
                f"simulation.{key}",
                getattr(sim, key),
                "is not used: the simulator reads it only for a [capacity.spot] group, and "
                "the spec has none",
                "remove it, or add a [capacity.spot] table with the Spot instance_types",
            )
