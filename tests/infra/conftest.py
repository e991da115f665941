"""Session-scoped synth of every example spec (CDK synth takes seconds; do it once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.spec import Spec, load_spec

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.toml"))


@pytest.fixture(scope="session")
def specs() -> dict[str, Spec]:
    return {name: load_spec(EXAMPLES_DIR / name) for name in EXAMPLES}


@pytest.fixture(scope="session")
def templates(specs: dict[str, Spec]) -> dict[str, dict[str, Any]]:
    from ecs_gpu.synth import synth_template

    return {name: synth_template(spec) for name, spec in specs.items()}


@pytest.fixture(params=EXAMPLES)
def example(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name
