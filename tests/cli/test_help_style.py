"""Every command's --help: one metavar style (upper-case words, cli/help_style.py), no type on
flags, -y for --yes, and an example of the command."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperArgument, TyperOption

from ecs_gpu import cli
from ecs_gpu.cli import help_style, main

# A word in capitals (PATH, SECONDS, FILE|NAME), optionally in brackets ([PATH]: may be left out).
WORD = re.compile(r"\[?[A-Z][A-Z0-9]*(\|[A-Z][A-Z0-9]*)*\]?")
# typer's own type labels and click's: what the style replaces.
TYPE_LABEL = re.compile(r"<(bool|str|int|float|path|int range|float range)>|\bBOOLEAN\b|\bTEXT\b")


def _tree() -> Any:
    command = typer.main.get_command(cli.app)
    help_style.apply(command)
    return command


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            yield from _commands(sub, (*path, name))


COMMANDS = [path for path, _ in _commands(_tree())]


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p in COMMANDS}
    assert {"catalog", "traces", "deploy", "destroy", "verify scaling", "doctor"} <= names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ecs-gpu")
def test_help_uses_one_metavar_style(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    command = dict(_commands(_tree()))[path]
    for param in command.params:
        if isinstance(param, TyperOption) and not param.is_flag:
            assert WORD.fullmatch(param.metavar or ""), (param.opts, param.metavar)
        if isinstance(param, TyperOption) and param.is_flag:
            assert param.metavar == "", param.opts
        if isinstance(param, TyperArgument):
            assert WORD.fullmatch(param.metavar or ""), (param.name, param.metavar)
    # What a user sees: the rendered help holds no type label.
    assert cli.main([*path, "--help"]) == 0
    text = capsys.readouterr().out
    assert not TYPE_LABEL.search(text), TYPE_LABEL.search(text)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ecs-gpu")
def test_every_yes_has_the_short_form(path: tuple[str, ...]) -> None:
    command = dict(_commands(_tree()))[path]
    for param in command.params:
        if "--yes" in getattr(param, "opts", []):
            assert "-y" in param.opts, path


def test_the_short_form_confirms(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify scaling refuses without --yes; with -y it goes on to AWS (here: unreachable)."""
    spec = str(Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml")
    for var, value in {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    assert cli.main(["verify", "scaling", spec]) == 2
    assert "rerun with --yes" in capsys.readouterr().err
    assert cli.main(["verify", "scaling", spec, "-y"]) == 3
    assert "cannot reach AWS" in capsys.readouterr().err


# A spec section as help texts name it ("[capacity.spot]"); rich reads an unescaped
# one as a markup tag and drops it ("With , the series ...").
SECTION = re.compile(r"\\?\[([a-z_]+(?:\.[a-z_]+)?)\]")


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ecs-gpu")
def test_help_shows_every_spec_section_it_names(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    command = dict(_commands(_tree()))[path]
    texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
    named = {m.group(1) for t in texts for m in SECTION.finditer(t)}
    assert cli.main([*path, "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    missing = sorted(n for n in named if f"[{n}]" not in shown)
    assert not missing, missing


@pytest.mark.parametrize(
    "argv",
    [
        ["diff"],
        ["deploy"],
        ["destroy"],
        ["verify"],
        ["verify", "metrics"],
        ["verify", "scaling"],
        ["doctor"],
    ],
    ids=lambda a: " ".join(a),
)
def test_help_explains_with_an_example(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Example" in out
    assert f"ecs-gpu {argv[0]} " in out.split("Example", 1)[1]
