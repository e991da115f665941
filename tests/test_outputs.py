"""outputs.py: '-' is stdout, outputs never overwrite inputs or each other, writes are atomic."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecs_gpu import outputs
from ecs_gpu.errors import BadInputError


def test_dash_is_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    outputs.write_text(Path("-"), '{"a": 1}\n', "--json")
    assert capsys.readouterr().out == '{"a": 1}\n'
    assert not Path("-").exists()


def test_dash_refused_for_binary_suffix() -> None:
    with pytest.raises(BadInputError, match="--plot -: writes a PNG"):
        outputs.check_output(Path("-"), "--plot", ".png")


def test_output_equal_to_input_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("t\n")
    with pytest.raises(BadInputError, match=r"--timeline .*trace.csv: is the input TRACE"):
        outputs.check_distinct({"TRACE": trace}, {"--timeline": tmp_path / "." / "trace.csv"})
    assert trace.read_text() == "t\n"


def test_two_outputs_on_one_path_are_refused(tmp_path: Path) -> None:
    p = tmp_path / "out.json"
    with pytest.raises(BadInputError, match="--json and --timeline: both write"):
        outputs.check_distinct({}, {"--json": p, "--timeline": p})
    with pytest.raises(BadInputError, match="both write -"):
        outputs.check_distinct({}, {"--json": Path("-"), "--other": Path("-")})
    outputs.check_distinct({"SPEC": tmp_path / "s.toml"}, {"--json": Path("-"), "--plot": p})


def test_interrupted_write_leaves_old_file_and_no_temporary(tmp_path: Path) -> None:
    p = tmp_path / "summary.json"
    p.write_text("old\n")

    def boom(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        outputs.write_with(p, "--json", boom)
    assert p.read_text() == "old\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["summary.json"]


def test_write_text_replaces_atomically(tmp_path: Path) -> None:
    p = tmp_path / "summary.json"
    outputs.write_text(p, "new\n", "--json")
    assert p.read_text() == "new\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["summary.json"]


def test_unwritable_folder_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="does not exist"):
        outputs.check_output(tmp_path / "nope" / "x.json", "--json")
    with pytest.raises(BadInputError, match="is a folder"):
        outputs.check_output(tmp_path, "--json")
