"""The check registry: every check on a link of the chain, unique ids, the documented order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ecs_gpu.checks.doctor import CHAIN, CHECKS, CHECKS_BY_ID, check
from ecs_gpu.checks.doctor.registry import registered

DOC = (Path(__file__).resolve().parents[3] / "docs" / "doctor.md").read_text(encoding="utf-8")


def _chain_table() -> list[tuple[str, list[str]]]:
    """(link, check ids) of each row of docs/doctor.md's chain table, in order."""
    rows = re.findall(r"^\| \d+ \| `(\w+)` \| [^|]+ \| ([^|]+) \|$", DOC, flags=re.MULTILINE)
    return [(link, [i.strip() for i in ids.split(",")]) for link, ids in rows]


def _checks_table() -> list[str]:
    """Check ids of docs/doctor.md's check table, in order."""
    return re.findall(r"^\| ([A-Z]+\d{3}) \| (?:error|warning|info) \|", DOC, flags=re.MULTILINE)


def test_every_check_is_on_a_link_of_the_chain_with_a_unique_id() -> None:
    assert CHECKS, "no check registered"
    assert all(c.link in CHAIN for c in CHECKS), [(c.id, c.link) for c in CHECKS]
    ids = [c.id for c in CHECKS]
    assert len(ids) == len(set(ids)) == len(CHECKS_BY_ID)
    assert CHECKS == registered()


def test_checks_walk_the_links_in_chain_order() -> None:
    rank = list(CHAIN)
    positions = [rank.index(c.link) for c in CHECKS]
    assert positions == sorted(positions)
    # No link of the chain is empty: a link without a check is a dead name.
    assert set(CHAIN) == {c.link for c in CHECKS}


def test_the_order_is_the_documented_one() -> None:
    assert _chain_table() == [(link, [c.id for c in CHECKS if c.link == link]) for link in CHAIN]
    assert _checks_table() == [c.id for c in CHECKS]


def test_registry_refuses_a_duplicate_id_and_an_unknown_link() -> None:
    before = registered()
    with pytest.raises(ValueError, match="registered twice"):
        check("ECS001", link="instances", severity="error", title="t", requires=(), doc="d")(
            lambda s, c: []
        )
    with pytest.raises(ValueError, match="not in CHAIN"):
        check("NEW999", link="nowhere", severity="error", title="t", requires=(), doc="d")(
            lambda s, c: []
        )
    assert registered() == before
