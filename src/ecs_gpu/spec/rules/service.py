"""[service]: what a task holds.

Shared memory, the model in GPU memory, the task definition's size, the
demand sidecar's room, secrets beside plain variables, Triton's metrics port.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ecs_gpu.contracts import demand_metric
from ecs_gpu.spec.messages import Problem
from ecs_gpu.spec.sections.service import ServiceSpec

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec


# /dev/shm pages are charged to the container's memory limit, which the server
# process shares: Python, CUDA contexts, the tokenizer and vLLM's CPU swap space
# live there too. Filling memory_mib with shm gets the server OOM-killed, so at
# least a quarter of the task's memory, and never under 1 GiB, stays for it.
SHM_PROCESS_MIN_MIB = 1024


def shm_limit_mib(memory_mib: int) -> int:
    """The largest shared_memory_mib a task of ``memory_mib`` may ask for."""
    return memory_mib - max(SHM_PROCESS_MIN_MIB, -(-memory_mib // 4))


def shm_memory_needed_mib(shm_mib: int) -> int:
    """The smallest memory_mib whose limit admits ``shm_mib`` of shared memory."""
    m = max(shm_mib + SHM_PROCESS_MIN_MIB, shm_mib * 4 // 3)
    while shm_limit_mib(m) < shm_mib:  # a step or two of rounding
        m += 1
    return m


def _shm_fits_memory(spec: Spec) -> Iterator[Problem]:
    svc = spec.service
    if svc.shared_memory_mib is None:
        return
    limit = shm_limit_mib(svc.memory_mib)
    if svc.shared_memory_mib > limit:
        need = f"raise memory_mib to at least {shm_memory_needed_mib(svc.shared_memory_mib)}"
        fix = f"lower it to at most {limit}, or {need}" if limit >= 1 else f"{need}, or remove it"
        yield Problem(
            "service.shared_memory_mib",
            svc.shared_memory_mib,
            f"/dev/shm counts inside the task's memory_mib ({svc.memory_mib}), and the "
            f"server needs at least a quarter of it and {SHM_PROCESS_MIN_MIB} MiB for itself",
            fix,
        )


# GPU memory a server needs besides the weights, per GPU: the CUDA context, NCCL
# buffers and activations (vLLM's profiler counts them as "non-torch memory",
# about 0.5-1 GiB per GPU). The KV cache needs more still, so this refuses
# only a model that can never load, not one that would run short of cache.
GPU_OVERHEAD_PER_GPU_MIB = 1024


def _weights_room_mib(spec: Spec) -> int:
    """GPU memory of one task left for the model's weights."""
    svc, it = spec.service, spec.instance
    return (it.gpu_memory_mib - GPU_OVERHEAD_PER_GPU_MIB) * svc.gpus_per_task


def _model_fits_gpu_memory(spec: Spec) -> Iterator[Problem]:
    svc, it = spec.service, spec.instance
    size = svc.model_size_gib
    if size is None or svc.gpus_per_task > it.gpus:
        return  # _task_gpus says why the task never places
    have = it.gpu_memory_mib * svc.gpus_per_task
    room = _weights_room_mib(spec)
    if size * 1024 <= room:
        return
    need = math.ceil(size * 1024 / (it.gpu_memory_mib - GPU_OVERHEAD_PER_GPU_MIB))
    fix = "check the size (the weights' GiB on disk), use a quantized model of at most "
    fix += f"{room / 1024:.1f} GiB"
    if need <= it.gpus:
        fix += f", give the task {need} GPUs (gpus_per_task)"
    fix += ", or pick an instance type with more GPU memory (`ecs-gpu catalog`, column GPU MiB)"
    yield Problem(
        "service.model_size_gib",
        size,
        f"the weights do not fit the task's GPU memory: {svc.gpus_per_task} x "
        f"{it.gpu_model} has {have} MiB, and the server needs about "
        f"{GPU_OVERHEAD_PER_GPU_MIB} MiB per GPU besides the weights "
        f"({room} MiB left for them), so the model can never load",
        fix,
    )


# "The maximum size of a task definition is 64 KiB" (Amazon ECS service quotas,
# https://docs.aws.amazon.com/AmazonECS/latest/developerguide/service-quotas.html,
# "Task definition size"). TASK_DEFINITION_OTHER_BYTES: the container
# definitions' fixed part (names, health check, log configuration, resource
# requirements, the sidecar's other keys), generously; the template's is about 3 KB.
TASK_DEFINITION_MAX_BYTES = 64 * 1024
TASK_DEFINITION_OTHER_BYTES = 6 * 1024


def task_definition_bytes(svc: ServiceSpec) -> int:
    """An estimate of the registered task definition's size in bytes, from the spec."""
    user: list[Any] = [{"name": k, "value": v} for k, v in svc.environment.items()]
    user += [{"name": k, "valueFrom": v} for k, v in svc.secrets.items()]
    user += [svc.command or []]
    size = len(json.dumps(user).encode()) + TASK_DEFINITION_OTHER_BYTES
    if svc.metrics is not None:
        # The sidecar's script rides in its environment, base64-encoded.
        size += 4 * -(-len(demand_metric.embedded_script().encode()) // 3)
    return size


def _task_definition_size(spec: Spec) -> Iterator[Problem]:
    svc = spec.service
    size = task_definition_bytes(svc)
    if size <= TASK_DEFINITION_MAX_BYTES:
        return
    yield Problem(
        "service.environment",
        f"{len(svc.environment)} variables, {len(svc.command or [])} command arguments",
        f"the task definition would be about {size:,} bytes, and ECS registers at most "
        f"{TASK_DEFINITION_MAX_BYTES:,} (64 KiB, ECS service quotas)",
        "move large values out of the task definition: into a file in the image, an S3 "
        "object the server reads at start, or [service] secrets (a reference, not the value)",
    )


# ECS's task-size minimums also hold for what the demand sidecar leaves the server.
MIN_SERVER_CPU_UNITS = 128
MIN_SERVER_MEMORY_MIB = 128


def server_share(svc: ServiceSpec) -> tuple[int, int]:
    """(cpu units, MiB) the server container keeps: the task less the demand sidecar."""
    if svc.metrics is None:
        return svc.cpu_units, svc.memory_mib
    return (
        svc.cpu_units - demand_metric.SIDECAR_CPU_UNITS,
        svc.memory_mib - demand_metric.SIDECAR_MEMORY_MIB,
    )


def _sidecar_room(spec: Spec) -> Iterator[Problem]:
    svc = spec.service
    if svc.metrics is None:
        return
    cpu, memory = server_share(svc)
    # /dev/shm pages count against the server's memory (_shm_fits_memory checks the task's).
    floor = max(MIN_SERVER_MEMORY_MIB, svc.shm_mib or 0)
    if cpu >= MIN_SERVER_CPU_UNITS and memory >= floor:
        return
    key, value = ("service.cpu_units", svc.cpu_units)
    if cpu >= MIN_SERVER_CPU_UNITS:
        key, value = ("service.memory_mib", svc.memory_mib)
    yield Problem(
        key,
        value,
        f"[service.metrics] adds a sidecar of {demand_metric.SIDECAR_CPU_UNITS} CPU units and "
        f"{demand_metric.SIDECAR_MEMORY_MIB} MiB, leaving the server {cpu} units and {memory} "
        f"MiB of the task's {svc.cpu_units} units and {svc.memory_mib} MiB (it needs at least "
        f"{MIN_SERVER_CPU_UNITS} units and {floor} MiB)",
        f"raise cpu_units to at least {MIN_SERVER_CPU_UNITS + demand_metric.SIDECAR_CPU_UNITS} "
        f"and memory_mib to at least {floor + demand_metric.SIDECAR_MEMORY_MIB}, or leave both "
        "out to get the task's share of the instance",
    )


def _secret_not_also_plain(spec: Spec) -> Iterator[Problem]:
    svc = spec.service
    both = sorted(set(svc.secrets) & set(svc.environment))
    if both:
        yield Problem(
            "service.secrets",
            both,
            "also set in [service] environment; the container would get two values for "
            "one name, and a secret must not sit in the template as plain text",
            f"remove {', '.join(both)} from environment",
        )


# Triton serves Prometheus metrics on its own port (--metrics-port), not on
# the HTTP port vLLM, TGI and SGLang share with their API.
TRITON_METRICS_PORT = 8002


def _metrics_port(spec: Spec) -> Iterator[Problem]:
    m = spec.service.metrics
    if m is not None and m.preset == "triton" and m.port is None:
        yield Problem(
            "service.metrics.preset",
            "triton",
            f"Triton serves /metrics on its metrics port ({TRITON_METRICS_PORT} by default), "
            f"not on container_port ({spec.service.container_port}), which is the default "
            "of service.metrics.port",
            f"add `port = {TRITON_METRICS_PORT}` under [service.metrics] (or the port you "
            "pass to --metrics-port)",
        )
