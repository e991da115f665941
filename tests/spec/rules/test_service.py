"""Service rules (spec/rules/service.py): shared memory, secrets beside plain variables, Triton's
metrics port, the model in GPU memory, the task definition's size."""

from __future__ import annotations

import pytest

from ecs_gpu.spec import parse_spec
from ecs_gpu.spec.rules.service import shm_limit_mib, shm_memory_needed_mib

from ..specdata import (
    _SSM,
    CONC,
    FULL,
    PATH,
    dumps,
    edited,
    one_problem,
    problems,
    with_,
)


def test_shared_memory_leaves_a_quarter_of_the_task_to_the_server() -> None:
    # 12288 MiB: a quarter (3072) stays for the server, so 9216 is the most.
    assert shm_limit_mib(12288) == 9216
    assert parse_spec(with_("service", shared_memory_mib=9216), PATH).service.shm_mib == 9216
    line = one_problem(
        with_("service", shared_memory_mib=9217), "service.shared_memory_mib", "9217"
    )
    assert "counts inside the task's memory_mib (12288)" in line
    assert "lower it to at most 9216, or raise memory_mib to at least 12290" in line


def test_shared_memory_on_a_small_task_keeps_one_gib() -> None:
    assert shm_limit_mib(2048) == 1024  # 1 GiB, not a quarter, binds here
    line = one_problem(
        with_("service", memory_mib=1024, shared_memory_mib=512), "service.shared_memory_mib"
    )
    assert "lower it" not in line and "raise memory_mib to at least 1536" in line
    # The suggested size is enough.
    ok = with_("service", memory_mib=1536, shared_memory_mib=512)
    assert parse_spec(ok, PATH).service.shm_mib == 512


@pytest.mark.parametrize("shm", [1, 64, 1000, 4096, 16384, 10**6])
def test_shared_memory_fix_always_names_a_memory_that_fits(shm: int) -> None:
    need = shm_memory_needed_mib(shm)
    assert shm_limit_mib(need) >= shm and shm_limit_mib(need - 1) < shm


def test_secret_also_in_environment_is_refused() -> None:
    line = one_problem(
        with_("service", secrets={"HF_HOME": _SSM, "HF_TOKEN": _SSM}), "service.secrets"
    )
    assert "service.secrets = ['HF_HOME']" in line
    assert "Fix: remove HF_HOME from environment" in line


def test_triton_needs_its_metrics_port() -> None:
    text = edited(CONC, service={"metrics": {"preset": "triton"}})
    line = one_problem(text, "service.metrics.preset", "'triton'")
    assert "not on container_port (8000)" in line and "add `port = 8002`" in line
    spec = parse_spec(edited(CONC, service={"metrics": {"preset": "triton", "port": 8002}}), PATH)
    assert spec.service.metrics is not None
    # Triton publishes no running series: only the queue counts unless one is named.
    assert spec.service.metrics.names == ("nv_inference_pending_request_count",)


def test_metrics_on_another_port_is_fine() -> None:
    spec = parse_spec(edited(CONC, service={"metrics": {"port": 9090}}), PATH)
    assert spec.service.metrics is not None and spec.service.metrics.port == 9090


def test_a_model_larger_than_the_gpus_is_refused_with_the_numbers() -> None:
    line = one_problem(with_("service", model_size_gib=500.0), "service.model_size_gib", "500.0")
    assert "1 x NVIDIA A10G has 22888 MiB" in line and "21864 MiB left" in line
    assert "quantized model of at most 21.4 GiB" in line
    # 21 GiB of weights fit: 21,504 MiB <= 22,888 - 1,024.
    assert parse_spec(with_("service", model_size_gib=21.0), PATH).service.model_size_gib == 21.0


def test_a_model_that_needs_more_gpus_says_how_many() -> None:
    text = edited(
        FULL,
        service={"model_size_gib": 60.0, "cpu_units": ..., "memory_mib": ...},
        capacity={"instance_type": "g5.12xlarge"},
    )
    line = next(line for line in problems(text) if "model_size_gib" in line)
    assert "give the task 3 GPUs (gpus_per_task)" in line


def test_task_definition_size_is_estimated_against_64_kib() -> None:
    from ecs_gpu.spec.rules.service import TASK_DEFINITION_MAX_BYTES, task_definition_bytes

    line = one_problem(with_("service", environment={"BIG": "x" * 70_000}), "service.environment")
    assert "about 76," in line and "at most 65,536 (64 KiB" in line
    small = parse_spec(dumps(FULL), PATH)
    assert task_definition_bytes(small.service) < TASK_DEFINITION_MAX_BYTES // 8
    # The sidecar's script counts: the concurrency baseline is larger by its base64.
    assert task_definition_bytes(parse_spec(dumps(CONC), PATH).service) > task_definition_bytes(
        small.service
    )
