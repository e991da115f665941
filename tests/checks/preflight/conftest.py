"""What preflight needs for the bundled examples: g5, g6e (a reservation) and g5 with Spot."""

from __future__ import annotations

import pytest

from ecs_gpu.checks.preflight.account import Needs
from ecs_gpu.spec import load_spec

from .answers import EXAMPLES


@pytest.fixture(scope="module")
def g5() -> Needs:
    return Needs.from_spec(load_spec(EXAMPLES / "g5-vllm.toml"), "us-east-1")


@pytest.fixture(scope="module")
def g6e() -> Needs:
    """A [network] spec with a reservation of 2 g6e.12xlarge."""
    return Needs.from_spec(load_spec(EXAMPLES / "g6e-alb-odcr.toml"), "us-east-1")


@pytest.fixture(scope="module")
def g5_spot() -> Needs:
    """The g5 example with [capacity.spot] over g5.xlarge and g6.xlarge (4 vCPUs each)."""
    text = (
        (EXAMPLES / "g5-vllm.toml")
        .read_text(encoding="utf-8")
        .replace(
            "\n[scaling]\n",
            '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n\n[scaling]\n',
        )
    )
    from ecs_gpu.spec import parse_spec

    return Needs.from_spec(parse_spec(text, "spot.toml"), "us-east-1")
