"""aws/deploy: which stacks deploy and destroy may touch, and which states refuse a change."""

from __future__ import annotations

import pytest

from ecs_gpu.aws import deploy as dp
from ecs_gpu.errors import BadInputError, ProblemsFound
from operate.conftest import NAMES

STACK = NAMES.stack


def test_a_stack_from_before_the_tags_is_known_by_its_description() -> None:
    old = dp.StackState(
        "id", "vllm-g5", "CREATE_COMPLETE", "", description="ecs-gpu: GPU inference service x"
    )
    dp.check_owned(old, "vllm-g5", action="delete")  # no error
    foreign = dp.StackState("id", "x", "CREATE_COMPLETE", "", description="payments")
    with pytest.raises(BadInputError):
        dp.check_owned(foreign, "vllm-g5", action="delete")


def test_busy_or_failed_stacks_are_refused_with_the_way_out() -> None:
    busy = dp.StackState("id", STACK, "UPDATE_IN_PROGRESS", "")
    with pytest.raises(ProblemsFound, match="describe-stack-events"):
        dp._refuse_busy(busy, "us-east-1")
    failed = dp.StackState("id", STACK, "ROLLBACK_COMPLETE", "")
    with pytest.raises(ProblemsFound, match="ecs-gpu destroy"):
        dp._refuse_busy(failed, None)
    dp._refuse_busy(dp.StackState("id", STACK, "UPDATE_ROLLBACK_COMPLETE", ""), None)
