"""checks/verify/wake: the URL from the outputs, when a service sleeps, the poll, and
the refusals' wording. The live proof is tests/cli/test_verify_wake.py."""

from __future__ import annotations

import pytest

from ecs_gpu.aws.deploy import StackOutput
from ecs_gpu.checks.verify import wake as vw
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import Design
from ecs_gpu.design.paths import sleep
from ecs_gpu.errors import BadInputError, ProblemsFound
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5, INTERNAL_LB, P5, scaled_to_zero

NIGHT = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 2\n'
CERT = 'certificate_arn = "arn:aws:acm:us-east-1:123456789012:certificate/0b1c2d3e"\n'


def _spec(text: str) -> Spec:
    return parse_spec(text, "s.toml")


def test_the_output_key_is_the_templates() -> None:
    from ecs_gpu.infra.service import OUTPUT_LB_DNS  # loads the CDK: only here

    assert vw.LB_DNS_OUTPUT == OUTPUT_LB_DNS


def test_the_url_is_the_dns_output_and_the_health_check_path_https_with_a_certificate() -> None:
    outs = [StackOutput("ClusterName", "c"), StackOutput(vw.LB_DNS_OUTPUT, "lb-1.elb.aws")]
    plain = _spec(scaled_to_zero() + INTERNAL_LB + 'health_check_path = "/ping"\n')
    assert (
        vw.url_from_outputs(plain, outs, stack="s", status="UPDATE_COMPLETE")
        == "http://lb-1.elb.aws/ping"
    )
    tls = _spec(scaled_to_zero() + INTERNAL_LB + CERT)
    assert (
        vw.url_from_outputs(tls, outs, stack="s", status="UPDATE_COMPLETE")
        == "https://lb-1.elb.aws/health"
    )


def test_a_stack_without_the_output_names_it_and_offers_url() -> None:
    spec = _spec(scaled_to_zero() + INTERNAL_LB)
    with pytest.raises(ProblemsFound) as exc:
        vw.url_from_outputs(spec, [], stack="vllm-g5", status="DELETE_COMPLETE")
    msg = exc.value.message
    assert "stack vllm-g5 does not exist and has no output LoadBalancerDnsName" in msg
    assert "--url" in msg and "`ecs-gpu deploy SPEC`" in msg


def test_when_it_sleeps_names_the_quiet_minutes_and_the_schedule() -> None:
    zero = vw.when_it_sleeps(Design.of(_spec(scaled_to_zero() + INTERNAL_LB)))
    assert "after 10 one-minute periods" in zero and "schedule" not in zero
    # A 40-minute model: the spec's window, longer than its load (wake.quiet_minutes).
    p5 = _spec(scaled_to_zero(P5))
    assert f"after {sleep.quiet_minutes(p5)} one-minute periods" in vw.when_it_sleeps(Design.of(p5))
    assert "after 62 one-minute periods" in vw.when_it_sleeps(Design.of(p5))
    night = vw.when_it_sleeps(Design.of(_spec(G5 + INTERNAL_LB + NIGHT)))
    assert "[scaling] min_tasks = 1, 0 from the [[scaling.schedule]] entries at 0 20 * * ? *" in (
        night
    )


def test_at_zero_means_desired_and_running_zero() -> None:
    spec = _spec(scaled_to_zero() + INTERNAL_LB)
    names = Names(spec.service.name)
    vw.check_at_zero(vw.Counts(0, 0), Design.of(spec), names)
    for counts in (vw.Counts(1, 0), vw.Counts(0, 1)):  # starting, or still draining
        with pytest.raises(ProblemsFound, match=f"runs {counts.running} task"):
            vw.check_at_zero(counts, Design.of(spec), names)


def test_the_poll_stops_at_the_timeout_on_the_injected_clock() -> None:
    now = [0.0]
    seen: list[float] = []

    def tick(s: float) -> None:
        seen.append(s)
        now[0] += s

    counts, elapsed, done = vw.wait_for(
        lambda: vw.Counts(0, 0),
        lambda c: c.desired >= 1,
        start=0.0,
        timeout_s=30,
        poll_s=10,
        sleep=tick,
        clock=lambda: now[0],
    )
    assert (counts, elapsed, done) == (vw.Counts(0, 0), 30.0, False)
    assert seen == [10, 10, 10]


@pytest.mark.parametrize(
    "url",
    [
        "lb.example.com/health",
        "ftp://lb/health",
        "http:///health",
        "http://lb x/health",
        "http://[::1",  # urlsplit raises: "Invalid IPv6 URL"
        "http://lb:abc/health",  # a port that is no number: no request could be sent
        "http://:80/health",  # a port and no host
    ],
)
def test_a_url_without_scheme_or_host_is_bad_input(url: str) -> None:
    with pytest.raises(BadInputError) as exc:
        vw.check_url(url)
    assert f"--url {url!r}" in exc.value.message and "Fix:" in exc.value.message
    assert vw.check_url("https://lb.example.com/health") == "https://lb.example.com/health"
