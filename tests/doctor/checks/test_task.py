"""Link checks of doctor/checks/task.py (the breakage of each check is in cases.py)."""

from __future__ import annotations

from collections.abc import Callable

from ecs_gpu.doctor.checks import run_checks

from ..snapshots import (
    NAMES,
    as_concurrency,
)
from .cases import Snap


def test_sidecar_publishing_another_series_is_td001(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    env = s["task_definitions"][0]["containerDefinitions"][1]["environment"]
    for e in env:
        if e["name"] == "DIMENSIONS":
            e["value"] = "ClusterName=other,ServiceName=other"
    f = next(f for f in run_checks(s).findings if f.id == "TD001")
    assert f.title == "The demand-metric sidecar publishes another series"
    assert f.evidence[0].value == {"DIMENSIONS": "ClusterName=other,ServiceName=other"}
    assert f"ClusterName={NAMES.cluster},ServiceName={NAMES.service}" in f.fix
