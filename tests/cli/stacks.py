"""A stack on moto for the deploy and destroy tests: the calls a client sends, a deploy."""

from __future__ import annotations

from typing import Any

from ecs_gpu.aws import follow as fl
from ecs_gpu.cli import deploy as deploy_cli
from support.moto_cfn import ami_parameters

from .conftest import NAMES, NO_WAIT, Clients

STACK = NAMES.stack


def record_calls(*clients: Any) -> list[str]:
    """Names of the API operations the clients send, in order (a botocore event hook)."""
    calls: list[str] = []

    def hook(model: Any, **_: Any) -> None:
        calls.append(model.name)

    for c in clients:
        c.meta.events.register("before-call", hook)
    return calls


def deploy(c: Clients, template: dict[str, Any]) -> fl.FollowResult:
    result = deploy_cli.run_deploy(
        c.cfn,
        STACK,
        template,
        yes=True,
        waits=NO_WAIT,
        service_name=NAMES.service_name,
        parameters=ami_parameters(template),
    )
    assert result is not None
    return result
