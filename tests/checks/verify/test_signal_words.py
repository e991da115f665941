"""checks/verify/signal_words: what verify metrics says of each signal's series."""

from __future__ import annotations

from ecs_gpu.checks.verify.signal_words import VERIFIED, ServerMetrics
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import SIGNALS

NAMES = Names("svc")


def test_each_signal_has_its_words_and_the_gpu_signals_share_theirs() -> None:
    assert set(VERIFIED) == set(SIGNALS)
    assert VERIFIED["task-gpus"] is VERIFIED["asg-average"]
    gpu, conc = VERIFIED["task-gpus"], VERIFIED["concurrency"]
    assert gpu.title(NAMES) == f"{gpu_metric.NAMESPACE} by {gpu_metric.DIMENSION}={NAMES.asg}"
    assert conc.title(NAMES).startswith(demand_metric.where(NAMES.cluster, NAMES.service))
    assert gpu.present(NAMES, [(3, 1.0)]) == f"All 3 GPU series of {NAMES.asg} have datapoints."
    assert "latest mean per task 4.5" in conc.present(NAMES, [(6, 4.5)])
    assert gpu.missing(NAMES, ["a"], 60).startswith("1 of 3 GPU series missing")


def test_a_missing_concurrency_series_names_what_the_sidecar_reads() -> None:
    conc = VERIFIED["concurrency"]
    server = ServerMetrics(("vllm:num_requests_running",), 8000, "/metrics")
    (never,) = conc.explain(demand_metric.METRIC_NAME, NAMES, [], server)
    assert "from http://127.0.0.1:8000/metrics" in never
    assert "'GET /metrics on port 8000: ...'" in never
    ours = demand_metric.dimensions(NAMES.cluster, NAMES.service)
    (stopped,) = conc.explain(demand_metric.METRIC_NAME, NAMES, [ours[::-1]], None)
    assert "exists but has no datapoint in the window" in stopped
