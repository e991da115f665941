"""The ``ecs-gpu`` command line: parse, call the library, render.

Each command is a function in the module of its group (define, predict,
preflight, deploy, destroy, doctor, verify_*); :data:`COMMANDS` and
:data:`VERIFY_COMMANDS` name them, in the order of ``ecs-gpu --help``, and
register them on :data:`app`. :func:`main` turns every error into a message
and a documented exit code (0 ok, 1 problems found, 2 bad input, 3 AWS
unreachable or access denied, 130 interrupted, 141 standard output closed
early); a user never sees a traceback unless ECS_GPU_DEBUG=1.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Annotated, Final

import typer

from ecs_gpu.cli import (
    define,
    deploy,
    destroy,
    doctor,
    predict,
    preflight,
    verify_metrics,
    verify_scaling,
    verify_wake,
)
from ecs_gpu.cli.options import OPTIONAL_VALUES
from ecs_gpu.cli.terminal import err_console, say
from ecs_gpu.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_PROBLEMS,
    EcsGpuError,
)
from ecs_gpu.outputs import STDOUT

app = typer.Typer(
    name="ecs-gpu",
    help=(
        "GPU inference services on Amazon ECS that size themselves.\n\n"
        "Define a service in one TOML spec, predict what it costs and how fast it scales, "
        "then deploy, verify and diagnose it.\n\n"
        "Exit codes: 0 ok, 1 problems found, 2 bad input, 3 AWS unreachable or access denied, "
        "130 interrupted, 141 output closed early (a broken pipe)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


# Every command: the name a user types and the function it runs, from the module
# of its group, in the order of `ecs-gpu --help`: define, predict, check, operate,
# diagnose. A new command is a function in its group's module and a row here.
COMMANDS: Final[tuple[tuple[str, Callable[..., None]], ...]] = (
    ("catalog", define.catalog_cmd),
    ("synth", define.synth_cmd),
    ("validate", define.validate_cmd),
    ("traces", predict.traces_cmd),
    ("simulate", predict.simulate_cmd),
    ("compare", predict.compare_cmd),
    ("plan", predict.plan_cmd),
    ("preflight", preflight.preflight_cmd),
    ("diff", deploy.diff_cmd),
    ("deploy", deploy.deploy_cmd),
    ("destroy", destroy.destroy_cmd),
    ("doctor", doctor.doctor_cmd),
)

verify_app = typer.Typer(
    name="verify",
    help=(
        "Prove a deployed service works: the GPU metric (and, for a spec that scales on "
        "concurrency, the sidecars' concurrency metric) lands (verify metrics), the "
        "scaling loop moves (verify scaling), and a service at zero tasks wakes on a "
        "request (verify wake).\n\n"
        "Examples:\n\n"
        "    ecs-gpu verify metrics examples/g5-vllm.toml --timeout 900\n\n"
        "    ecs-gpu verify scaling examples/g5-vllm.toml --yes"
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
)

# `ecs-gpu verify ...`, listed after the commands.
VERIFY_COMMANDS: Final[tuple[tuple[str, Callable[..., None]], ...]] = (
    ("metrics", verify_metrics.verify_metrics_cmd),
    ("scaling", verify_scaling.verify_scaling_cmd),
    ("wake", verify_wake.verify_wake_cmd),
)

for _name, _run in COMMANDS:
    app.command(_name)(_run)
for _name, _run in VERIFY_COMMANDS:
    verify_app.command(_name)(_run)
app.add_typer(verify_app, name="verify")


def _print_version(value: bool) -> None:
    if value:
        from ecs_gpu.aws.deploy import ecs_gpu_version

        print(f"ecs-gpu {ecs_gpu_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed ecs-gpu version and exit.",
        ),
    ] = False,
) -> None:
    """GPU inference services on Amazon ECS that size themselves."""


def _aws_exit(exc: BaseException) -> int | None:
    """Report a botocore error that escaped a command; its exit code, or None if not one.

    The mapping itself is :func:`ecs_gpu.aws.errors.translate`, the same one
    every AWS call goes through, so a denial reads the same wherever it surfaces.
    """
    try:
        from botocore import exceptions as bx

        from ecs_gpu.aws.errors import translate
    except ImportError:  # pragma: no cover - botocore is a dependency
        return None
    if not isinstance(exc, bx.ClientError | bx.BotoCoreError):
        return None
    err = translate(exc)
    if not isinstance(err, EcsGpuError):  # pragma: no cover - translate maps every botocore error
        return None
    say("error:", "red", err.message)
    return err.exit_code


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it was raised from or while handling."""
    seen: BaseException | None = exc
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def _from_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while handling an uncaught KeyboardInterrupt."""
    return any(isinstance(e, KeyboardInterrupt) for e in _causes(exc))


def _stdout_closed(exc: BaseException) -> bool:
    """Whether ``exc`` comes from writing to a closed standard output (a broken pipe).

    click turns that into a plain exit 1 (SystemExit raised while handling the
    EPIPE OSError), which would read as "problems found".
    """
    return any(isinstance(e, OSError) and e.errno == errno.EPIPE for e in _causes(exc))


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so nothing flushed later can fail again.

    The interpreter flushes stdout once more at exit; into a closed pipe that
    prints "Exception ignored ... BrokenPipeError" and exits 120 (the Python
    documentation's note on SIGPIPE recommends exactly this).
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's capture): nothing left to flush
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _flush_stdout() -> bool:
    """Flush what is still buffered for standard output; False if the reader is gone."""
    try:
        sys.stdout.flush()
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        return False
    return True


class _ExitState:
    """Whether a Ctrl-C came after the command, while the process shut down."""

    interrupted = False
    reported = False


def _note_ctrl_c(signum: int, frame: FrameType | None) -> None:
    _ExitState.interrupted = True


def _hold_ctrl_c() -> None:
    """From here to the process's end a Ctrl-C is noted, not raised.

    jsii's atexit hook stops its Node process; a KeyboardInterrupt inside it
    printed "Exception ignored in atexit callback" and a traceback. With the
    signal noted, the hook finishes in order and :func:`_exit_if_interrupted`
    turns the Ctrl-C into exit 130.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _note_ctrl_c)


@atexit.register
def _exit_if_interrupted() -> None:
    """Exit 130 with "interrupted." when Ctrl-C came during shutdown.

    Registered at import, before jsii starts Node and registers its own hook,
    so it runs after jsii's (atexit runs the last registered first).
    """
    if not _ExitState.interrupted:
        return
    if not _ExitState.reported:
        err_console.print("[yellow]interrupted.[/]")
    for stream in (sys.stdout, sys.stderr):
        # A reader gone too (`| head`): nothing left to say, still exit 130.
        with contextlib.suppress(OSError):
            stream.flush()
    os._exit(EXIT_INTERRUPTED)


def with_optional_values(argv: list[str]) -> list[str]:
    """``argv`` with the implied value after a bare optional-value option.

    typer 0.29's parser dropped click's optional option values, so the value
    is supplied here: an option from :data:`OPTIONAL_VALUES` at the end, or
    followed by another option, gets its default value. ``--json=PATH`` and
    ``--json PATH`` are left alone, as is everything after ``--``.
    """
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        out.append(arg)
        if arg in OPTIONAL_VALUES:
            following = argv[i + 1] if i + 1 < len(argv) else None
            if following is None or (following.startswith("-") and following != STDOUT):
                out.append(OPTIONAL_VALUES[arg])
    return out


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns (and exits with) the exit code.

    Standard output closed early (``| head -1``, a reader that quit) ends the
    command quietly with 141, what a shell reports for a program SIGPIPE ends
    (git, gh, kubectl and terraform all end so): neither the command's result
    (nobody read it) nor "problems found".
    """
    from ecs_gpu.cli import help_style

    command = typer.main.get_command(app)
    help_style.apply(command)
    args = with_optional_values(sys.argv[1:] if argv is None else argv)
    try:
        # Standalone mode: click prints usage errors itself (exit 2) and turns
        # typer.Exit(code) into SystemExit(code); our own errors propagate here.
        command.main(args=args, prog_name="ecs-gpu", standalone_mode=True)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_PROBLEMS)
        if _stdout_closed(e):
            code = EXIT_BROKEN_PIPE
        elif _from_ctrl_c(e):
            # typer turns an uncaught Ctrl-C into a silent exit 130.
            err_console.print("[yellow]interrupted.[/]")
            _ExitState.reported = True
    except EcsGpuError as e:
        # Messages name spec sections as "[capacity]": plain text, or rich would
        # read them as markup tags and print nothing in their place.
        say("error:", "red", e.message)
        code = e.exit_code
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted.[/]")
        _ExitState.reported = True
        code = EXIT_INTERRUPTED
    except Exception as e:  # the last line of defence: never a traceback
        if os.environ.get("ECS_GPU_DEBUG"):
            raise
        aws = _aws_exit(e)
        if _stdout_closed(e):
            code = EXIT_BROKEN_PIPE
        elif aws is not None:
            code = aws
        else:
            say(
                "internal error:",
                "red",
                f"{type(e).__name__}: {e}\nThis is a bug in ecs-gpu. Rerun with "
                "ECS_GPU_DEBUG=1 for the traceback and report it.",
            )
            code = EXIT_PROBLEMS
    # What print() left buffered is written now, while a broken pipe can still
    # decide the code, not at interpreter exit.
    if code == EXIT_BROKEN_PIPE or not _flush_stdout():
        code = EXIT_BROKEN_PIPE
        _quiet_stdout()
    if argv is None:
        # The process ends next: a Ctrl-C now must not break jsii's shutdown hook.
        _hold_ctrl_c()
        sys.exit(code)
    return code
