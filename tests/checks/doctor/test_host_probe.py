"""Doctor on a snapshot with hostile host probe output (the parser: tests/host/test_probe.py)."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.host import probe as host
from support.snapshots import IID, probe_output


def _gzip_of_zeros(mib: int) -> bytes:
    """A gzip bomb: ``mib`` MiB of zeros, built without holding them."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(2**20)
    return b"".join(c.compress(block) for _ in range(mib)) + c.flush()


def _section(data: bytes) -> str:
    return "encoding: gzip+base64\n" + base64.b64encode(data).decode()


def test_a_gzip_bomb_in_a_snapshot_is_a_host001_finding(
    healthy: Callable[[], dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ecs_gpu.checks.snapshot import dumps
    from ecs_gpu.cli import main

    snap = healthy()
    big = _gzip_of_zeros(host.MAX_NVIDIA_SMI_XML // 2**20 + 1)
    probe = snap["host_probes"][IID]
    probe["StandardOutputContent"] = probe_output(nvidia_smi=(_section(big), 0))
    path = tmp_path / "bomb.json"
    path.write_text(dumps(snap))
    assert main(["doctor", "--from-snapshot", str(path), "--json", "-"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["id"] for f in findings] == ["HOST001"]
    assert "decompresses to more than 16 MiB" in findings[0]["evidence"][0]["value"]
