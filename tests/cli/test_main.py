"""The CLI's last line of defence: exit codes and no tracebacks."""

from __future__ import annotations

import errno
import io
import sys
from contextlib import redirect_stderr
from pathlib import Path

import pytest
from botocore import exceptions as bx
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ecs_gpu import cli
from ecs_gpu.errors import (
    EXIT_AWS,
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_PROBLEMS,
    BadInputError,
)
from example_specs import G5_GPU, scaled_to_zero


def test_catalog_lists_every_family(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["catalog"]) == 0
    out = capsys.readouterr().out
    for name in ("g5.xlarge", "g6e.12xlarge", "p5.48xlarge", "p6-b200.48xlarge"):
        assert name in out
    assert "Refused families" in out


def test_unknown_command_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["no-such-command"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "No such command" in err
    assert "Traceback" not in err


def _boom(exc: BaseException) -> None:
    @cli.app.command("boom-test", hidden=True)
    def boom() -> None:
        raise exc


@pytest.mark.parametrize(
    ("exc", "code", "needle"),
    [
        (BadInputError("spec.toml: service.name = 'X': bad. Fix: y."), EXIT_BAD_INPUT, "Fix: y"),
        (bx.NoCredentialsError(), EXIT_AWS, "credentials"),
        (bx.EndpointConnectionError(endpoint_url="http://127.0.0.1:9"), EXIT_AWS, "cannot reach"),
        (
            bx.ClientError(
                {"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeServices"
            ),
            EXIT_AWS,
            "DescribeServices",
        ),
        (RuntimeError("kaput"), EXIT_PROBLEMS, "internal error"),
        # Ctrl-C: the documented 130, not click's "Aborted!" with 1.
        (KeyboardInterrupt(), 130, "interrupted"),
        # Brackets in AWS text reach the user (rich would read them as markup).
        (
            bx.ClientError(
                {"Error": {"Code": "AccessDenied", "Message": "need [ecs:describeservices]"}},
                "DescribeServices",
            ),
            EXIT_AWS,
            "need [ecs:describeservices]",
        ),
    ],
)
def test_errors_map_to_exit_codes_without_traceback(
    exc: BaseException,
    code: int,
    needle: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ECS_GPU_DEBUG", raising=False)
    _boom(exc)
    try:
        assert cli.main(["boom-test"]) == code
    finally:
        cli.app.registered_commands = [
            c for c in cli.app.registered_commands if c.name != "boom-test"
        ]
    err = capsys.readouterr().err
    assert needle in err
    assert "Traceback" not in err


def test_error_text_in_brackets_reaches_the_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Spec messages name sections as "[service]"; printed as rich markup they
    # vanished ("Fix: add a  section").
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    assert cli.main(["synth", str(empty), "-o", str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    for section in ("service", "capacity", "scaling"):
        assert f"Fix: add a [{section}] section" in err


@pytest.mark.parametrize(
    "command", ["synth", "validate", "diff", "deploy", "plan", "simulate", "compare"]
)
def test_a_woken_task_target_tracking_would_stop_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # A GPU signal at zero with no request-count policy: the idle hosts' 0 % would
    # set the woken task back to 0 (wake.unprotected_wake). Refused naming the file,
    # before synth and before any AWS call (no credentials here: deploy would be exit 3).
    spec = tmp_path / "zero.toml"
    spec.write_text(
        scaled_to_zero(G5_GPU) + '\n[load_balancer]\nscheme = "internal"\n', encoding="utf-8"
    )
    extra = {
        "synth": ["-o", str(tmp_path / "out")],
        "simulate": ["--trace", "servegen-m-mid"],
        # compare needs two specs: the refused one is named whichever comes first.
        "compare": [str(G5_GPU), "--trace", "servegen-m-mid"],
    }
    argv = [command, str(spec), *extra.get(command, [])]
    assert cli.main(argv) == EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert f"{spec}: scaling.min_tasks = 0: scales to zero on a GPU signal" in err
    assert "request_count_target" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.characters(categories=("L", "N", "P", "S", "Zs")), min_size=1, max_size=120)
)
@example("Fix: add a [service] section; image 'repo:warning:' [/]")
# rich's escape leaves "\\[" as is and the markup then dropped the backslash.
@example("C:\\\\models\\\\[")
def test_any_error_text_reaches_the_user_verbatim(text: str) -> None:
    # Messages quote user values ("[service]", ":tag:", ARNs); the terminal
    # must show them as written, not as rich markup or emoji codes.
    _boom(BadInputError(text))
    out = io.StringIO()
    try:
        with redirect_stderr(out):
            assert cli.main(["boom-test"]) == EXIT_BAD_INPUT
    finally:
        cli.app.registered_commands = [
            c for c in cli.app.registered_commands if c.name != "boom-test"
        ]
    assert text.strip() in out.getvalue()


# A Ctrl-C at a fixed point of the shutdown: an atexit hook registered after
# jsii's (so it runs first) signals the process, and jsii's hook, which stops
# the Node process, runs next. No timing: the signal is sent from inside.
_CTRL_C_AT_EXIT = """
import atexit, os, signal, sys
import ecs_gpu.template.synth
from ecs_gpu.cli import main

real = ecs_gpu.template.synth.synth_template

def synth_then_arm(*args, **kwargs):
    template = real(*args, **kwargs)  # jsii's Node runs now; its atexit hook is registered
    import jsii._runtime  # noqa: F401 - proves jsii is what was started
    atexit.register(os.kill, os.getpid(), signal.SIGINT)
    return template

ecs_gpu.template.synth.synth_template = synth_then_arm
sys.argv = ["ecs-gpu", *sys.argv[1:]]
main()
"""


def test_ctrl_c_while_jsii_shuts_down_exits_130_without_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    spec = Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml"
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AT_EXIT, "synth", str(spec), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().endswith("interrupted.")
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    # The command itself had finished: its template is whole.
    assert (out / "vllm-g5.template.json").is_file()


class _ClosedPipe(io.StringIO):
    """Standard output whose reader has gone (``| head -0``): every write fails with EPIPE."""

    def write(self, s: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def test_a_closed_stdout_exits_141_quietly_not_problems_found(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same result with a reader: 0 (catalog prints a table).
    assert cli.main(["catalog"]) == 0
    table = capsys.readouterr().out
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert cli.main(["catalog"]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""  # quiet: nothing on stderr
    # The next command in this process prints again, and only its own output
    # (rich's default went quiet for good and kept the unwritten table).
    monkeypatch.undo()
    assert cli.main(["catalog"]) == 0
    assert capsys.readouterr().out == table


def test_an_escaped_broken_pipe_is_141_not_an_internal_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _boom(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    assert cli.main(["boom-test"]) == EXIT_BROKEN_PIPE
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["catalog", "--json"], ["catalog", "--json", "-"]),
        (
            ["simulate", "s.toml", "--json", "--seed", "1"],
            ["simulate", "s.toml", "--json", "-", "--seed", "1"],
        ),
        (["deploy", "s.toml", "--json", "-y"], ["deploy", "s.toml", "--json", "-", "-y"]),
        # A value given stays the value.
        (
            ["validate", "s.toml", "--json", "out.json"],
            ["validate", "s.toml", "--json", "out.json"],
        ),
        (["validate", "s.toml", "--json", "-"], ["validate", "s.toml", "--json", "-"]),
        (["validate", "s.toml", "--json=f.json"], ["validate", "s.toml", "--json=f.json"]),
        # After "--" nothing is an option.
        (["validate", "--", "--json"], ["validate", "--", "--json"]),
    ],
)
def test_a_bare_json_means_standard_output(argv: list[str], parsed: list[str]) -> None:
    assert cli.with_optional_values(argv) == parsed


@pytest.mark.parametrize("tail", [["--json"], ["--json", "-"]])
def test_catalog_json_on_stdout(tail: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from ecs_gpu import catalog

    assert cli.main(["catalog", *tail]) == 0
    doc = json.loads(capsys.readouterr().out)  # the JSON alone, no table
    assert [t["name"] for t in doc["instance_types"]] == list(catalog.CATALOG)
    g5 = next(t for t in doc["instance_types"] if t["name"] == "g5.xlarge")
    assert (
        g5["gpus"] == 1
        and g5["awsvpc_task_slots"] == catalog.CATALOG["g5.xlarge"].awsvpc_task_slots
    )
    assert {r["family"]: r["reason"] for r in doc["refused_families"]} == catalog.REFUSED_FAMILIES
    assert doc["price_date"] == catalog.PRICE_DATE


def test_catalog_json_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    out = tmp_path / "catalog.json"
    assert cli.main(["catalog", "--json", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert "g5.xlarge" in {t["name"] for t in json.loads(out.read_text())["instance_types"]}


def test_bare_json_before_another_option_simulates_to_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    spec = Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml"
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp_s,requests\n" + "".join(f"{60 * i},30\n" for i in range(10)))
    assert cli.main(["simulate", str(spec), "--trace", str(trace), "--json", "--seed", "3"]) == 0
    out, err = capsys.readouterr()
    assert "gpu_hours" in json.loads(out)
    assert "GPU-hours" in err  # the table went to stderr
    assert not (Path.cwd() / "-").exists()
