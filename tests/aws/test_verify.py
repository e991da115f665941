"""aws/verify: what verify metrics reads and how it explains a missing series, against moto."""

from __future__ import annotations

from cli.conftest import Clients
from cli.verify_helpers import ASG, put
from ecs_gpu.aws import verify as vf
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.signals import SeriesAt

# verify metrics --asg: the agent's series alone, no service.
AT = SeriesAt(asg=ASG, cluster="", service="")


def test_a_series_under_another_dimension_is_reported_as_wrong_dimension(
    clients: Clients,
) -> None:
    put(clients.cw, gpu_metric.UTILIZATION, 37.0)
    put(clients.cw, gpu_metric.MEMORY_USED, 1.0, [{"Name": "InstanceId", "Value": "i-0abc"}])
    put(clients.cw, gpu_metric.MEMORY_TOTAL, 2.0, gpu_metric.dimensions("other-gpu-asg"))
    report = vf.verify_metrics(clients.cw, AT, timeout_s=0, sleep=lambda s: None)
    assert report.missing == [gpu_metric.MEMORY_USED, gpu_metric.MEMORY_TOTAL]
    used = " ".join(report.causes[gpu_metric.MEMORY_USED])
    total = " ".join(report.causes[gpu_metric.MEMORY_TOTAL])
    assert "wrong dimension:" in used and "InstanceId=i-0abc" in used
    assert "aggregation_dimensions" in used
    assert "wrong dimension value" in total and "other-gpu-asg" in total


def test_verify_metrics_waits_until_the_last_series_lands(clients: Clients) -> None:
    put(clients.cw, gpu_metric.UTILIZATION, 37.0)
    put(clients.cw, gpu_metric.MEMORY_USED, 20480.0)
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        # The agent's next flush arrives while verify waits.
        sleeps.append(seconds)
        put(clients.cw, gpu_metric.MEMORY_TOTAL, 23028.0)

    attempts: list[int] = []
    report = vf.verify_metrics(
        clients.cw,
        AT,
        timeout_s=120,
        interval_s=30,
        sleep=sleep,
        on_attempt=lambda n, s: attempts.append(sum(x.present for x in s)),
    )
    assert report.ok and attempts == [2, 3] and sleeps == [30]
    total = next(s for s in report.series if s.metric == gpu_metric.MEMORY_TOTAL)
    assert total.datapoints == 1 and total.latest == 23028.0
