"""The bundled examples, validated once per process: a CDK synth takes seconds.

The tests of infra, template and the CLI read the same validate() reports; their
folders' conftest.py files offer these fixtures, and the validation behind them
runs once in a process, whichever folder asks first.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ecs_gpu.spec import Spec, load_spec

if TYPE_CHECKING:
    from ecs_gpu.template.validate import ValidationReport

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.toml"))

# The stages each example's validate() announced, in order (filled as it runs).
_STAGES: dict[str, list[str]] = {}


@functools.cache
def _specs() -> dict[str, Spec]:
    return {name: load_spec(EXAMPLES_DIR / name) for name in EXAMPLES}


@functools.cache
def _reports() -> dict[str, ValidationReport]:
    from ecs_gpu.template.validate import validate

    return {
        name: validate(spec, path=name, stage=_STAGES.setdefault(name, []).append)
        for name, spec in _specs().items()
    }


@pytest.fixture(scope="session")
def specs() -> dict[str, Spec]:
    return _specs()


@pytest.fixture(scope="session")
def validate_stages() -> dict[str, list[str]]:
    """The stages each example's validate() in :func:`reports` announced, in order."""
    return _STAGES


@pytest.fixture(scope="session")
def reports() -> dict[str, ValidationReport]:
    """validate() of every example; its template is the one `ecs-gpu synth` writes."""
    return _reports()


@pytest.fixture(scope="session")
def templates() -> dict[str, dict[str, Any]]:
    return {name: r.template for name, r in _reports().items()}


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
    """The spec of the current example."""
    return specs[example]
