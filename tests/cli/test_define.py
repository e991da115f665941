"""`ecs-gpu synth` and `ecs-gpu validate` (cli/define.py) through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu import cli
from ecs_gpu.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEMS
from support.examples import EXAMPLES_DIR

G5 = EXAMPLES_DIR / "g5-vllm.toml"
G6E = EXAMPLES_DIR / "g6e-alb-odcr.toml"


def _out(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_synth_writes_the_template_and_prints_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], templates: dict[str, Any]
) -> None:
    out_dir = tmp_path / "out"
    assert cli.main(["synth", str(G5), "-o", str(out_dir)]) == EXIT_OK
    path = out_dir / "vllm-g5.template.json"
    assert path.is_file()
    assert str(path) in _out(capsys)
    assert json.loads(path.read_text(encoding="utf-8")) == templates["g5-vllm.toml"]


def test_synth_prints_a_path_with_brackets_as_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "[red]out"
    assert cli.main(["synth", str(G5), "-o", str(out_dir)]) == EXIT_OK
    path = out_dir / "vllm-g5.template.json"
    assert path.is_file() and str(path) in _out(capsys)


def test_synth_unwritable_out_dir_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    assert cli.main(["synth", str(G5), "-o", str(blocker / "sub")]) == EXIT_BAD_INPUT
    out = _out(capsys)
    assert "Traceback" not in out and str(blocker) in out and "Fix:" in out


def test_synth_into_a_dangling_symlink_names_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone")
    assert cli.main(["synth", str(G5), "-o", str(link)]) == EXIT_BAD_INPUT
    out = _out(capsys)
    assert f"a symbolic link to {tmp_path / 'gone'}, which does not exist" in out


def test_synth_refuses_a_bad_out_dir_before_synthesizing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ecs_gpu.template.synth

    def no_synth(spec: object) -> None:
        raise AssertionError("synthesized before checking the output directory")

    monkeypatch.setattr(ecs_gpu.template.synth, "synth_template", no_synth)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    assert cli.main(["synth", str(G5), "-o", str(blocker)]) == EXIT_BAD_INPUT
    assert "cannot write the template there" in _out(capsys)


def test_synth_template_path_taken_by_a_directory_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "vllm-g5.template.json").mkdir()
    assert cli.main(["synth", str(G5), "-o", str(tmp_path)]) == EXIT_BAD_INPUT
    out = _out(capsys)
    assert "Traceback" not in out and "cannot write the template there" in out


def test_synth_missing_spec_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.toml"
    assert cli.main(["synth", str(missing), "-o", str(tmp_path)]) == EXIT_BAD_INPUT
    assert "no such spec file" in _out(capsys)


def test_validate_clean_example_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", str(G5)]) == EXIT_OK
    captured = capsys.readouterr()
    assert "clean" in captured.out
    # Standard error is no terminal here: no stage display, nothing extra.
    assert captured.err == ""


def test_validate_bad_spec_exits_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        G5.read_text(encoding="utf-8").replace("gpus_per_task = 1", "gpus_per_task = 3"),
        encoding="utf-8",
    )
    assert cli.main(["validate", str(bad)]) == EXIT_BAD_INPUT
    out = _out(capsys)
    assert "Traceback" not in out
    assert str(bad) in out and "service.gpus_per_task" in out and "Fix:" in out


# The spec layer refuses every image ECS would (spec.image_problem), so a template
# finding now takes an image ecs-gpu itself puts there: the demand sidecar's.
LONG_IMAGE = "registry.example.com/" + "team/" * 50 + "vllm:v1"


def test_validate_real_finding_exits_1_with_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ecs_gpu.contracts import demand_metric

    monkeypatch.setattr(demand_metric, "SIDECAR_IMAGE", LONG_IMAGE)
    assert cli.main(["validate", str(G5)]) == EXIT_PROBLEMS
    out = _out(capsys)
    # The table folds long cells: the source, id and count stay whole.
    assert "│ ecs    │ image │ error" in out and "1 finding(s)" in out
    assert "Traceback" not in out


def test_validate_refuses_a_spec_image_ecs_would_refuse_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "long-image.toml"
    text = G6E.read_text(encoding="utf-8")
    image_line = next(line for line in text.splitlines() if line.startswith("image = "))
    spec.write_text(text.replace(image_line, f'image = "{LONG_IMAGE}"'), encoding="utf-8")
    assert cli.main(["validate", str(spec)]) == EXIT_BAD_INPUT
    out = " ".join(_out(capsys).split())
    assert f"{spec}: service.image = " in out and "ECS allows at most 255" in out


@pytest.mark.parametrize("command", ["synth", "validate"])
def test_help_explains_with_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([command, "--help"]) == EXIT_OK
    out = _out(capsys)
    assert "Example" in out and f"ecs-gpu {command} examples/" in out


def test_synth_out_dash_writes_the_template_to_stdout(
    capsys: pytest.CaptureFixture[str], templates: dict[str, Any]
) -> None:
    assert cli.main(["synth", str(G5), "-o", "-"]) == EXIT_OK
    captured = capsys.readouterr()
    assert json.loads(captured.out) == templates["g5-vllm.toml"]
    assert captured.err == ""  # no stage display off a terminal
    assert not Path("-").exists()


def test_synth_stack_names_the_file_after_the_stack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["synth", str(G5), "-o", str(tmp_path), "--stack", "vllm-g5-blue"]) == EXIT_OK
    path = tmp_path / "vllm-g5-blue.template.json"
    assert path.is_file() and str(path) in _out(capsys)
    assert not (tmp_path / "vllm-g5.template.json").exists()
    assert cli.main(["synth", str(G5), "-o", str(tmp_path), "--stack", "no_underscores"]) == (
        EXIT_BAD_INPUT
    )
    assert "--stack 'no_underscores': not a CloudFormation stack name" in _out(capsys)


def test_synth_refuses_to_write_the_template_over_its_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A spec saved under the template's name, in the output directory.
    spec = tmp_path / "vllm-g5.template.json"
    text = G5.read_text(encoding="utf-8")
    spec.write_text(text, encoding="utf-8")
    assert cli.main(["synth", str(spec), "-o", str(tmp_path)]) == EXIT_BAD_INPUT
    out = _out(capsys)
    assert "is the input SPEC" in out and "Fix:" in out
    assert spec.read_text(encoding="utf-8") == text


def test_synth_interrupted_while_writing_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ecs_gpu.outputs

    def interrupted(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    # Ctrl-C lands after the bytes are written, before the rename.
    monkeypatch.setattr(ecs_gpu.outputs.os, "replace", interrupted)
    assert cli.main(["synth", str(G5), "-o", str(tmp_path)]) == 130
    assert list(tmp_path.iterdir()) == []


def test_validate_json_dash_writes_only_json_to_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["validate", str(G5), "--json", "-"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    # The g5 example sets no model_size_gib: one note says what its grace period rests on.
    notes = doc.pop("notes")
    assert doc == {"spec": str(G5), "ok": True, "findings": []}
    assert [(n["source"], n["id"]) for n in notes] == [("startup", "model-size-unset")]
    assert not Path("-").exists()


def test_validate_json_file_holds_the_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ecs_gpu.contracts import demand_metric

    monkeypatch.setattr(demand_metric, "SIDECAR_IMAGE", LONG_IMAGE)
    out = tmp_path / "findings.json"
    assert cli.main(["validate", str(G5), "--json", str(out)]) == EXIT_PROBLEMS
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["ok"] is False
    assert [(f["source"], f["id"]) for f in doc["findings"]] == [("ecs", "image")]
    assert doc["findings"][0]["resource"].endswith("/ContainerDefinitions/1/Image")
    assert "finding(s)" in _out(capsys)  # the table is still shown


def test_validate_json_over_the_spec_is_refused_before_synth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ecs_gpu.template.validate

    def no_validate(*_: object, **__: object) -> None:
        raise AssertionError("validated before checking --json")

    monkeypatch.setattr(ecs_gpu.template.validate, "validate", no_validate)
    spec = tmp_path / "spec.json"
    spec.write_text(G5.read_text(encoding="utf-8"), encoding="utf-8")
    assert cli.main(["validate", str(spec), "--json", str(spec)]) == EXIT_BAD_INPUT
    assert "is the input SPEC" in _out(capsys)
    assert cli.main(["validate", str(G5), "--json", str(tmp_path / "no-dir" / "f.json")]) == (
        EXIT_BAD_INPUT
    )
    assert "--json" in _out(capsys)


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (('"vllm/vllm-openai:v0.11.0"', '"$(reboot)"'), "service.image"),
        (('"vllm/vllm-openai:v0.11.0"', "\"vllm/vllm-openai:'v1'\""), "service.image"),
        (('"/root/.cache/huggingface"', '"${Token[TOKEN.1]}"'), "service.environment.HF_HOME"),
        (('"--max-model-len"', '"#{Token[TOKEN.7]}"'), "service.command[2]"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["synth", "-o", "-"],
        ["validate"],
        ["plan"],
        ["diff", "--region", "us-east-1"],
        ["deploy", "--yes", "--region", "us-east-1"],
    ],
)
def test_every_command_that_builds_a_template_refuses_what_ecs_or_cdk_would(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: tuple[str, str],
    key: str,
    command: list[str],
) -> None:
    # The spec layer refuses it, naming file and key, before CDK or AWS is reached.
    spec = tmp_path / "bad.toml"
    spec.write_text(G5.read_text(encoding="utf-8").replace(*edit), encoding="utf-8")
    assert cli.main([command[0], str(spec), *command[1:]]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert captured.out == ""
    err = " ".join(captured.err.split())
    assert f"{spec}: {key} = " in err and "Fix:" in err
    assert "internal error" not in err and "Traceback" not in err


def test_validate_names_an_unexpanded_variable_and_prints_no_cdk_report(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """CDK's built-in template validation printed its own report from Node (a file in
    the deleted scratch folder, CDK's feature flags); the spec's note says what matters."""
    text = (EXAMPLES_DIR / "g5-vllm.toml").read_text()
    assert 'HF_HOME = "/root/.cache/huggingface"' in text
    spec = tmp_path / "envsub.toml"
    spec.write_text(text.replace('HF_HOME = "/root/.cache/huggingface"', 'HF_HOME = "${HOME}/x"'))
    assert cli.main(["validate", str(spec)]) == EXIT_OK
    seen = capfd.readouterr()
    shown = " ".join((seen.out + seen.err).split())
    assert "service.environment.HF_HOME = '${HOME}/x': ${HOME} stays as written" in shown
    assert "Template validation" not in shown and "validation-report.json" not in shown
