"""The spec's notes reach the user: every command that builds a template prints them.

Each note (spec.NOTES) runs through the real commands: `synth -o -` (notes on
standard error, the template alone on standard output; CDK stubbed, the
template is not what is tested), `diff` and `deploy` (stopped at the first
AWS call), and validate's report. One real `validate` and one real `plan`
show them end to end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.cli import main, terminal
from ecs_gpu.errors import EXIT_AWS, AwsError
from ecs_gpu.spec import parse_spec
from ecs_gpu.spec.rules import NOTES
from ecs_gpu.template.validate import spec_notes
from spec.rules.test_rules import NOTE_CASES

EXAMPLES = Path(__file__).parents[1] / "examples"
STUB_TEMPLATE: dict[str, Any] = {"Resources": {"Stub": {"Type": "AWS::SNS::Topic"}}}


def _spec_file(tmp_path: Path, name: str) -> tuple[Path, list[str]]:
    path = tmp_path / f"{name.strip('_')}.toml"
    path.write_text(NOTE_CASES[name], encoding="utf-8")
    notes = parse_spec(NOTE_CASES[name], str(path)).warnings(str(path))
    assert notes, name
    return path, notes


def _flat(text: str) -> str:
    # rich wraps nothing (soft_wrap), but a test should not depend on it.
    return " ".join(text.split())


def test_every_note_has_a_case() -> None:
    assert {n.__name__ for n in NOTES} == set(NOTE_CASES)


@pytest.mark.parametrize("name", sorted(NOTE_CASES))
def test_synth_to_stdout_prints_each_note_on_stderr_only(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    import ecs_gpu.template.synth

    monkeypatch.setattr(ecs_gpu.template.synth, "synth_template", lambda *_a, **_k: STUB_TEMPLATE)
    path, notes = _spec_file(tmp_path, name)
    assert main(["synth", str(path), "-o", "-"]) == 0
    captured = capsys.readouterr()
    # Standard output is the template and nothing else: it can be piped.
    assert json.loads(captured.out) == STUB_TEMPLATE
    for line in notes:
        assert _flat(f"note: {line}") in _flat(captured.err)


@pytest.mark.parametrize("command", ["diff", "deploy"])
@pytest.mark.parametrize("name", sorted(NOTE_CASES))
def test_diff_and_deploy_print_each_note_before_any_aws_call(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    command: str,
) -> None:
    from ecs_gpu.cli import prelude

    def no_aws(*_: Any) -> Any:
        raise AwsError("stopped before AWS (test)")

    monkeypatch.setattr(prelude, "_aws", no_aws)
    path, notes = _spec_file(tmp_path, name)
    extra = ["--yes"] if command == "deploy" else []
    assert main([command, str(path), *extra]) == EXIT_AWS
    err = _flat(capsys.readouterr().err)
    for line in notes:
        assert _flat(f"note: {line}") in err
    assert "stopped before AWS" in err


# Notes on what the simulator cannot run: the spec deploys, but simulate and
# compare refuse (exit 2) naming this key.
SIMULATOR_REFUSES = {"_spot_unpriced": "spot_discount_percent"}


@pytest.mark.parametrize("command", ["simulate", "compare"])
@pytest.mark.parametrize("name", sorted(NOTE_CASES))
def test_simulate_and_compare_print_each_note_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    path, notes = _spec_file(tmp_path, name)
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp_s,requests\n0,60\n60,60\n", encoding="utf-8")
    specs = [str(path)] if command == "simulate" else [str(path), str(EXAMPLES / "g5-vllm.toml")]
    code = main([command, *specs, "--trace", str(trace), "--json", "-"])
    captured = capsys.readouterr()
    if name in SIMULATOR_REFUSES:
        # The note says why before the run refuses: it names the key that fixes it.
        assert code == 2 and SIMULATOR_REFUSES[name] in captured.err
    else:
        assert code == 0
        json.loads(captured.out)  # standard output is the JSON alone
    for line in notes:
        assert _flat(f"note: {line}") in _flat(captured.err)


@pytest.mark.parametrize("name", sorted(NOTE_CASES))
def test_validate_reports_each_note(name: str) -> None:
    spec = parse_spec(NOTE_CASES[name], "n.toml")
    found = spec_notes(spec, "n.toml")
    assert [f.message for f in found] == spec.warnings("n.toml")
    assert {(f.source, f.severity) for f in found} == {("spec", "warning")}
    assert name.strip("_").replace("_", "-") in {f.id for f in found}


OPEN_G5 = (EXAMPLES / "g5-vllm.toml").read_text(encoding="utf-8") + (
    '\n[load_balancer]\nscheme = "internet-facing"\ningress_cidrs = ["0.0.0.0/0"]\n'
)


def test_validate_prints_notes_in_the_table_and_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "open.toml"
    spec.write_text(OPEN_G5, encoding="utf-8")
    js = tmp_path / "findings.json"
    code = main(["validate", str(spec), "--json", str(js)])
    out = _flat(capsys.readouterr().out)
    assert code == 0, out  # notes never fail validate
    expected = parse_spec(OPEN_G5, str(spec)).warnings(str(spec))
    assert len(expected) == 2  # open to 0.0.0.0/0, and plain HTTP
    for line in expected:
        assert _flat(f"note: {line}") in out
    doc = json.loads(js.read_text(encoding="utf-8"))
    spec_ids = [n["id"] for n in doc["notes"] if n["source"] == "spec"]
    assert spec_ids == ["open-to-the-internet", "plain-http-on-the-internet"]
    assert [n["message"] for n in doc["notes"] if n["source"] == "spec"] == expected


def test_plan_prints_the_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "open.toml"
    spec.write_text(OPEN_G5, encoding="utf-8")
    code = main(["plan", str(spec), "-o", str(tmp_path / "p.png"), "--days", "0.1"])
    out = _flat(capsys.readouterr().out)
    assert code == 0, out
    for line in parse_spec(OPEN_G5, str(spec)).warnings(str(spec)):
        assert _flat(f"note: {line}") in out


def test_print_notes_is_the_one_renderer(capsys: pytest.CaptureFixture[str]) -> None:
    # A note holding "[service]" must print as written, not be read as markup.
    terminal.print_notes(["a.toml: [service] x = 1: y. Fix: z."])
    assert capsys.readouterr().err == "note: a.toml: [service] x = 1: y. Fix: z.\n"
