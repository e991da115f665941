"""host.agent: the host CloudWatch agent's config (its schema, the metric contract, the
host logs) and ecs.config."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ecs_gpu import catalog, host
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.spec import Spec, parse_spec

from .conftest import (
    BUILT_SPEC,
    ROOT,
)

# --- the agent config ------------------------------------------------------------------


def test_agent_config_validates_against_the_agent_schema(spec: Spec) -> None:
    assert host.validate_agent_config(host.agent_config(spec)) == []


def test_agent_schema_is_the_copied_upstream_file() -> None:
    schema = host.agent_schema()
    assert schema["$schema"].startswith("http://json-schema.org/draft-04")
    notice = ROOT / "src" / "ecs_gpu" / "data" / "cloudwatch-agent" / "NOTICE"
    text = notice.read_text()
    assert "aws/amazon-cloudwatch-agent" in text and "ab55b8daa" in text
    assert "MIT License" in text


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda c: c["metrics"].__setitem__("namespace", 5), "$.metrics.namespace", "string"),
        (
            lambda c: c["logs"]["logs_collected"]["files"]["collect_list"][0].__setitem__(
                "file", "/var/log/x"
            ),
            "$.logs.logs_collected.files.collect_list[0]",
            "additional properties",
        ),
        (
            lambda c: c["metrics"]["metrics_collected"]["nvidia_gpu"].pop("measurement"),
            "$.metrics.metrics_collected.nvidia_gpu",
            "required",
        ),
        (
            lambda c: c["metrics"]["metrics_collected"]["nvidia_gpu"]["measurement"].append(
                "utilisation_gpu"
            ),
            "$.metrics.metrics_collected.nvidia_gpu.measurement[3]",
            "utilization_gpu",
        ),
    ],
    ids=["wrong-type", "unknown-key", "missing-required", "misspelt-measurement"],
)
def test_broken_agent_config_is_rejected(mutate: Any, path: str, words: str) -> None:
    cfg = host.agent_config(parse_spec(BUILT_SPEC, "built.toml"))
    mutate(cfg)
    problems = host.validate_agent_config(cfg, source="agent.json")
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"agent.json: {path}")
    assert words.lower() in problems[0].lower()
    assert "Fix:" in problems[0]


def test_agent_config_follows_the_metric_contract(spec: Spec) -> None:
    cfg = host.agent_config(spec)
    metrics = cfg["metrics"]
    assert metrics["namespace"] == gpu_metric.NAMESPACE
    assert metrics["append_dimensions"] == {gpu_metric.DIMENSION: gpu_metric.APPEND_DIMENSION_VALUE}
    assert metrics["aggregation_dimensions"] == [[gpu_metric.DIMENSION]]
    assert metrics["force_flush_interval"] == gpu_metric.FORCE_FLUSH_INTERVAL_S
    assert list(metrics["metrics_collected"]) == ["nvidia_gpu"]
    nvidia = metrics["metrics_collected"]["nvidia_gpu"]
    assert tuple(nvidia["measurement"]) == gpu_metric.MEASUREMENTS
    assert nvidia["metrics_collection_interval"] == gpu_metric.COLLECTION_INTERVAL_S
    emitted = tuple(gpu_metric.metric_name(m) for m in nvidia["measurement"])
    assert emitted == gpu_metric.METRIC_NAMES
    assert cfg["agent"]["run_as_user"] == "root"


def test_agent_ships_the_host_logs_to_the_host_log_group(spec: Spec) -> None:
    collect = host.agent_config(spec)["logs"]["logs_collected"]["files"]["collect_list"]
    paths = {c["file_path"] for c in collect}
    assert {
        "/var/log/ecs/ecs-agent.log*",
        "/var/log/ecs/ecs-init.log",
        "/var/log/cloud-init-output.log",
        host.AGENT_LOG,
    } <= paths
    assert {c["log_group_name"] for c in collect} == {Names(spec.service.name).host_log_group}
    streams = [c["log_stream_name"] for c in collect]
    assert len(set(streams)) == len(streams)
    assert all(s.startswith("{instance_id}/") for s in streams)
    # The stack owns the group and its retention: the agent needs no
    # CreateLogGroup or PutRetentionPolicy, only the calls GpuService grants.
    assert all("retention_in_days" not in c and "log_group_class" not in c for c in collect)
    assert "logs:CreateLogGroup" not in host.AGENT_LOG_ACTIONS


# --- ecs.config ------------------------------------------------------------------------


def test_ecs_config_registers_gpus_in_the_named_cluster(spec: Spec) -> None:
    text = host.ecs_config(spec)
    lines = text.splitlines()
    # A systemd EnvironmentFile: plain KEY=value lines only.
    assert all(re.fullmatch(r"ECS_[A-Z_]+=\S+", line) for line in lines), lines
    env = dict(line.split("=", 1) for line in lines)
    assert len(env) == len(lines)
    assert env["ECS_CLUSTER"] == Names(spec.service.name).cluster
    assert env["ECS_ENABLE_GPU_SUPPORT"] == "true"
    assert env["ECS_RESERVED_MEMORY"] == str(catalog.ECS_RESERVED_MEMORY_MIB)
    if spec.capacity.warm_pool is None:
        # Without a warm pool the flag only delays registration, and
        # prefer-cached would run a stale image for a moved tag.
        assert "ECS_WARM_POOLS_CHECK" not in env
        assert "ECS_IMAGE_PULL_BEHAVIOR" not in env
    else:
        # The ECS docs' requirement; and a warm start pulls nothing.
        assert env["ECS_WARM_POOLS_CHECK"] == "true"
        assert env["ECS_IMAGE_PULL_BEHAVIOR"] == "prefer-cached"
