"""Validate (and so synthesize) every example spec ONCE per session: a CDK synth takes seconds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ecs_gpu.spec import Spec, load_spec

if TYPE_CHECKING:
    from ecs_gpu.validate import ValidationReport

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.toml"))


@pytest.fixture(scope="session")
def specs() -> dict[str, Spec]:
    return {name: load_spec(EXAMPLES_DIR / name) for name in EXAMPLES}


@pytest.fixture(scope="session")
def reports(specs: dict[str, Spec]) -> dict[str, ValidationReport]:
    """validate() of every example; its template is the one `ecs-gpu synth` writes."""
    from ecs_gpu.validate import validate

    return {name: validate(spec, path=name) for name, spec in specs.items()}


@pytest.fixture(scope="session")
def templates(reports: dict[str, ValidationReport]) -> dict[str, dict[str, Any]]:
    return {name: r.template for name, r in reports.items()}


@pytest.fixture(params=EXAMPLES)
def example(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def t(example: str, templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The template of the current example."""
    return templates[example]


@pytest.fixture
def spec(example: str, specs: dict[str, Spec]) -> Spec:
    return specs[example]
