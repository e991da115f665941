"""One metavar style for every command's ``--help``: upper-case words, nothing on flags.

typer 0.29 shows each value as its Python type (``<str>``, ``<float>``,
``<path>``) and every flag as ``<bool>``; options that set a metavar show
it instead, so the help would mix ``FILE``, ``<path>`` and ``[PATH]``. This
module gives every value option a word saying what it takes (``SECONDS``,
``NAME``, ``PATH``), shows none on flags and arguments (their name is the
word), and is applied once to the command tree :func:`ecs_gpu.cli.main` runs.
"""

from __future__ import annotations

from typing import Any

from typer import _click
from typer.core import TyperArgument, TyperOption

# What each shared option takes, where its declaration does not say.
METAVARS = {
    "--poll-interval": "SECONDS",
    "--task-timeout": "SECONDS",
    "--stuck-after": "SECONDS",
    "--timeout": "SECONDS",
    "--interval": "SECONDS",
    "--window": "SECONDS",
    "--scale-out-timeout": "SECONDS",
    "--scale-in-timeout": "SECONDS",
    "--publish-interval": "SECONDS",
    "--running-timeout": "SECONDS",
    "--url": "URL",
    "--step": "SECONDS",
    "--stack": "NAME",
    "--cluster": "NAME",
    "--service": "NAME",
    "--asg": "NAME",
    "--region": "REGION",
    "--profile": "PROFILE",
    "--template-bucket": "BUCKET",
    "--template-prefix": "PREFIX",
    "--trace": "FILE|NAME",
    "--rate-scale": "FACTOR",
    "--seed": "N",
    "--days": "DAYS",
    "--host-cpu-policy": "PERCENT",
    "--sweep-gpu-target": "PERCENTS",
    "--plot": "PNG",
    "--timeline": "CSV",
}


def _by_type(option: TyperOption) -> str:
    d = option.type_descriptor
    if d.is_path:
        return "PATH"
    return {int: "N", float: "NUMBER"}.get(d.annotation, "TEXT")


def _no_type(ctx: _click.Context) -> str | None:
    return None


def apply(command: Any) -> None:
    """Give ``command`` and its subcommands the one metavar style (idempotent)."""
    ctx = _click.Context(command)
    help_option = command.get_help_option(ctx)
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if isinstance(param, TyperArgument):
            # The name is the word (SPEC); the type column would add "<path>".
            vars(param)["display_type_rich"] = _no_type
            if param.metavar is None and param.name is not None:
                # The usage line adds "..." itself for several values.
                param.metavar = param.name.upper()
        elif isinstance(param, TyperOption):
            if param.is_flag:
                param.metavar = ""
            elif param.metavar is None:
                long = next((o for o in param.opts if o.startswith("--")), "")
                param.metavar = METAVARS.get(long) or _by_type(param)
    for sub in getattr(command, "commands", {}).values():
        apply(sub)
