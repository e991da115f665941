"""outputs.py: '-' is stdout, outputs never overwrite inputs or each other, writes are atomic
and keep the umask or the replaced file's mode; a failed write is exit 2."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ecs_gpu import outputs
from ecs_gpu.errors import EXIT_BAD_INPUT, BadInputError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "g5-vllm.toml"


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


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def test_synth_writes_with_the_users_umask(tmp_path: Path, umask_027: None) -> None:
    """The real command: the template is 0640 under umask 027 (mkstemp made it 0600)."""
    from ecs_gpu.cli import main

    assert main(["synth", str(EXAMPLE), "-o", str(tmp_path)]) == 0
    (written,) = tmp_path.glob("*.template.json")
    assert stat.S_IMODE(written.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == [written.name]  # no temporary left


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o664])
def test_overwriting_an_output_keeps_its_mode(tmp_path: Path, mode: int, umask_027: None) -> None:
    out = tmp_path / "summary.json"
    out.write_text("old\n")
    out.chmod(mode)
    outputs.write_text(out, "new\n", "--json")
    assert out.read_text() == "new\n"
    assert stat.S_IMODE(out.stat().st_mode) == mode


def test_json_dash_onto_a_full_disk_is_bad_input_naming_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Standard output on /dev/full: exit 2 naming --json and the OS error, no internal error."""
    from ecs_gpu.cli import main

    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp_s,requests\n" + "".join(f"{60 * i},30\n" for i in range(10)))
    with open("/dev/full", "w") as full:
        monkeypatch.setattr(sys, "stdout", full)
        code = main(["simulate", str(EXAMPLE), "--trace", str(trace), "--json", "-"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert "--json -: cannot write to standard output: No space left on device" in err
    assert "internal error" not in err


def test_a_read_only_output_is_replaced_and_stays_read_only(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    out.write_text("old\n")
    out.chmod(0o444)
    seen: list[int] = []

    def write(tmp: Path) -> None:
        # A non-root user can write the temporary only if it is not read-only yet.
        seen.append(stat.S_IMODE(tmp.stat().st_mode))
        tmp.write_text("new\n")

    outputs.write_with(out, "--json", write)
    assert seen and seen[0] & stat.S_IWUSR
    assert out.read_text() == "new\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o444


def test_json_dash_into_a_closed_pipe_ends_quietly_with_141() -> None:
    """``ecs-gpu catalog --json | (exit 0)``: the reader went away; not 'bad input'."""
    import subprocess

    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ecs_gpu", "catalog", "--json"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def test_a_named_pipe_is_written_in_place_not_replaced_by_a_file(tmp_path: Path) -> None:
    """Renaming a temporary over a pipe or device (``-o /dev/null`` as root) would
    replace it with a regular file."""
    pipe = tmp_path / "out.json"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)  # so the writer's open does not block
    try:
        outputs.check_output(pipe, "--json", suffix=".json")
        outputs.write_text(pipe, '{"ok": true}\n', "--json")
        assert stat.S_ISFIFO(pipe.stat().st_mode)
        assert os.read(reader, 100) == b'{"ok": true}\n'
    finally:
        os.close(reader)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_dev_null_is_an_output_whatever_its_name_or_folder() -> None:
    """/dev is not writable for a user and /dev/null has no .png suffix; neither matters."""
    null = Path(os.devnull)
    outputs.check_output(null, "--plot", suffix=".png")
    outputs.write_text(null, "discarded\n", "--json")
    assert stat.S_ISCHR(null.stat().st_mode)


def test_an_output_through_a_symlink_writes_its_target_and_keeps_the_link(
    tmp_path: Path,
) -> None:
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    outputs.write_text(link, "new\n", "--json")
    assert link.is_symlink()
    assert target.read_text() == "new\n"


def test_plan_can_discard_its_plot_and_json_to_dev_null(capsys: pytest.CaptureFixture[str]) -> None:
    from ecs_gpu.cli import main

    rc = main(["plan", str(EXAMPLE), "-o", os.devnull, "--json", os.devnull])
    assert rc == 0, capsys.readouterr().err
    assert stat.S_ISCHR(Path(os.devnull).stat().st_mode)


def test_dev_stdout_on_a_pipe_is_written_through_not_resolved() -> None:
    """/dev/stdout links to /proc/self/fd/1, which names a pipe as ``pipe:[N]``: following
    the link by name would write a stray file, not the pipe."""
    import subprocess

    code = (
        "from pathlib import Path; from ecs_gpu import outputs; "
        "outputs.write_text(Path('/dev/stdout'), 'through\\n', '--json')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd="/"
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "through\n", "")


@pytest.mark.parametrize(
    ("name", "stream"),
    [("/dev/stdout", "stdout"), ("/dev/stderr", "stderr"), ("LINK", "stdout")],
)
def test_a_standard_stream_by_name_appends_to_the_file_behind_it(
    tmp_path: Path, name: str, stream: str
) -> None:
    """`--json /dev/stdout >> build.json`: resolved to build.json and renamed over, the
    write replaced the file and what the shell had appended to it."""
    import subprocess

    log = tmp_path / "build.json"
    log.write_text("previous line\n")
    if name == "LINK":  # a link the user made to the stream
        (tmp_path / "out.json").symlink_to("/dev/stdout")
        name = str(tmp_path / "out.json")
    code = (
        "from pathlib import Path; from ecs_gpu import outputs; "
        f"outputs.write_text(Path({name!r}), 'new\\n', '--json')"
    )
    with log.open("a") as appended:
        done = subprocess.run(
            [sys.executable, "-c", code], check=False, cwd="/", **{stream: appended}
        )
    assert done.returncode == 0
    assert log.read_text() == "previous line\nnew\n"


def test_a_loop_of_symlinks_is_bad_input_naming_the_option(tmp_path: Path) -> None:
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    with pytest.raises(BadInputError) as exc:
        outputs.check_output(loop, "--json", suffix=".json")
    assert f"--json {loop}: is a loop of symbolic links" in exc.value.message
