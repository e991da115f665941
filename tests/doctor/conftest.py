"""Fixtures for doctor tests (the data itself lives in snapshots.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from .snapshots import build_healthy

_HEALTHY = build_healthy()


@pytest.fixture
def healthy() -> Callable[[], dict[str, Any]]:
    """A factory: each call returns a fresh deep copy of the healthy snapshot."""
    return lambda: copy.deepcopy(_HEALTHY)
