"""The stage display of synth and validate: on a terminal only, one line per stage."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

import ecs_gpu.template.validate
from ecs_gpu.cli import define, main
from ecs_gpu.cli.stages import STAGE_TEXT, stage_status
from ecs_gpu.template.synth import StageFn
from ecs_gpu.template.validate import STAGES, ValidationReport

G5 = Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml"


def _console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=terminal, width=100), buf


def test_every_stage_validate_announces_has_words() -> None:
    assert set(STAGES) <= set(STAGE_TEXT)


def test_each_stage_is_shown_on_a_terminal_as_it_starts() -> None:
    console, buf = _console(terminal=True)
    with stage_status(console) as show:
        assert show is not None
        for stage in STAGES:
            before = len(buf.getvalue())
            show(stage)
            # Drawn at once, not at the next refresh tick.
            assert STAGE_TEXT[stage] in buf.getvalue()[before:]


def test_nothing_is_shown_off_a_terminal() -> None:
    console, buf = _console(terminal=False)
    with stage_status(console) as show:
        assert show is None
    assert buf.getvalue() == ""


def _fake_validate(told: list[str]) -> object:
    def fake(spec: object, *, path: str, stage: StageFn | None = None) -> ValidationReport:
        for s in STAGES:
            told.append(s)
            if stage is not None:
                stage(s)
        return ValidationReport(template={"Resources": {}})

    return fake


def test_validate_command_shows_the_stages_on_a_terminal_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    told: list[str] = []
    monkeypatch.setattr(ecs_gpu.template.validate, "validate", _fake_validate(told))
    console, buf = _console(terminal=True)
    monkeypatch.setattr(define, "err_console", console)
    assert main(["validate", str(G5)]) == 0
    assert told == list(STAGES)
    shown = buf.getvalue()
    assert all(STAGE_TEXT[s] in shown for s in STAGES)
    assert "clean:" in capsys.readouterr().out  # the result itself is on standard output


def test_validate_command_prints_no_stage_to_a_pipe(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    told: list[str] = []
    monkeypatch.setattr(ecs_gpu.template.validate, "validate", _fake_validate(told))
    assert main(["validate", str(G5)]) == 0
    assert told == list(STAGES)
    assert capsys.readouterr().err == ""
