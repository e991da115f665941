"""The registry: every check in docs/doctor.md, its id prefix naming its module, every
former id resolving."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ecs_gpu.checks.doctor import CHECKS, CHECKS_BY_ID, run_checks
from ecs_gpu.checks.doctor.registry import (
    CHAIN,
    FORMERLY,
    PREFIXES,
    check,
    registered,
    resolve,
)
from support.doctor_cases import Snap, metric_missing, missing_alarm_firing


def test_docs_list_every_check_kind_and_permission() -> None:
    from pathlib import Path

    from ecs_gpu.aws.facts import KINDS, PERMISSIONS, PROBE_PERMISSIONS, WARM_POOL_PERMISSIONS

    doc = (Path(__file__).resolve().parents[3] / "docs" / "doctor.md").read_text()
    for c in CHECKS:
        assert f"| {c.id} | {c.severity} | {c.title} |" in doc, c.id
    for k in KINDS:
        assert f"| `{k}` |" in doc, k
    for p in (*PERMISSIONS, *PROBE_PERMISSIONS, *WARM_POOL_PERMISSIONS):
        assert f"`{p}`" in doc, p


DOC = Path(__file__).resolve().parents[3] / "docs" / "doctor.md"
CHECKS_DIR = Path(__file__).resolve().parents[3] / "src" / "ecs_gpu" / "checks" / "doctor"


def test_every_check_id_names_its_module() -> None:
    # One module per link, and the link's prefix on every id registered there.
    assert set(PREFIXES) == set(CHAIN)
    assert len(set(PREFIXES.values())) == len(PREFIXES)
    for c in CHECKS:
        assert c.fn.__module__ == f"ecs_gpu.checks.doctor.{c.link}", c.id
        assert re.fullmatch(rf"{PREFIXES[c.link]}\d{{3}}", c.id), c.id
        assert (CHECKS_DIR / f"{c.link}.py").is_file(), c.link


def test_every_former_id_points_at_a_check_and_is_documented() -> None:
    doc = DOC.read_text()
    assert FORMERLY, "the renamed ids are listed"
    for old, new in FORMERLY.items():
        assert new in CHECKS_BY_ID, (old, new)
        assert old not in CHECKS_BY_ID, old  # an old id never names another check
        assert resolve(old) == new and resolve(new) == new
        assert old in CHECKS_BY_ID[new].formerly
        # docs/doctor.md keeps an anchor for the old id, so old links still land.
        assert f'| <a id="{old.lower()}"></a>{old} | {new} |' in doc, old


def test_a_renamed_checks_finding_lists_its_former_id_in_json(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    missing_alarm_firing(s)  # ALM002, formerly MET003
    report = run_checks(s).as_dict()
    (f,) = [f for f in report["findings"] if f["id"] == "ALM002"]
    assert f["formerly"] == ["MET003"]
    # A check never renamed carries no such key: its JSON is as before.
    metric_missing(s)
    report = run_checks(s).as_dict()
    (met,) = [f for f in report["findings"] if f["id"] == "MET001"]
    assert "formerly" not in met


def test_the_registry_refuses_an_id_outside_its_modules_prefix() -> None:
    before = registered()
    with pytest.raises(ValueError, match="ids ECSNNN"):
        check("GPU999", link="instances", severity="error", title="t", requires=(), doc="d")(
            lambda s, c: []
        )
    assert registered() == before
