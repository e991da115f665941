"""The stage display for the slow library calls (synth, validate) on a terminal.

The library tells a callback each stage's name as it starts
(:data:`ecs_gpu.template.synth.StageFn`); here it becomes a rich status line on
standard error. When standard error is not a terminal nothing is shown, so
pipes, CI logs and tests see only what the command prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner

if TYPE_CHECKING:
    from ecs_gpu.template.synth import StageFn

# What each stage is doing, in words a user reads while waiting.
STAGE_TEXT: Final = {
    "synth": "synthesizing the template (CDK)",
    "agent schema": "checking the CloudWatch agent config against its schema",
    "cfn-lint": "running cfn-lint on the template",
    "cdk-nag": "running cdk-nag AwsSolutions checks",
}


@contextmanager
def stage_status(console: Console) -> Iterator[StageFn | None]:
    """A callback that shows the current stage on ``console``; None off a terminal."""
    if not console.is_terminal:
        yield None
        return
    spinner = Spinner("dots", text="starting...")
    # Transient: the line is gone when the stage ends, so the command's output reads as before.
    with Live(spinner, console=console, transient=True, refresh_per_second=10) as live:

        def show(stage: str) -> None:
            spinner.update(text=f"{STAGE_TEXT.get(stage, stage)}...")
            live.refresh()  # drawn now, not at the next tick: a stage may take a moment

        yield show
