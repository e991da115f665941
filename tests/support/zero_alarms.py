"""The wake and sleep alarms' metric queries as DescribeAlarms returns them.

infra/scaling.py writes both over the load balancer's two counts (``r``,
``e``), the sleep alarm over its open connections (``a``) too, and both over
the service's CPU SampleCount (``c``)
(ecs_gpu.design.paths.wake, ecs_gpu.design.paths.sleep); moto's CloudFormation skips alarms,
and doctor's
snapshots hold them as collected, so the tests of verify and doctor build them
here once.
"""

from __future__ import annotations

from typing import Any

from ecs_gpu.design.paths import sleep, wake


def metric_query(
    qid: str, namespace: str, name: str, dims: dict[str, str], stat: str
) -> dict[str, Any]:
    """One MetricStat query of a metric-math alarm, at the wake and sleep alarms' period."""
    metric = {
        "Namespace": namespace,
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
    }
    return {
        "Id": qid,
        "MetricStat": {"Metric": metric, "Period": wake.PERIOD_S, "Stat": stat},
        "ReturnData": False,
    }


def alb_queries(load_balancer: str) -> list[dict[str, Any]]:
    """The load balancer's RequestCount ``r`` and ELB 503 count ``e``: both alarms read them."""
    lb = {wake.ELB_DIMENSION: load_balancer}
    return [
        metric_query(wake.REQUESTS_ID, wake.ELB_NAMESPACE, wake.REQUESTS_METRIC, lb, "Sum"),
        metric_query(wake.REJECTED_ID, wake.ELB_NAMESPACE, wake.REJECTED_METRIC, lb, "Sum"),
    ]


def wake_metrics(
    load_balancer: str, cluster: str, service: str, running_stat: str = wake.RUNNING_STATISTIC
) -> list[dict[str, Any]]:
    """The wake alarm's Metrics: its expression, the two counts, the service's CPU series."""
    return [
        {"Id": "expr_1", "Expression": wake.EXPRESSION, "ReturnData": True},
        *alb_queries(load_balancer),
        metric_query(
            wake.RUNNING_ID,
            wake.RUNNING_NAMESPACE,
            wake.RUNNING_METRIC,
            {"ClusterName": cluster, "ServiceName": service},
            running_stat,
        ),
    ]


def sleep_metrics(load_balancer: str, cluster: str, service: str) -> list[dict[str, Any]]:
    """The sleep alarm's Metrics without the in-flight series: requests and connections,
    gated on the service's CPU series (a task RUNNING)."""
    lb = {wake.ELB_DIMENSION: load_balancer}
    return [
        {"Id": "expr_1", "Expression": sleep.REQUESTS, "ReturnData": True},
        *alb_queries(load_balancer),
        metric_query(sleep.CONNECTIONS_ID, wake.ELB_NAMESPACE, sleep.CONNECTIONS_METRIC, lb, "Sum"),
        metric_query(
            wake.RUNNING_ID,
            wake.RUNNING_NAMESPACE,
            wake.RUNNING_METRIC,
            {"ClusterName": cluster, "ServiceName": service},
            wake.RUNNING_STATISTIC,
        ),
    ]
