"""cdk-nag AwsSolutions acknowledgements, each with the reason it is safe here.

cdk-nag v3 reads CDK's own ``Validations.of(construct).acknowledge(...)``;
each finding is acknowledged by its granular id (``Rule[Finding]``) on the
construct it fires on, never stack-wide, so a new finding elsewhere is still
reported by ``ecs-gpu validate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecs_gpu.node import ensure_node

ensure_node()

from aws_cdk import Acknowledgment, Validations  # noqa: E402
from constructs import IConstruct  # noqa: E402

if TYPE_CHECKING:
    from ecs_gpu.infra.service import GpuService


def ack(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on one construct, with its written reason."""
    Validations.of(construct).acknowledge(Acknowledgment(id=rule, reason=reason))


def acknowledge(svc: GpuService) -> None:
    """Every AwsSolutions finding GpuService accepts, with why."""
