"""Every file of this repository that the docs name by path exists.

Modules move; a doc that still points at the old path sends the next
maintainer nowhere. A path in backticks or plain text counts when it starts at
the repository's root (src/, tests/, benchmarks/, scripts/, examples/) or at
the package (a layer folder such as infra/ or checks/, as the docs write them).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "ecs_gpu"
ROOTS = ("src", "tests", "benchmarks", "scripts", "examples")
LAYERS = tuple(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
# A file name with one of these suffixes after a path of folders.
PATH = re.compile(r"(?<![\w./-])((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.(?:py|toml|md|json|sh|csv))")
# Other projects' files the docs cite (the reference module's scripts, moto's parser).
ELSEWHERE = ("scripts/al2023/", "scripts/check-update-security.sh", "scripts/enable-ecs-")
DOCS = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])


def _ours(path: str) -> Path | None:
    """Where ``path`` is in this repository, or None when it names another project's file."""
    if path.startswith(ELSEWHERE):
        return None
    first = path.split("/", 1)[0]
    if first in ROOTS:
        return ROOT / path
    if first in LAYERS:
        return PACKAGE / path
    return None


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    missing = []
    for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        for path in PATH.findall(line):
            where = _ours(path)
            if where is not None and not where.exists():
                missing.append(f"{doc.name}:{n} {path}")
    assert not missing, missing


def test_the_scanner_finds_both_forms() -> None:
    line = "see `infra/iam.py` and tests/sim/test_fleet.py, not moto's `cloudformation/parsing.py`"
    assert PATH.findall(line) == [
        "infra/iam.py",
        "tests/sim/test_fleet.py",
        "cloudformation/parsing.py",
    ]
    assert _ours("cloudformation/parsing.py") is None
    assert _ours("infra/iam.py") == PACKAGE / "infra" / "iam.py"
