"""String rules (spec/rules/strings.py): control characters, CDK token markers, CloudFormation
dynamic references."""

from __future__ import annotations

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    PATH,
    one_problem,
    with_,
)


@pytest.mark.parametrize("char", ["\0", "\r", "\x1b", "\x7f", "\x85"])
@pytest.mark.parametrize("where", ["environment", "command"])
def test_control_characters_are_refused_in_environment_and_command(char: str, where: str) -> None:
    value = f"a{char}b"
    if where == "environment":
        key, text = "service.environment.MODEL", with_("service", environment={"MODEL": value})
    else:
        key, text = "service.command[1]", with_("service", command=["--model", value])
    line = one_problem(text, key)
    assert f"U+{ord(char):04X} at character 1" in line


def test_control_characters_are_refused_in_a_secret_arn_tail() -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf:key\0::"
    line = one_problem(with_("service", secrets={"HF_TOKEN": arn}), "service.secrets.HF_TOKEN")
    assert "U+0000" in line


def test_a_long_value_is_shortened_in_the_message() -> None:
    line = one_problem(with_("service", environment={"A": "x" * 5000 + "\0"}), "service")
    assert len(line) < 600 and "U+0000 at character 5000" in line


def test_tabs_and_newlines_are_allowed() -> None:
    spec = parse_spec(with_("service", command=["-c", "a\tb\nc"], environment={"A": "x\ty"}), PATH)
    assert spec.service.command == ["-c", "a\tb\nc"]


TOKENS = ["${Token[TOKEN.1]}", "${Token[AWS.AccountId.5]}", "#{Token[TOKEN.12]}", "x${Token[a]}y"]


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize(
    ("loc", "key"),
    [
        ("environment", "service.environment.HF_HOME"),
        ("command", "service.command[1]"),
        ("health_check_path", "service.health_check_path"),
        ("lb_health", "load_balancer.health_check_path"),
        ("cert", "load_balancer.certificate_arn"),
        ("secret_tail", "service.secrets.HF_TOKEN"),
    ],
)
def test_cdk_token_markers_are_refused_naming_the_key(token: str, loc: str, key: str) -> None:
    text = {
        "environment": lambda: with_("service", environment={"HF_HOME": token}),
        "command": lambda: with_("service", command=["--model", token]),
        "health_check_path": lambda: with_("service", health_check_path="/" + token),
        "lb_health": lambda: with_("load_balancer", health_check_path="/" + token),
        "cert": lambda: with_(
            "load_balancer",
            certificate_arn="arn:aws:acm:us-east-1:123456789012:certificate/" + token,
        ),
        "secret_tail": lambda: with_(
            "service",
            secrets={
                "HF_TOKEN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf:" + token
            },
        ),
    }[loc]()
    line = one_problem(text, key)
    assert "CDK token marker" in line


@pytest.mark.parametrize(
    "ref", ["{{resolve:ssm:/prod/db-password}}", "x{{resolve:secretsmanager:db:SecretString}}"]
)
def test_cloudformation_dynamic_references_are_refused(ref: str) -> None:
    line = one_problem(with_("service", environment={"DB": ref}), "service.environment.DB")
    assert "dynamic reference" in line and "[service] secrets" in line


def test_a_dollar_brace_that_is_no_token_is_kept() -> None:
    spec = parse_spec(with_("service", environment={"A": "${HOME}/x", "B": "{Token[1]}"}), PATH)
    assert spec.service.environment["A"] == "${HOME}/x"
