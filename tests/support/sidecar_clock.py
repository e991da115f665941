"""The demand sidecar's run loop on a fake clock, and the container that runs it.

Shared by tests/contracts/test_demand_metric.py (the loop's counts) and
tests/e2e/test_concurrency_chain.py (the deployed command against moto).
The script (src/ecs_gpu/data/demand-sidecar.sh) reads its clock with
``date +%s`` and waits with ``sleep``; stand-ins for both, first on its PATH
(``bin`` beside the test's other stand-ins), make its seconds fake ones, so
what it scrapes and publishes is counted exactly, however slow the machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ecs_gpu.contracts import demand_metric

# A safety net for a broken script only: no test waits on time, and each run
# of the sidecar ends on an event well within it.
SAFETY_S = 120
# The fake clock starts at an epoch second, as `date +%s` reads: the script
# must count the start deadline from its own start, not from 0.
T0 = 1_700_000_000
# The container's entry point and command as the task definition writes them.
CONTAINER_ARGV = (*demand_metric.SIDECAR_ENTRY_POINT, *demand_metric.SIDECAR_COMMAND)


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (apt-get install {name}); these checks never skip")
    return path


def executable(tmp_path: Path, name: str, body: str) -> None:
    """A stand-in command ``name`` in tmp_path/bin (the caller puts it first on PATH)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    path = bindir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def container(env: dict[str, str], argv: Sequence[str] = CONTAINER_ARGV) -> subprocess.Popen[str]:
    """The task definition's entry point and command, as ECS runs them."""
    return subprocess.Popen(
        list(argv),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so a failed test can kill its sleep too
    )


def kill(proc: subprocess.Popen[str]) -> None:
    """After a failure: the sidecar and whatever it started (its pending sleep)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


class FakeClock:
    """Stand-in `date` and `sleep` (tmp_path/bin, first on the sidecar's PATH)
    that read and move a fake clock kept in a file.

    ``sleep N`` adds N to the clock, records N and returns at once. When the
    clock reaches ``hook_at`` it first waits (on a FIFO) for the test to run
    ``on_hook``: a server that comes up between two scrapes. When it reaches
    ``stop_at`` it sends the sidecar ECS's stop (SIGTERM) and waits like a
    real sleep: the sidecar's trap must end it, or its open stderr keeps the
    run from ending and the safety net fails the test.
    """

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "clock"
        self.slept = tmp_path / "slept"
        self.stop_at = tmp_path / "stop-at"
        self.hook_at = tmp_path / "hook-at"
        self.fifo = tmp_path / "hook"
        os.mkfifo(self.fifo)
        real_sleep = tool("sleep")
        executable(
            tmp_path,
            "date",
            f'[ "$*" = +%s ] || {{ echo "stand-in date: only +%s, not \'$*\'" >&2; exit 2; }}\n'
            f"cat '{self.path}'",
        )
        executable(
            tmp_path,
            "sleep",
            f"now=$(($(cat '{self.path}') + $1))\n"
            f"echo \"$now\" > '{self.path}'\n"
            f"echo \"$1\" >> '{self.slept}'\n"
            f"if [ \"$now\" -eq \"$(cat '{self.hook_at}')\" ]; then read -r _ < '{self.fifo}'; fi\n"
            f'if [ "$now" -ge "$(cat \'{self.stop_at}\')" ]; then\n'
            f'  kill -TERM "$PPID"\n'
            f"  exec '{real_sleep}' {SAFETY_S}\n"
            "fi",
        )

    def now(self) -> int:
        return int(self.path.read_text())

    def sleeps(self) -> list[int]:
        return [int(n) for n in self.slept.read_text().split()]

    def run(
        self,
        env: dict[str, str],
        *,
        stop_at: int,
        hook_at: int = -1,
        on_hook: Callable[[], object] | None = None,
        argv: Sequence[str] = CONTAINER_ARGV,
    ) -> str:
        """The container's command (``argv``) from T0 until the clock reaches ``stop_at``;
        its stderr."""
        self.path.write_text(f"{T0}\n")
        self.stop_at.write_text(f"{stop_at}\n")
        self.hook_at.write_text(f"{hook_at}\n")
        hook = None
        if on_hook is not None:
            hook = threading.Thread(target=self._hook, args=(on_hook,), daemon=True)
            hook.start()
        proc = container(env, argv)
        try:
            # The loop ends itself at stop_at; the timeout is a safety net.
            _, err = proc.communicate(timeout=SAFETY_S)
        finally:
            kill(proc)
            if hook is not None and hook.is_alive():  # the clock never reached hook_at
                os.close(os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK))
        assert proc.returncode == 0, err
        assert self.now() == stop_at, err
        return err

    def _hook(self, on_hook: Callable[[], object]) -> None:
        with open(self.fifo, "w") as sleeper:  # opens when the stand-in sleep waits on it
            on_hook()
            sleeper.write("done\n")
