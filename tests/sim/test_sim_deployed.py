"""The simulator runs the managed-scaling settings the template deploys."""

from __future__ import annotations

import pytest
from simhelp import params, spec_text

from ecs_gpu import managed_scaling
from ecs_gpu.spec import parse_spec


@pytest.mark.parametrize(
    ("simulation", "warmup"),
    [
        ("", 480.0),  # 150 + 240 + 60 = 450 s -> 8 whole minutes
        ("instance_boot_s = 30\nimage_pull_s = 0\nmodel_load_s = 10", 300.0),  # the floor
        ("model_load_s = 20000", 10_000.0),  # the API maximum
    ],
)
def test_sim_uses_the_template_managed_scaling(simulation: str, warmup: float) -> None:
    spec = parse_spec(spec_text(simulation=simulation), "test.toml")
    p = params(simulation=simulation)
    assert p.instance_warmup_s == warmup == managed_scaling.instance_warmup_s(spec)
    # A step may add up to the whole fleet (simhelp's spec: max_instances 4).
    assert p.max_scaling_step == spec.capacity.max_instances == 4
    assert p.min_scaling_step == 1
