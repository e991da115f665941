"""Fixtures for the tests of doctor (the data itself lives in snapshots.py).

``healthy`` is the healthy snapshot, fresh for each call; with
``fixes_quote_runnable_commands`` every finding a test renders must quote only
``aws ...`` commands the AWS CLI runs as quoted. tests/checks/conftest.py and
tests/cli/conftest.py offer both; tests/checks/doctor/ uses the second for
every test, and each other module that renders doctor's findings names it in
its ``pytestmark``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ecs_gpu.checks.model import Check, Finding

from .aws_cli_model import problems
from .snapshots import build_healthy

_HEALTHY = build_healthy()


@pytest.fixture
def healthy() -> Callable[[], dict[str, Any]]:
    """A factory: each call returns a fresh deep copy of the healthy snapshot."""
    return lambda: copy.deepcopy(_HEALTHY)


@pytest.fixture
def fixes_quote_runnable_commands(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every finding a doctor test renders: each `aws ...` command its fix quotes must
    exist in botocore's service model, with every option and each required member
    (tests/support/aws_cli_model.py). A rejected command fails the test that rendered it."""
    render = Check.finding

    def checked(self: Check, *args: Any, **kwargs: Any) -> Finding:
        f = render(self, *args, **kwargs)
        try:
            wrong = problems(f.fix)
        except Exception as e:  # the runner reads a ValueError as "unknown": fail loudly
            raise AssertionError(f"{f.id}: the command check itself failed: {e!r}") from e
        assert not wrong, f"{f.id} quotes a command the AWS CLI refuses: {wrong}"
        return f

    monkeypatch.setattr(Check, "finding", checked)
    yield
