"""What a spec needs from the account (checks/preflight/needs.py): the warm pool's
instances and the vCPUs of the fleet at max_instances, as docs/operate.md asks for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecs_gpu.checks.preflight.account import Needs
from ecs_gpu.spec import load_spec

from .answers import EXAMPLES


@pytest.mark.parametrize(
    ("pool", "instances"),
    [
        # The default prepared capacity (min_size, at least 1): the pool holds min_size.
        ("", 1),
        ("min_size = 3", 3),
        ("min_size = 0", 0),
        # max_prepared = max_instances (4): nothing beside a full group but min_size.
        ("min_size = 1\nmax_prepared = 4", 1),
        ("min_size = 0\nmax_prepared = 4", 0),
    ],
)
def test_the_quota_counts_the_pool_the_template_deploys(
    tmp_path: Path, pool: str, instances: int
) -> None:
    """Needs' pool is PutWarmPool's size beside a group at max_instances (managed_scaling)."""
    text = (EXAMPLES / "g5-vllm.toml").read_text()
    spec = tmp_path / "pool.toml"
    spec.write_text(f"{text}\n[capacity.warm_pool]\n{pool}\n")
    needs = Needs.from_spec(load_spec(spec), "us-east-1")
    assert needs.max_instances == 4
    assert needs.pool_instances == instances


def test_the_documented_quota_request_is_the_g6e_examples_fleet() -> None:
    """docs/operate.md's --desired-value: the g6e example's fleet at max_instances."""
    needs = Needs.from_spec(load_spec(EXAMPLES / "g6e-alb-odcr.toml"), "us-east-1")
    # 6 instances, and 1 beside them while an instance refresh rolls (110 %).
    assert (needs.max_instances, needs.refresh_instances, needs.vcpus) == (6, 1, 48)
    assert needs.vcpus_needed == 336
    doc = (EXAMPLES.parent / "docs" / "operate.md").read_text(encoding="utf-8")
    assert f"--desired-value {needs.vcpus_needed}" in doc
