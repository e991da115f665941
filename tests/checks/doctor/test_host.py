"""Link checks of checks/doctor/host.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ecs_gpu.checks.doctor import run_checks
from support.doctor_cases import Snap, _probe, _status, env_inert


def test_nvidia_env_with_nvidia_default_runtime_is_fine(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    env_inert(s)
    _probe(
        s, docker_info=(" Runtimes: io.containerd.runc.v2 nvidia runc\n Default Runtime: nvidia", 0)
    )
    assert not [f for f in run_checks(s).findings if f.id == "HOST009"]


_DENIAL = (
    "2026-11-29T17:00:01Z E! ec2tagger: code: AccessDenied, message: User: "
    "arn:aws:sts::123456789012:assumed-role/vllm-g5-instance/i-0ad34247c1f0e9b21 is not "
    "authorized to perform: ec2:DescribeTags"
)


_PUT_OK = "2026-11-29T17:00:02Z D! cloudwatch: PutMetricData succeeded, 3 datums"


@pytest.mark.parametrize(
    ("log", "fires"),
    [
        # A denial of another call beside an unrelated PutMetricData line: not HOST004.
        (f"{_DENIAL}\n{_PUT_OK}", False),
        (f"{_PUT_OK}\n{_DENIAL}", False),
        # One line with both the denial and PutMetricData: HOST004.
        (
            "2026-11-29T17:00:03Z E! cloudwatch: code: AccessDenied, message: not authorized "
            "to perform: cloudwatch:PutMetricData",
            True,
        ),
    ],
    ids=["denial-then-put", "put-then-denial", "one-line"],
)
def test_host004_needs_the_denial_and_putmetricdata_on_one_line(
    healthy: Callable[[], Snap], log: str, fires: bool
) -> None:
    s = healthy()
    _probe(s, agent_log=(log, 0))
    host004 = [f for f in run_checks(s).findings if f.id == "HOST004"]
    assert bool(host004) is fires, host004
    if fires:
        assert "PutMetricData" in str(host004[0].evidence[0].value)


def test_no_probed_instance_leaves_host000_unknown(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["host_probes"] = {}
    assert _status(s)["HOST000"].status == "unknown"
