"""Hostile input, tried as an attacker would: every class is refused, never a crash.

One place for the classes of the issue "The first hour" (and the case that
first showed each): a file that is no regular file, a spec that can never
work, a string CDK or CloudFormation would read as code, an integer no AWS
API takes, a snapshot that lies. Each case runs the real command in-process
and asserts the documented exit code, that the message names the input,
and that nothing reached the user as an internal error or a traceback. The
property tests below feed hypothesis's strings into the spec's free-text
keys: whatever the spec accepts carries nothing CDK or CloudFormation would
resolve, and nothing a task definition cannot hold.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_gpu.cli import main
from ecs_gpu.errors import EXIT_BAD_INPUT, SpecError
from ecs_gpu.spec import parse_spec
from ecs_gpu.spec.rules.strings import CFN_DYNAMIC_REF_RE
from ecs_gpu.spec.sections.base import CDK_TOKEN_RE

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "g5-vllm.toml"
TEXT = EXAMPLE.read_text(encoding="utf-8")
IMAGE = 'image = "vllm/vllm-openai:v0.11.0"'
ENV = 'environment = { HF_HOME = "/root/.cache/huggingface" }'


def _toml(value: str) -> str:
    """A TOML basic string holding ``value`` exactly: quotes, backslashes and
    control characters escaped, everything else as written."""
    body = "".join(
        f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F or c in '"\\' else c for c in value
    )
    return f'"{body}"'


def _spec(old: str, new: str) -> str:
    assert old in TEXT, old
    return TEXT.replace(old, new, 1)


# (case id, spec text, what the message must name)
SPECS: list[tuple[str, str, str]] = [
    ("shell-in-image", _spec(IMAGE, 'image = "$(reboot)"'), "service.image"),
    ("quote-in-image", _spec(IMAGE, "image = 'vllm/vllm\"openai:1'"), "service.image"),
    (
        "cdk-token-in-env",
        _spec(ENV, 'environment = { HF_HOME = "${Token[TOKEN.1]}" }'),
        "service.environment",
    ),
    (
        "cfn-dynamic-ref-in-command",
        _spec('"--max-model-len", "8192"', '"--x", "{{resolve:ssm:/p}}"'),
        "service.command",
    ),
    (
        "nul-in-env",
        _spec(ENV, 'environment = { HF_HOME = "a\\u0000b" }'),
        "service.environment",
    ),
    (
        "70-kb-of-environment",
        _spec(ENV, f"environment = {{ BIG = {_toml('x' * 70_000)} }}"),
        "64 KiB",
    ),
    ("500-gib-model-on-an-a10g", _spec(ENV, f"{ENV}\nmodel_size_gib = 500"), "model_size_gib"),
    (
        "200-gib-model-on-30-gib-root",
        _spec(
            'instance_type = "g5.xlarge"',
            'instance_type = "p5.48xlarge"\nroot_volume_gib = 30',
        )
        .replace("gpus_per_task = 1", "gpus_per_task = 8", 1)
        .replace(ENV, f"{ENV}\nmodel_size_gib = 200", 1),
        "root_volume_gib",
    ),
    ("int32-max-instances", _spec("max_instances = 4", "max_instances = 3000000000"), "max_"),
    ("int32-max-tasks", _spec("max_tasks = 4", "max_tasks = 3000000000"), "max_tasks"),
    ("float-in-an-integer", _spec("max_tasks = 4", "max_tasks = 3e9"), "max_tasks"),
    ("zero-gpus", _spec("gpus_per_task = 1", "gpus_per_task = 0"), "gpus_per_task"),
    (
        "misspelled-instance-type",
        _spec('instance_type = "g5.xlarge"', 'instance_type = "g5.xlarg"'),
        "instance_type",
    ),
    ("nested-10000-deep", TEXT + "\n[extra]\nx = " + "[" * 10_000 + "]" * 10_000 + "\n", "spec"),
    (
        "61-ingress-cidrs",
        TEXT
        + '\n[load_balancer]\nscheme = "internet-facing"\nhealth_check_path = "/health"\n'
        + "ingress_cidrs = ["
        + ", ".join(f'"198.51.{i}.0/24"' for i in range(61))
        + "]\n",
        "ingress_cidrs",
    ),
]


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_BAD_INPUT, err
    assert "internal error" not in err and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("text", "names"), [(t, n) for _, t, n in SPECS], ids=[c for c, *_ in SPECS]
)
@pytest.mark.parametrize("command", ["validate", "synth"])
def test_a_spec_that_can_never_work_is_refused_by_every_command_that_builds(
    command: str, text: str, names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "hostile.toml"
    spec.write_text(text, encoding="utf-8")
    argv = [command, str(spec)] + (["-o", str(tmp_path / "out")] if command == "synth" else [])
    err = _refused(argv, capsys)
    assert str(spec) in err and names in err and "Fix:" in err
    # The real problem alone: cpu_units and memory_mib default from the instance.
    assert "Field required" not in err
    assert not (tmp_path / "out").exists()  # refused before anything was written


def _fifo(tmp: Path) -> Path:
    p = tmp / "pipe"
    os.mkfifo(p)  # no writer: a plain open() would block for ever
    return p


FILES: dict[str, Callable[[Path], Path]] = {
    "fifo": _fifo,
    "dev-zero": lambda _: Path("/dev/zero"),
    "folder": lambda tmp: tmp,
}


@pytest.mark.parametrize("make", sorted(FILES))
@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["validate", "{path}"], "SPEC"),
        (["simulate", str(EXAMPLE), "--trace", "{path}"], "--trace"),
        (["doctor", "--from-snapshot", "{path}"], "--from-snapshot"),
    ],
    ids=["spec", "trace", "snapshot"],
)
def test_a_file_that_is_not_a_regular_file_is_refused_at_once(
    make: str, argv: list[str], option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = FILES[make](tmp_path)
    err = _refused([a.replace("{path}", str(path)) for a in argv], capsys)
    assert option in err and str(path) in err


def test_a_snapshot_key_given_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = tmp_path / "snap.json"
    # A second "services" would hide the first from a JSON reader that keeps the last.
    snap.write_text('{"services": [{"serviceName": "a"}], "services": []}', encoding="utf-8")
    err = _refused(["doctor", "--from-snapshot", str(snap)], capsys)
    assert "services appears twice" in err


def test_columns_zero_still_prints_the_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"
    bad.write_text(_spec(IMAGE, 'image = "$(reboot)"'), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "ecs_gpu", "validate", str(bad)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "0"},
        timeout=300,
        check=False,
    )
    assert proc.returncode == EXIT_BAD_INPUT
    assert "service.image" in proc.stderr and "Traceback" not in proc.stderr


# --- properties: whatever the spec accepts is literal ----------------------------------

# Text a person or a script might paste: printable, control characters, CDK's
# token markers and CloudFormation's dynamic references, shell and TOML syntax.
HOSTILE = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "${Token[TOKEN.1]}",
            "#{Token[TOKEN.7]}",
            "{{resolve:ssm:/x}}",
            "{{resolve:secretsmanager:s}}",
            "$(reboot)",
            "`id`",
            "a\x00b",
            "\x1b[31mred",
            "line\nbreak",
            "tab\there",
        ]
    ),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@settings(max_examples=120, deadline=None)
@given(value=HOSTILE, where=st.sampled_from(["env", "command"]))
def test_an_accepted_string_holds_nothing_cdk_or_cloudformation_would_resolve(
    value: str, where: str
) -> None:
    if where == "env":
        text = _spec(ENV, f"environment = {{ HF_HOME = {_toml(value)} }}")
    else:
        text = _spec('"--max-model-len", "8192"', f'"--x", {_toml(value)}')
    try:
        spec = parse_spec(text, "hostile.toml")
    except SpecError as e:
        assert e.exit_code == EXIT_BAD_INPUT
        assert all(p.startswith("hostile.toml: service.") for p in e.problems), e.problems
        return
    held = spec.service.environment["HF_HOME"] if where == "env" else spec.service.command[3]
    assert held == value  # kept literally, as written
    assert not CDK_TOKEN_RE.search(held) and not CFN_DYNAMIC_REF_RE.search(held)
    assert not _CONTROL.search(held)
