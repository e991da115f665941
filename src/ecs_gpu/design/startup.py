"""How long a new task takes to serve, and the health-check timings that follow from it.

CDK-free arithmetic shared by the template (``infra/task.py``,
``infra/service.py``) and the simulator. A task is ready after its image is
pulled (``[simulation] image_pull_s``) and its model is downloaded, loaded
into GPU memory and warmed up. With ``[service] model_size_gib`` the model
part is derived from the size; without it ``[simulation] model_load_s`` is
used as given.

Where AWS or vLLM publish no figure, the constant is a named guess.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from typing import Final

from ecs_gpu.spec import Spec
from ecs_gpu.spec.sections.capacity import GP3_BASELINE_MIBPS

# --- ECS limits (botocore ecs HealthCheck member docs) ---
# "You can specify between 0 and 300 seconds" (startPeriod).
MAX_START_PERIOD_S: Final = 300
# interval 5-300 s (default 30), timeout 2-60 s (default 5), retries 1-10 (default 3).
MAX_RETRIES: Final = 10
MIN_RETRIES: Final = 3

# --- the container health check we write ---
# The ECS default interval; a 10-s probe would add load for no gain, since the
# service's grace period and the ALB decide when traffic starts.
HEALTH_INTERVAL_S: Final = 30
# A GPU-bound server can answer /health slowly while it decodes a full batch.
HEALTH_TIMEOUT_S: Final = 10

# --- model readiness (named guesses: neither AWS nor vLLM publish these) ---
# Weights from the Hugging Face Hub or S3 over the network; the download
# goes no faster than the root volume writes (volume_write_mibps).
GUESS_DOWNLOAD_MIBPS: Final = 200.0
# Safetensors from disk (mostly page cache, just written) into GPU memory.
GUESS_LOAD_MIBPS: Final = 1024.0
# Engine start besides the weights: memory profiling, KV-cache allocation and
# CUDA-graph capture (vLLM logs 20-60 s for these on one GPU).
GUESS_ENGINE_WARMUP_S: Final = 60.0
# The service's grace period covers the expected start times this factor,
# so a slow download does not get a healthy task replaced mid-load.
GRACE_FACTOR: Final = 1.5
# Plus one ALB health-check round (2 x 30 s) after the model is up.
GRACE_MARGIN_S: Final = 60


@dataclass(frozen=True)
class HealthTimings:
    """The container health check and the service grace period, in seconds."""

    start_period_s: int
    interval_s: int
    timeout_s: int
    retries: int
    grace_period_s: int


def volume_write_mibps(spec: Spec) -> float:
    """The root volume's throughput: the spec's gp3 throughput, else gp3's baseline."""
    thr = spec.capacity.root_volume_throughput_mibps
    return float(thr if thr is not None else GP3_BASELINE_MIBPS)


def download_mibps(spec: Spec) -> float:
    """One task's download rate: the slower of the network and its share of the volume.

    A new instance starts every task it holds at once, and they all write to
    its one root volume: each gets that volume's throughput / tasks per instance.
    """
    return min(GUESS_DOWNLOAD_MIBPS, volume_write_mibps(spec) / max(1, spec.tasks_per_instance))


def model_ready_s(spec: Spec) -> float:
    """Container start to serving: download + load + warm-up, or model_load_s as given."""
    size = spec.service.model_size_gib
    if size is None:
        return spec.simulation.model_load_s
    mib = size * 1024.0
    return mib / download_mibps(spec) + mib / GUESS_LOAD_MIBPS + GUESS_ENGINE_WARMUP_S


@dataclass(frozen=True)
class ModelStart:
    """How long the model takes to serve, with every input of the estimate."""

    size_gib: float | None
    network_mibps: float
    volume_mibps: float
    tasks_per_instance: int
    download_mibps: float
    load_mibps: float
    warmup_s: float
    model_s: float
    image_pull_s: float
    grace_period_s: int

    def describe(self, path: str = "spec") -> str:
        """One line for validate: the estimate, its inputs, and the grace period it sets."""
        share = (
            f"{self.volume_mibps:g} MiB/s shared by {self.tasks_per_instance} tasks"
            if self.tasks_per_instance > 1
            else f"{self.volume_mibps:g} MiB/s"
        )
        if self.size_gib is None:
            return (
                f"{path}: [service] model_size_gib is not set, so the health-check grace "
                f"period ({self.grace_period_s} s) rests on [simulation] model_load_s = "
                f"{self.model_s:g} s: a model whose download takes longer has its tasks "
                "replaced mid-load until the deployment fails. Fix: set model_size_gib "
                "(the weights' GiB on disk) to size it from the download (the slower of "
                f"~{self.network_mibps:g} MiB/s and the root volume's {share})."
            )
        return (
            f"{path}: model start estimate {self.model_s:,.0f} s = {self.size_gib:g} GiB "
            f"downloaded at {self.download_mibps:g} MiB/s (the slower of the network's "
            f"~{self.network_mibps:g} MiB/s and the root volume's {share}) + loaded at "
            f"{self.load_mibps:g} MiB/s + {self.warmup_s:g} s engine warm-up; with the "
            f"{self.image_pull_s:g}-s image pull the service's health-check grace period is "
            f"{self.grace_period_s} s. Raise [capacity] root_volume_throughput_mibps to load "
            "faster where the volume is the slower."
        )


def model_start(spec: Spec) -> ModelStart:
    """The model part of a task's start (:func:`model_ready_s`) with its inputs."""
    return ModelStart(
        size_gib=spec.service.model_size_gib,
        network_mibps=GUESS_DOWNLOAD_MIBPS,
        volume_mibps=volume_write_mibps(spec),
        tasks_per_instance=max(1, spec.tasks_per_instance),
        download_mibps=download_mibps(spec),
        load_mibps=GUESS_LOAD_MIBPS,
        warmup_s=GUESS_ENGINE_WARMUP_S,
        model_s=model_ready_s(spec),
        image_pull_s=spec.simulation.image_pull_s,
        grace_period_s=health_timings(spec).grace_period_s,
    )


def running_to_healthy_s(spec: Spec) -> float:
    """From the container's start to its load balancer target healthy, for a model as
    slow as the grace period allows: :func:`model_ready_s` x :data:`GRACE_FACTOR`, then
    one ALB health-check round (:data:`GRACE_MARGIN_S`: the target group's healthy
    threshold x interval, 2 x 30 s, infra/loadbalancer.py).

    The image pull is not in it: ECS pulls while the task is PENDING and counts it
    RUNNING from the containers' start (aws-semantics.md §10 "A task RUNNING while its
    model loads"), so this is the time a RUNNING task may still not serve. The sleep
    path's quiet window outlasts it (:func:`ecs_gpu.design.paths.wake.quiet_minutes`).
    """
    return model_ready_s(spec) * GRACE_FACTOR + GRACE_MARGIN_S


def task_ready_s(spec: Spec) -> float:
    """Task placed to serving: the image pull, then the model."""
    return spec.simulation.image_pull_s + model_ready_s(spec)


def health_timings(spec: Spec) -> HealthTimings:
    """Start period, retries and grace period for the spec's model.

    ECS caps the start period at 300 s. A model that takes longer keeps the
    container from being marked unhealthy with more retries (up to 10 x 30 s
    more), and beyond that the service's grace period, which makes ECS
    ignore container and load-balancer health checks, covers the rest.
    """
    ready = model_ready_s(spec) * GRACE_FACTOR
    start = min(MAX_START_PERIOD_S, math.ceil(ready))
    beyond = max(0.0, ready - start)
    retries = min(MAX_RETRIES, MIN_RETRIES + math.ceil(beyond / HEALTH_INTERVAL_S))
    grace = math.ceil(task_ready_s(spec) * GRACE_FACTOR) + GRACE_MARGIN_S
    return HealthTimings(
        start_period_s=start,
        interval_s=HEALTH_INTERVAL_S,
        timeout_s=HEALTH_TIMEOUT_S,
        retries=retries,
        grace_period_s=grace,
    )


def health_check_command(port: int, path: str) -> list[str]:
    """``CMD-SHELL`` probe of ``http://127.0.0.1:<port><path>``: exit 0 on a 2xx answer.

    No curl is assumed: the vLLM, TGI and SGLang images ship python3 but not
    always curl, so python3 is tried first and curl only where python3 is absent.
    """
    url = f"http://127.0.0.1:{port}{path}"
    # The path may hold any printable character: quote for Python, then for sh.
    wait = HEALTH_TIMEOUT_S - 1
    py = f"import urllib.request; urllib.request.urlopen({json.dumps(url)}, timeout={wait})"
    shell = (
        f"if command -v python3 >/dev/null 2>&1; then python3 -c {shlex.quote(py)}; "
        f"else curl -fsS -o /dev/null --max-time {wait} {shlex.quote(url)}; fi"
    )
    return ["CMD-SHELL", shell]
