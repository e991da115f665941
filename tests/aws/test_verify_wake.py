"""aws/verify_wake: the one request, when it never reaches the load balancer. The live
proof is tests/cli/test_verify_wake.py."""

from __future__ import annotations

import pytest

from ecs_gpu.aws import verify_wake as vw
from ecs_gpu.errors import EXIT_AWS, AwsError


def test_a_request_that_never_reaches_the_load_balancer_is_unreachable() -> None:
    def refused(url: str, timeout_s: float) -> int:
        raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(AwsError) as exc:
        vw.send_request("http://lb/health", internal=False, opener=refused)
    assert exc.value.exit_code == EXIT_AWS and "ingress_cidrs" in exc.value.message
