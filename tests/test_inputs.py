"""The one reader of a user's file, and the three inputs that go through it.

A FIFO with no writer would block a plain open() forever and /dev/zero would
fill memory; both are refused before any byte is read, so these tests finish
at once when the reader works.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest

from ecs_gpu.cli import main
from ecs_gpu.errors import EXIT_BAD_INPUT, BadInputError
from ecs_gpu.inputs import read_bytes, read_text

EXAMPLE = Path(__file__).parents[1] / "examples" / "g5-vllm.toml"
KW = {"option": "--thing", "kind": "thing", "limit": 64, "fix": "make it smaller"}


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return p


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"x" * 64)
    assert read_bytes(p, **KW) == b"x" * 64


@pytest.mark.parametrize(
    ("make", "what"),
    [
        ("fifo", "is a named pipe (FIFO), not a thing file"),
        ("dev", "is a device, not a thing file"),
        ("dir", "is a folder, not a thing file"),
    ],
)
def test_non_regular_files_are_refused_before_reading(
    tmp_path: Path, fifo: Path, make: str, what: str
) -> None:
    path = {"fifo": fifo, "dev": Path("/dev/zero"), "dir": tmp_path}[make]
    with pytest.raises(BadInputError) as exc:
        read_bytes(path, **KW)
    assert exc.value.exit_code == EXIT_BAD_INPUT
    assert exc.value.message.startswith(f"--thing {path}: {what}. Fix: ")


def test_missing_and_oversized_files(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"^--thing .*nope: no such thing file\. Fix: "):
        read_bytes(tmp_path / "nope", **KW)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 65)
    with pytest.raises(BadInputError, match=r"larger than 64 bytes.*Fix: make it smaller\.$"):
        read_bytes(big, **KW)


def test_text_drops_a_bom_and_names_a_bad_byte(tmp_path: Path) -> None:
    p = tmp_path / "t"
    p.write_bytes(codecs.BOM_UTF8 + "a = 'é'\n".encode())
    assert read_text(p, **KW) == "a = 'é'\n"
    p.write_bytes(codecs.BOM_UTF8 + b"a\nb\xff\n")
    with pytest.raises(BadInputError) as exc:
        read_text(p, **KW)
    # The offset counts the BOM: it is the file's byte, as a hex editor shows it.
    assert "not UTF-8 text: byte 6 (line 2) is 0xff" in exc.value.message


# --- through the commands ---------------------------------------------------------


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    c = capsys.readouterr()
    assert "Traceback" not in c.out + c.err
    return " ".join(c.err.split())


@pytest.mark.parametrize("source", ["fifo", "/dev/zero"])
def test_validate_refuses_a_spec_that_is_no_file(
    fifo: Path, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    path = str(fifo) if source == "fifo" else source
    assert main(["validate", path]) == EXIT_BAD_INPUT
    assert f"SPEC {path}: is a " in _err(capsys)


@pytest.mark.parametrize("source", ["fifo", "/dev/zero"])
def test_simulate_refuses_a_trace_that_is_no_file(
    fifo: Path, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    path = str(fifo) if source == "fifo" else source
    assert main(["simulate", str(EXAMPLE), "--trace", path]) == EXIT_BAD_INPUT
    assert f"--trace {path}: is a " in _err(capsys)


@pytest.mark.parametrize("source", ["fifo", "/dev/zero"])
def test_doctor_refuses_a_snapshot_that_is_no_file(
    fifo: Path, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    path = str(fifo) if source == "fifo" else source
    assert main(["doctor", "--from-snapshot", path]) == EXIT_BAD_INPUT
    assert f"--from-snapshot {path}: is a " in _err(capsys)


@pytest.mark.parametrize(
    "value", ["[" * 10_000 + "]" * 10_000, "{ a = " * 5_000 + "1" + " }" * 5_000]
)
def test_validate_refuses_deep_nesting_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    p = tmp_path / "deep.toml"
    p.write_text(f"[service]\nname = {value}\n", encoding="utf-8")
    assert main(["validate", str(p)]) == EXIT_BAD_INPUT
    assert f"{p}: arrays or inline tables nested too deeply to read" in _err(capsys)


def test_a_spec_saved_with_a_bom_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "bom.toml"
    p.write_bytes(codecs.BOM_UTF8 + EXAMPLE.read_bytes())
    # simulate reads the spec and runs without CDK: the quickest command that uses it all.
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp_s,requests\n0,60\n60,60\n", encoding="utf-8")
    assert main(["simulate", str(p), "--trace", str(trace)]) == 0
    assert "invalid statement" not in _err(capsys)
