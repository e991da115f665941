"""The TOML spec: pydantic models, cross-field rules, and errors that say how to fix them.

Key names here are public interface (docs/spec.md). A spec is loaded with
:func:`load_spec` (a file) or :func:`parse_spec` (text); both raise
:class:`~ecs_gpu.errors.SpecError` whose every line names the file, the key,
the value, what is wrong and how to fix it.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import math
import re
import tomllib
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ecs_gpu import catalog, demand_metric
from ecs_gpu.ami import AMI_ID_PATTERN, RECOMMENDED_COMMAND
from ecs_gpu.errors import SpecError
from ecs_gpu.inputs import read_text

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DRIVER_CAPABILITIES = {"all", "compute", "compat32", "graphics", "utility", "video", "display"}
# ECS sets NVIDIA_VISIBLE_DEVICES to the UUIDs of the GPUs it pinned to the
# container (aws-semantics.md §3); a user value would break that pinning.
RESERVED_ENV = {"NVIDIA_VISIBLE_DEVICES": "ECS sets it to the GPUs it assigned to the task"}


class RuleError(ValueError):
    """A validator's complaint that carries its own fix, shown after "Fix:"."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(what)
        self.fix = fix


# The largest integer the AWS APIs' "integer" shapes take (botocore: Smithy int32).
INT32_MAX = 2**31 - 1
# Integer keys that reach a double field instead (TargetValue), with their own bound.
NOT_INT32_KEYS = frozenset({"request_count_target"})
# TargetTrackingScalingPolicyConfiguration.TargetValue: "Values must be in the range
# of -2^360 to 2^360" (botocore 1.44 application-autoscaling 2016-02-06 model).
TARGET_VALUE_MAX = 2**360


class _Section(BaseModel):
    # allow_inf_nan=False: TOML has nan and inf literals, and either would
    # pass a `gt=0` or reach the simulator as a rate. Every float key also has
    # a finite range (comments at each): the simulator multiplies and divides
    # them, so 1e308 or 5e-324 would overflow to inf or divide by almost zero.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    @field_validator("*")
    @classmethod
    def _no_negative_zero(cls, v: Any) -> Any:
        # TOML's -0.0 passes ge=0 and would print as "-0" in reports.
        return 0.0 if isinstance(v, float) and v == 0 else v

    @field_validator("*")
    @classmethod
    def _int32(cls, v: Any, info: ValidationInfo) -> Any:
        # TOML integers are 64-bit and Python's unbounded, but every integer key
        # ends in an AWS API field of type integer (ASG MaxSize, the scalable
        # target's MaxCapacity, container Cpu/Memory, the warm pool's sizes):
        # 32-bit in the botocore models. The template would deploy and fail.
        # Every integer key has a lower bound of 0 or more, so only the top is checked.
        if type(v) is int and v > INT32_MAX and info.field_name not in NOT_INT32_KEYS:
            raise RuleError(
                f"is larger than {INT32_MAX:,}, the largest value AWS's APIs take here "
                "(a 32-bit integer)",
                f"lower it to {INT32_MAX:,} or less (the value you mean is likely far smaller)",
            )
        return v


# Secrets Manager secret ARN (with an optional ":json-key:stage:id" tail, as
# ECS's valueFrom takes it) or SSM Parameter Store parameter ARN.
SECRET_ARN_RE = (
    r"^arn:aws[a-z-]*:(secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+(:[^:\s]*){0,3}"
    r"|ssm:[a-z0-9-]+:\d{12}:parameter/[A-Za-z0-9/_.-]+)$"
)
# Automatic /dev/shm for multi-GPU tasks: a quarter of the task's memory, at
# most 16 GiB (vLLM's docs run tensor-parallel containers with --shm-size or
# --ipc=host; NCCL's shared-memory transport needs a few GiB at most).
AUTO_SHM_MAX_MIB = 16384
# Largest model we accept a size for; 2 TiB is above any open-weight model in
# 16-bit precision today and keeps later arithmetic finite. The smallest, 10
# MiB, is below any model worth a GPU: smaller is a unit mistake (MiB for GiB).
MAX_MODEL_GIB = 2048.0
MIN_MODEL_GIB = 0.01
# Prometheus series per server (each project's metrics docs): running and
# waiting requests, summed into the task's concurrency.
METRICS_PRESETS: dict[str, tuple[str, str]] = {
    "vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
    "tgi": ("tgi_batch_current_size", "tgi_queue_size"),
    "sglang": ("sglang:num_running_reqs", "sglang:num_queue_reqs"),
    "triton": ("nv_inference_pending_request_count", ""),
}
PROM_NAME_RE = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"


# RegisterTaskDefinition's documented limits on ContainerDefinition.image
# (botocore's ECS model): up to 255 letters, digits, - _ : . / and # for
# repository-url/image:tag, or repository@sha256:<64 hex digits>. synth, deploy,
# diff and plan read the spec through here, so none of them hands CloudFormation
# an image ECS would refuse ("$(reboot)", quotes); validate.py checks the
# template's other images with the same function.
ECS_IMAGE_MAX = 255
_IMAGE_TAG_CHARS = re.compile(r"[A-Za-z0-9_:./#-]+")
_IMAGE_DIGEST = re.compile(r"sha256:[A-Fa-f0-9]{64}")


def image_problem(image: str) -> tuple[str, str] | None:
    """(what is wrong, the fix) when ECS would refuse ``image``; None when it takes it."""
    if "@" in image:
        name, _, digest = image.partition("@")
        if len(name) > ECS_IMAGE_MAX:
            return (
                f"the part before '@' is {len(name)} characters; ECS allows at most "
                f"{ECS_IMAGE_MAX}",
                "use a shorter repository path",
            )
        if not _IMAGE_DIGEST.fullmatch(digest):
            return (
                "the digest after '@' must be sha256: and 64 hex digits (ECS supports no other)",
                "copy the digest from `docker inspect` or ECR",
            )
        if not _IMAGE_TAG_CHARS.fullmatch(name):
            return (
                "ECS allows only letters, digits, - _ : . / and # in an image reference",
                "remove the other characters (spaces, quotes, $, ;, parentheses)",
            )
        return None
    if len(image) > ECS_IMAGE_MAX:
        return (
            f"{len(image)} characters; ECS allows at most {ECS_IMAGE_MAX} for "
            "repository-url/image:tag",
            "use a shorter repository path or tag, or pin by digest (repository@sha256:...)",
        )
    if not _IMAGE_TAG_CHARS.fullmatch(image):
        return (
            "ECS allows only letters, digits, - _ : . / and # in an image reference",
            "remove the other characters (spaces, quotes, $, ;, parentheses)",
        )
    return None


class ServiceMetricsSpec(_Section):
    """[service.metrics]: where the serving image publishes Prometheus metrics."""

    preset: Literal["vllm", "tgi", "sglang", "triton"] = "vllm"
    # Default: the container port (vLLM, TGI and SGLang serve /metrics there).
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    path: Annotated[str, Field(pattern=r"^/[!-~]*$", max_length=1024)] = "/metrics"
    running_metric: Annotated[str, Field(pattern=PROM_NAME_RE, max_length=200)] | None = None
    waiting_metric: Annotated[str, Field(pattern=PROM_NAME_RE, max_length=200)] | None = None

    @property
    def absent_is_zero(self) -> bool:
        """TGI exports a gauge only once it is first set (its metrics-rs exporter),
        so an idle, freshly started server has neither series: that reads as 0."""
        return self.preset == "tgi"

    @property
    def names(self) -> tuple[str, ...]:
        """The Prometheus series whose sum is the task's concurrency."""
        running, waiting = METRICS_PRESETS[self.preset]
        picked = (self.running_metric or running, self.waiting_metric or waiting)
        return tuple(n for n in picked if n)


class ServiceSpec(_Section):
    name: str
    image: Annotated[str, Field(min_length=1)]
    gpus_per_task: Annotated[int, Field(ge=1)] = 1
    # Optional in TOML: Spec fills in the task's share of the instance
    # (see _default_task_size), so both are plain ints from here on.
    cpu_units: Annotated[int, Field(ge=128)]
    memory_mib: Annotated[int, Field(ge=128)]
    container_port: Annotated[int, Field(ge=1, le=65535)] = 8000
    environment: dict[str, str] = Field(default_factory=dict)
    # Container secrets: env name -> Secrets Manager secret ARN (optionally with
    # ":json-key:version-stage:version-id") or SSM parameter ARN. Gated models
    # need an HF token that must not sit in the template as plain environment.
    secrets: dict[str, Annotated[str, Field(pattern=SECRET_ARN_RE)]] = Field(default_factory=dict)
    # /dev/shm of the container. NCCL between a task's GPUs needs far more than
    # Docker's 64 MiB; shm pages count against the container's memory.
    shared_memory_mib: Annotated[int, Field(ge=1)] | None = None
    # GET on localhost:container_port that answers 200 once the model is loaded
    # (vLLM, TGI and SGLang: /health; Triton: /v2/health/ready).
    health_check_path: Annotated[str, Field(pattern=r"^/[!-~]*$", max_length=1024)] = "/health"
    # Size of the weights the container downloads and loads: it sizes the
    # container health check's start period and the service's grace period.
    model_size_gib: Annotated[float, Field(ge=MIN_MODEL_GIB, le=MAX_MODEL_GIB)] | None = None
    # [service.metrics]: the image serves Prometheus metrics; enables the
    # concurrency signal.
    metrics: ServiceMetricsSpec | None = None
    command: list[str] | None = None
    nvidia_driver_capabilities: str = "utility,compute"
    log_retention_days: Literal[1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731] = 30

    @property
    def shm_mib(self) -> int | None:
        """Shared memory to give the container, or None for Docker's default."""
        if self.shared_memory_mib is not None:
            return self.shared_memory_mib
        if self.gpus_per_task > 1:
            return min(AUTO_SHM_MAX_MIB, self.memory_mib // 4)
        return None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.fullmatch(v) or "--" in v:
            raise RuleError(
                "must be 2-32 characters: lowercase letters, digits and single hyphens, "
                "starting with a letter and not ending with a hyphen (it names the stack, "
                "the cluster and the service)",
                'rename it, e.g. name = "vllm-g5"',
            )
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        if any(c.isspace() for c in v):
            raise RuleError(
                "an image reference has no spaces",
                'write it as registry/repository:tag, e.g. "vllm/vllm-openai:v0.11.0"',
            )
        problem = image_problem(v)
        if problem is not None:
            raise RuleError(*problem)
        return v

    @field_validator("environment")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for k, val in v.items():
            if not ENV_NAME_RE.fullmatch(k):
                raise RuleError(
                    f"{k!r} is not a valid environment variable name",
                    "use letters, digits and underscores, not starting with a digit",
                )
            if k in RESERVED_ENV:
                raise RuleError(
                    f"{k} = {val!r} must not be set: {RESERVED_ENV[k]}",
                    f"remove {k} from [service] environment",
                )
            if k == "NVIDIA_DRIVER_CAPABILITIES":
                raise RuleError(
                    f"{k} = {val!r} has its own key, checked against the capabilities "
                    "the NVIDIA runtime knows",
                    f"remove it from environment and write nvidia_driver_capabilities = {val!r} "
                    "under [service]",
                )
        return v

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, v: dict[str, str]) -> dict[str, str]:
        # The same names environment takes: ECS sets each as a variable.
        for k in v:
            if not ENV_NAME_RE.fullmatch(k):
                raise RuleError(
                    f"{k!r} is not a valid environment variable name",
                    "use letters, digits and underscores, not starting with a digit, "
                    'e.g. HF_TOKEN = "arn:aws:secretsmanager:..."',
                )
            if k in RESERVED_ENV or k == "NVIDIA_DRIVER_CAPABILITIES":
                why = RESERVED_ENV.get(k, "it has its own key, nvidia_driver_capabilities")
                raise RuleError(
                    f"{k} must not be set: {why}",
                    f"remove {k} from [service] secrets",
                )
        return v

    @field_validator("nvidia_driver_capabilities")
    @classmethod
    def _caps(cls, v: str) -> str:
        parts = [p.strip() for p in v.split(",")]
        bad = [p for p in parts if p not in DRIVER_CAPABILITIES]
        if not parts or bad:
            raise RuleError(
                f"unknown capability {', '.join(repr(b) for b in bad) or repr(v)}",
                f"use a comma-separated list of {', '.join(sorted(DRIVER_CAPABILITIES))}; "
                "AWS documents 'utility,compute' (the default) or 'all'",
            )
        return ",".join(parts)


class WarmPoolSpec(_Section):
    """[capacity.warm_pool]: an EC2 Auto Scaling warm pool for the GPU ASG."""

    min_size: Annotated[int, Field(ge=0)] = 1
    # MaxGroupPreparedCapacity: the group's instances and the pool's together.
    # None: prepared_capacity's default, never AWS's (the group's max size).
    max_prepared: Annotated[int, Field(ge=0)] | None = None
    # Stopped: pay only for the EBS volume while waiting (AWS::AutoScaling::WarmPool).
    pool_state: Literal["Stopped", "Hibernated", "Running"] = "Stopped"
    reuse_on_scale_in: bool = False

    @property
    def prepared_capacity(self) -> int:
        """The MaxGroupPreparedCapacity the template deploys and the simulator runs.

        Unset, AWS keeps max size - desired instances prepared (PutWarmPool):
        a stopped GPU instance and its volume for every one the group could
        still add, and each scale-in boots one more. The default, min_size
        (at least 1), gives the pool an absolute size: PutWarmPool sizes it
        max(MinSize, MaxGroupPreparedCapacity - desired), which is min_size
        whatever the group runs; with min_size 0, one instance waits while
        the group has none (aws-semantics §4 "Pool size").
        """
        return self.max_prepared if self.max_prepared is not None else max(1, self.min_size)


# gp3 limits, from the EC2 API (botocore 1.44's ec2 model, CreateVolume and
# LaunchTemplateEbsBlockDeviceRequest: Iops, Throughput, VolumeSize; the
# CloudFormation AWS::EC2::LaunchTemplate Ebs schema says the same): 3,000
# (the default) to 80,000 IOPS, 125 to 2,000 MiB/s, 1 to 65,536 GiB. The two
# ratios are in the EBS User Guide's gp3 section ("maximum ratio of
# provisioned IOPS to provisioned volume size is 500 IOPS per GiB", "of
# provisioned throughput to provisioned IOPS is .25 MiB/s per IOPS"; CDK's
# ec2 Volume and block-device checks use the same 500 and 0.25).
GP3_BASELINE_IOPS = 3000
# What a gp3 volume writes without root_volume_throughput_mibps (the EBS User
# Guide's gp3 baseline, the API's smallest Throughput).
GP3_BASELINE_MIBPS = 125
GP3_MAX_GIB = 65536
GP3_MAX_IOPS_PER_GIB = 500
# 0.25 MiB/s per IOPS, kept whole: throughput x 4 <= IOPS.
GP3_IOPS_PER_MIBPS = 4


class CapacitySpec(_Section):
    instance_type: str
    min_instances: Annotated[int, Field(ge=0)] = 0
    max_instances: Annotated[int, Field(ge=1)]
    target_capacity_percent: Annotated[int, Field(gt=0, le=100)] = 100
    capacity_reservation_id: Annotated[str, Field(pattern=r"^cr-[0-9a-f]{17}$")] | None = None
    reserved_instances: Annotated[int, Field(ge=1)] | None = None
    # Pins the GPU AMI (the template's AMI parameter default). Without it
    # deploy gives a new stack the recommended ECS GPU AMI and keeps an
    # existing stack's AMI until --update-ami (ecs_gpu.ami).
    ami_id: Annotated[str, Field(pattern=AMI_ID_PATTERN)] | None = None
    # Root EBS volume of each instance (gp3). Images and the model weights a
    # container downloads land here, and ECS keeps a stopped container's layer
    # for 3 h (ECS_ENGINE_TASK_CLEANUP_WAIT_DURATION), so a redeploy holds two
    # copies. 30: the ECS AMIs' root snapshot (aws/amazon-ecs-ami
    # block_device_size_gb); GP3_MAX_GIB: the largest gp3 volume.
    root_volume_gib: Annotated[int, Field(ge=30, le=GP3_MAX_GIB)] = 200
    # gp3 performance of that volume; None keeps gp3's baseline (3,000 IOPS,
    # 125 MiB/s). Image extraction and weight loading are throughput-bound.
    # Bounds: gp3's (see GP3_*); the ratios between the three are _gp3_ratios.
    root_volume_iops: Annotated[int, Field(ge=GP3_BASELINE_IOPS, le=80000)] | None = None
    root_volume_throughput_mibps: Annotated[int, Field(ge=GP3_BASELINE_MIBPS, le=2000)] | None = (
        None
    )
    # [capacity.warm_pool]: pre-initialized instances that start in about a
    # minute instead of booting and pulling the image.
    warm_pool: WarmPoolSpec | None = None

    @field_validator("instance_type")
    @classmethod
    def _type(cls, v: str) -> str:
        try:
            catalog.lookup(v)
        except catalog.UnknownInstanceType as e:
            raise RuleError(
                str(e), 'pick a type that `ecs-gpu catalog` lists, e.g. "g5.xlarge"'
            ) from None
        return v

    @property
    def instance(self) -> catalog.InstanceType:
        return catalog.lookup(self.instance_type)


class ScalingSpec(_Section):
    # min_tasks >= 1: with no task there is no GPU or CPU datapoint, the
    # alarms sit in INSUFFICIENT_DATA and target tracking never scales out
    # again (aws-semantics.md §1 "Rounding / missing data").
    min_tasks: Annotated[int, Field(ge=1)] = 1
    max_tasks: Annotated[int, Field(ge=1)]
    # At least 1 %: below that any noise is above target (scale to max_tasks),
    # and the simulator divides each task's capacity by the target.
    gpu_target_percent: Annotated[float, Field(ge=1, le=100)] = 70.0
    cpu_target_percent: Annotated[float, Field(ge=1, le=100)] = 70.0
    scale_in_cooldown_s: Annotated[int, Field(ge=0, le=3600)] = 300
    scale_out_cooldown_s: Annotated[int, Field(ge=0, le=3600)] = 60
    # What the service scales on. "concurrency": in-flight + waiting requests
    # per task, scraped from the server's Prometheus metrics (demand_metric.py;
    # the default when [service.metrics] is present). "task-gpus": utilization
    # of the GPUs tasks hold, by metric math over the agent's ASG average and
    # ECS's GPUReservation (gpu_metric.py; the default otherwise);
    # "asg-average": the agent's ASG-wide average, which counts idle, unreserved
    # GPUs as 0 % (the reference module's design). The old key `gpu_metric` is
    # read as this one.
    signal: Literal["concurrency", "task-gpus", "asg-average"] = "task-gpus"
    # Requests in flight or waiting per task that target tracking holds. At
    # least 0.1 (desired tasks = concurrency / target must stay finite); at
    # most 100,000, far above any server's batch (vLLM's max_num_seqs: 256-1024).
    target_concurrency_per_task: Annotated[float, Field(ge=0.1, le=100000)] | None = None
    # With "concurrency": also track GPU utilization (gpu_target_percent) as a
    # guard. Off by default: continuous batching keeps NVML utilization near
    # 100 % with a single request, which would hold the fleet at max_tasks.
    gpu_guard: bool = False
    # The fast path: a step-scaling policy on a 10-second alarm. Default on with
    # "concurrency"; the GPU signals have no 10-second series.
    fast_scale_out: bool | None = None
    # The fast path fires when per-task concurrency exceeds this percentage of
    # the target (Knative's panic threshold, 200 % by default).
    panic_threshold_percent: Annotated[float, Field(ge=110, le=1000)] = 200.0

    @model_validator(mode="before")
    @classmethod
    def _old_key(cls, data: Any) -> Any:
        # `gpu_metric` was the key before `signal` took the concurrency option.
        if isinstance(data, dict) and "gpu_metric" in data:
            data = dict(data)
            old = data.pop("gpu_metric")
            if "signal" in data:
                raise RuleError(
                    "gpu_metric and signal are both set; gpu_metric is the old name of signal",
                    "remove gpu_metric",
                )
            data["signal"] = old
        return data

    @property
    def gpu_metric(self) -> Literal["task-gpus", "asg-average"]:
        """The GPU series the GPU policy (or the GPU guard) tracks."""
        return "asg-average" if self.signal == "asg-average" else "task-gpus"

    @property
    def fast_scale_out_enabled(self) -> bool:
        if self.fast_scale_out is None:
            return self.signal == "concurrency"
        return self.fast_scale_out


class NetworkSpec(_Section):
    vpc_id: Annotated[str, Field(pattern=r"^vpc-[0-9a-f]{8,17}$")]
    # Private subnets with a route to the internet (NAT) for instances and tasks.
    subnet_ids: Annotated[
        list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")]], Field(min_length=1)
    ]
    # Public subnets, needed only for an internet-facing load balancer.
    public_subnet_ids: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")]] | None = None


class LoadBalancerSpec(_Section):
    scheme: Literal["internal", "internet-facing"] = "internal"
    health_check_path: Annotated[str, Field(pattern=r"^/[!-~]*$", max_length=1024)] = "/health"
    certificate_arn: (
        Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/.+$")]
        | None
    ) = None
    # CIDRs allowed to reach the listener (besides the clients security group).
    # Default: anywhere when internet-facing; when internal, the stack's own
    # VPC range, or none in a user's VPC, whose range synth does not look up.
    ingress_cidrs: Annotated[list[str], Field(min_length=1)] | None = None
    # Optional third scaling signal: ALBRequestCountPerTarget target value.
    # Bounded by Application Auto Scaling's TargetValue (TARGET_VALUE_MAX).
    request_count_target: Annotated[int, Field(ge=1)] | None = None

    @field_validator("request_count_target")
    @classmethod
    def _target_value(cls, v: int | None) -> int | None:
        if v is not None and v > TARGET_VALUE_MAX:
            raise RuleError(
                "is above 2^360, the largest TargetValue Application Auto Scaling takes",
                "write the requests per minute one task should serve, e.g. 100",
            )
        return v

    @field_validator("ingress_cidrs")
    @classmethod
    def _cidrs(cls, v: list[str] | None) -> list[str] | None:
        # IPv4 only: the load balancer is created with the default ipv4
        # address type, so an IPv6 rule would never match a client.
        for c in v or []:
            try:
                net = ipaddress.IPv4Network(c, strict=False)
            except ValueError:
                raise RuleError(
                    f"{c!r} is not an IPv4 CIDR", 'write it as address/prefix, e.g. "10.0.0.0/16"'
                ) from None
            if str(net) != c:
                raise RuleError(
                    f"{c!r} is not a network address (host bits set or prefix missing)",
                    f"write {str(net)!r}",
                )
        return v


# An SNS topic ARN: partition, Region, 12-digit account, topic name (1-256
# letters, digits, hyphens, underscores; ".fifo" for FIFO topics, which
# CloudWatch alarms cannot publish to, so a FIFO name is refused).
SNS_TOPIC_ARN_RE = r"^arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}$"
# Deliberately loose: SNS itself sends the confirmation mail, which is the real check.
EMAIL_RE = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


class AlertsSpec(_Section):
    """Who is told when the GPU metric stops arriving (and when it is back)."""

    # An existing topic; the stack only publishes to it.
    sns_topic_arn: Annotated[str, Field(pattern=SNS_TOPIC_ARN_RE)] | None = None
    # Without a topic ARN: the stack creates an encrypted topic with these
    # email subscriptions (each must confirm SNS's mail).
    email: Annotated[list[Annotated[str, Field(pattern=EMAIL_RE)]], Field(min_length=1)] | None = (
        None
    )

    @field_validator("email")
    @classmethod
    def _unique(cls, v: list[str] | None) -> list[str] | None:
        lowered = [e.lower() for e in v or []]
        twice = sorted({e for e in lowered if lowered.count(e) > 1})
        if twice:
            raise RuleError(f"lists {', '.join(twice)} more than once", "list each address once")
        return v


# One day: the longest duration a [simulation] key may give.
MAX_SIM_SECONDS = 86400.0


class SimulationSpec(_Section):
    """Inputs of the simulator that AWS cannot know: the workload's own speeds."""

    # Requests per second one task serves with its GPUs 100 % busy. The
    # simulator divides load by it: 0.001 (one request in 17 min) to 1e6.
    task_capacity_rps: Annotated[float, Field(ge=0.001, le=1e6)] = 2.0
    # Launch to ECS registration on the GPU AMI; AWS publishes no figure,
    # 60-240 s is consistent with the sources in aws-semantics.md §4.
    # Every *_s key of this section: at most a day (MAX_SIM_SECONDS), so that
    # step counts and timestamps built from them stay small.
    instance_boot_s: Annotated[float, Field(ge=0, le=MAX_SIM_SECONDS)] = 150.0
    # 15-20 GB deep-learning image: 4-6 min per instance (aws-semantics.md §4).
    image_pull_s: Annotated[float, Field(ge=0, le=MAX_SIM_SECONDS)] = 240.0
    # Weights from disk or S3 into GPU memory: application-specific.
    model_load_s: Annotated[float, Field(ge=0, le=MAX_SIM_SECONDS)] = 60.0
    # Task CPU (percent of its cpu_units) when idle and when its GPUs are 100 %
    # busy; the simulator interpolates between them. Tokenization and HTTP
    # handling make this workload-specific (docs/simulator.md "CPU model").
    cpu_idle_percent: Annotated[float, Field(ge=0, le=100)] = 5.0
    cpu_percent_at_full_load: Annotated[float, Field(ge=0, le=100)] = 40.0
    # Longest a request waits in a task's queue before the client gives up:
    # load above ready capacity queues up to this many seconds of capacity,
    # the rest counts as unserved.
    max_queue_s: Annotated[float, Field(ge=0, le=MAX_SIM_SECONDS)] = 30.0
    # Seconds one request holds a serving slot: by Little's law a task at full
    # load holds task_capacity_rps x mean_request_s requests (concurrency).
    # At least 10 ms: rates are concurrency / mean_request_s.
    mean_request_s: Annotated[float, Field(ge=0.01, le=MAX_SIM_SECONDS)] = 8.0
    # A Stopped warm-pool instance: start to ECS registration. AWS publishes
    # no figure; a guess, named so it can be changed.
    warm_start_s: Annotated[float, Field(ge=0, le=MAX_SIM_SECONDS)] = 60.0
    # The anti-pattern the field report removed: an ASGAverageCPUUtilization
    # target-tracking policy on the GPU ASG. Unset (the default) means none.
    # At least 1 %, as the service's targets.
    host_cpu_policy_target_percent: Annotated[float, Field(ge=1, le=100)] | None = None


class Spec(_Section):
    service: ServiceSpec
    capacity: CapacitySpec
    scaling: ScalingSpec
    network: NetworkSpec | None = None
    load_balancer: LoadBalancerSpec | None = None
    alerts: AlertsSpec | None = None
    simulation: SimulationSpec = Field(default_factory=SimulationSpec)

    @model_validator(mode="before")
    @classmethod
    def _defaults_from_other_sections(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        svc, cap, sc = data.get("service"), data.get("capacity"), data.get("scaling")
        if isinstance(svc, dict) and isinstance(cap, dict):
            data["service"] = _default_task_size(svc, cap)
        if isinstance(sc, dict) and "signal" not in sc and "gpu_metric" not in sc:
            has_metrics = isinstance(svc, dict) and svc.get("metrics") is not None
            data["scaling"] = {**sc, "signal": "concurrency" if has_metrics else "task-gpus"}
        return data

    @property
    def instance(self) -> catalog.InstanceType:
        return self.capacity.instance

    @property
    def tasks_per_instance(self) -> int:
        s = self.service
        return self.instance.tasks_per_instance(s.gpus_per_task, s.cpu_units, s.memory_mib)

    def warnings(self, path: str = "spec") -> list[str]:
        """Non-fatal notes on this spec, one line each (see :func:`spec_warnings`)."""
        return spec_warnings(self, path)


def _default_task_size(svc: dict[str, Any], cap: dict[str, Any]) -> dict[str, Any]:
    """Fill cpu_units/memory_mib with the task's share of the instance (its GPUs' share).

    Left unset when the instance type or GPU count is itself wrong: those keys
    get their own errors, and a "missing cpu_units" beside them would mislead.
    """
    if "cpu_units" in svc and "memory_mib" in svc:
        return svc
    gpus = svc.get("gpus_per_task", 1)
    itype = cap.get("instance_type")
    if not isinstance(itype, str) or type(gpus) is not int or gpus < 1:
        return svc
    try:
        it = catalog.lookup(itype)
    except catalog.UnknownInstanceType:
        return svc
    share = min(gpus, it.gpus)
    out = dict(svc)
    out.setdefault("cpu_units", it.cpu_units * share // it.gpus)
    out.setdefault("memory_mib", it.schedulable_memory_mib * share // it.gpus)
    return out


# --- loading and errors -----------------------------------------------------------

_FIX_BY_TYPE = {
    "missing": "add it",
    "extra_forbidden": "remove it, or check its spelling",
    "int_type": "write a whole number without quotes, e.g. 4",
    "float_type": "write a number without quotes, e.g. 70",
    "string_type": "write a quoted string",
    "bool_type": "write true or false",
    "list_type": 'write a list, e.g. ["a", "b"]',
    "dict_type": 'write a table, e.g. { KEY = "value" }',
    "model_type": "write it as a [section] table",
    "greater_than": "raise it",
    "greater_than_equal": "raise it",
    "less_than": "lower it",
    "less_than_equal": "lower it",
    "string_pattern_mismatch": "correct its format",
    "too_short": "add at least one entry",
    "literal_error": "use one of the allowed values",
    "string_too_short": "give a non-empty value",
    "string_too_long": "shorten it",
    "finite_number": "write a finite number (nan and inf are not allowed)",
    # TOML integers are unbounded; pydantic stops reading past 4300 digits.
    "int_parsing_size": "write a much smaller whole number",
}

# Fixes for format errors, by key (list indices dropped): an example beats a regex.
_FIX_BY_KEY = {
    "capacity.capacity_reservation_id": "use the id EC2 shows for the On-Demand Capacity "
    'Reservation: "cr-" and 17 hex digits, e.g. "cr-0123456789abcdef0"',
    "capacity.ami_id": 'use an EC2 image id, "ami-" and 8 or 17 hex digits, e.g. the '
    f"recommended ECS GPU AMI that `{RECOMMENDED_COMMAND}` prints",
    "network.vpc_id": 'use the VPC id, e.g. "vpc-0123456789abcdef0"',
    "network.subnet_ids": 'use subnet ids, e.g. "subnet-0123456789abcdef0"',
    "network.public_subnet_ids": 'use subnet ids, e.g. "subnet-0123456789abcdef0"',
    "load_balancer.certificate_arn": "use the full ACM certificate ARN in the stack's "
    'Region, e.g. "arn:aws:acm:us-east-1:123456789012:certificate/<id>"',
    "load_balancer.health_check_path": 'start it with "/" and use no spaces, e.g. "/health"',
    "alerts.sns_topic_arn": "use the ARN of an existing standard (not FIFO) SNS topic, e.g. "
    '"arn:aws:sns:us-east-1:123456789012:gpu-alerts" (`aws sns list-topics` shows them)',
    "alerts.email": 'write each as a full address, e.g. "oncall@example.com"',
    "service.secrets": "use the full ARN of a Secrets Manager secret, e.g. "
    '"arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbCdEf" (optionally with '
    '":json-key::" after it), or of an SSM parameter, e.g. '
    '"arn:aws:ssm:us-east-1:123456789012:parameter/hf-token"',
    "service.health_check_path": 'start it with "/" and use no spaces, e.g. "/health"',
    "service.metrics.path": 'start it with "/" and use no spaces, e.g. "/metrics"',
    "service.metrics.running_metric": "use a Prometheus metric name as the server's /metrics "
    'page shows it, e.g. "vllm:num_requests_running"',
    "service.metrics.waiting_metric": "use a Prometheus metric name as the server's /metrics "
    'page shows it, e.g. "vllm:num_requests_waiting"',
}

# Fixes that say why a bound exists, by (key, error type).
_FIX_BY_KEY_AND_TYPE = {
    ("scaling.min_tasks", "greater_than_equal"): "raise it to at least 1: with no task "
    "running no scaling datapoint exists, target tracking sits in INSUFFICIENT_DATA and "
    "never scales out again (ecs-gpu does not scale to zero)",
}

# Longest value echoed back in a message; a whole mistyped section is noise.
_MAX_SHOWN = 80


def _section_model(annotation: Any) -> type[BaseModel]:
    """The model of a [section] field, unwrapping ``X | None``."""
    for t in (annotation, *get_args(annotation)):
        if isinstance(t, type) and issubclass(t, BaseModel):
            return t
    raise TypeError(f"{annotation!r} is not a spec section")


# Derived from Spec, so a new section is known to the "did you mean" hints at once.
_SECTION_MODELS: dict[str, type[BaseModel]] = {
    name: _section_model(field.annotation) for name, field in Spec.model_fields.items()
}


def _key(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def _lookup(data: Any, loc: tuple[int | str, ...]) -> tuple[bool, Any]:
    cur = data
    for part in loc:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return False, None
    return True, cur


def _suggest(loc: tuple[int | str, ...]) -> str:
    """For an unknown key, the nearest known one."""
    if len(loc) == 1:
        known = list(_SECTION_MODELS)
    elif len(loc) == 2 and isinstance(loc[0], str) and loc[0] in _SECTION_MODELS:
        known = list(_SECTION_MODELS[loc[0]].model_fields)
    else:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{hint}; known keys here: {', '.join(known)}"


# Keys Spec fills in from the instance (_default_task_size). They are missing
# only when the instance type or gpus_per_task is itself wrong, which has its
# own error: "Field required" beside it would send the user the wrong way.
_DERIVED_KEYS = {("service", "cpu_units"), ("service", "memory_mib")}


def _format_pydantic(path: str, data: dict[str, Any], err: ValidationError) -> list[str]:
    problems = []
    errors = err.errors(include_url=False)
    other = any(tuple(e["loc"]) not in _DERIVED_KEYS for e in errors)
    for e in errors:
        loc = tuple(e["loc"])
        if e["type"] == "missing" and loc in _DERIVED_KEYS and other:
            continue
        key = _key(loc)
        found, value = _lookup(data, loc)
        shown = ""
        if found and not isinstance(value, dict):
            text = repr(value)
            shown = f" = {text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + '...'}"
        msg = e["msg"].removeprefix("Value error, ")
        fix = _FIX_BY_TYPE.get(e["type"], "correct the value")
        cause = e.get("ctx", {}).get("error")
        if isinstance(cause, RuleError):
            fix = cause.fix
        fix = _FIX_BY_KEY_AND_TYPE.get((key, e["type"]), fix)
        if e["type"] == "string_pattern_mismatch":
            # Longest known prefix: a table's own keys (secrets.HF_TOKEN) share its fix.
            names = tuple(x for x in loc if isinstance(x, str))
            for n in range(len(names), 0, -1):
                if _key(names[:n]) in _FIX_BY_KEY:
                    fix = _FIX_BY_KEY[_key(names[:n])]
                    break
        if e["type"] == "int_type" and type(e.get("input")) is float:
            # 3e9 or 1.0 is a TOML float: quotes are not the problem.
            fix = "write a whole number without a decimal point or exponent, e.g. 4"
        if e["type"] == "float_type" and type(e.get("input")) is int:
            # A whole number past float range (TOML ints are unbounded): not a quoting problem.
            msg = "is too large to be read as a number"
            fix = "write a much smaller number"
        if e["type"] == "extra_forbidden":
            fix += _suggest(loc)
        if e["type"] == "missing" and len(loc) >= 2:
            fix = f"add `{loc[-1]} = ...` under [{_key(loc[:-1])}]"
        elif e["type"] == "missing":
            fix = f"add a [{loc[-1]}] section"
        problems.append(f"{path}: {key}{shown}: {msg}. Fix: {fix}.")
    return problems


# --- cross-field rules ---------------------------------------------------------------
#
# Each rule is a small function of a validated Spec that yields Problems; RULES
# lists them in the order their lines are reported. A rule names the key the
# user has to change, shows its value, and says what to write instead.


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule: the key to change, its value, what is wrong, and the fix."""

    key: str
    value: object
    what: str
    fix: str

    def format(self, path: str) -> str:
        """The one-line form every spec message has: FILE: KEY = VALUE: what. Fix: fix."""
        return f"{path}: {self.key} = {self.value!r}: {self.what}. Fix: {self.fix}."


Rule = Callable[["Spec"], Iterator[Problem]]

# Errors: a spec that breaks one is refused (exit 2).
RULES: list[Rule] = []
# Notes: the spec is valid and deploys, but does something the user should know
# about (an endpoint open to the internet). validate/synth/plan print them.
NOTES: list[Rule] = []


def _rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def _note(fn: Rule) -> Rule:
    NOTES.append(fn)
    return fn


def _task_fits(spec: Spec) -> bool:
    """GPUs, CPU and memory of one task fit one instance (the placement rules below hold)."""
    svc, it = spec.service, spec.instance
    return (
        svc.gpus_per_task <= it.gpus
        and svc.cpu_units <= it.cpu_units
        and svc.memory_mib <= it.schedulable_memory_mib
    )


def _fit_reason(spec: Spec, binding: list[str]) -> str:
    """Which resources hold one instance to tasks_per_instance copies, with the numbers."""
    svc, it = spec.service, spec.instance
    why = {
        catalog.GPU: f"GPUs: {it.gpus} on the instance, {svc.gpus_per_task} per task",
        catalog.CPU: f"CPU: {it.cpu_units} units on the instance, {svc.cpu_units} per task",
        catalog.MEMORY: f"memory: about {it.schedulable_memory_mib} MiB left for tasks, "
        f"{svc.memory_mib} per task",
        # The ENI limit is the one users do not expect: say where it comes from.
        catalog.ENI: f"network interfaces: every task (awsvpc network mode) needs its own ENI "
        f"and {it.name} takes {it.default_card_network_interfaces} on its default network "
        "card, one of them the instance's own; ecs-gpu does not count ENI trunking "
        "(awsvpcTrunking), which it cannot see",
    }
    return "limited by " + " and by ".join(why[name] for name in binding)


@_rule
def _task_gpus(spec: Spec) -> Iterator[Problem]:
    svc, it = spec.service, spec.instance
    if svc.gpus_per_task > it.gpus:
        yield Problem(
            "service.gpus_per_task",
            svc.gpus_per_task,
            f"{it.name} has only {it.gpus} GPU(s), so the task can never be placed",
            f"request at most {it.gpus}, or pick an instance type with more GPUs",
        )


@_rule
def _task_cpu(spec: Spec) -> Iterator[Problem]:
    # cpu_units may be the filled-in default; an explicit value above the
    # instance gets this line too.
    svc, it = spec.service, spec.instance
    if svc.cpu_units > it.cpu_units:
        yield Problem(
            "service.cpu_units",
            svc.cpu_units,
            f"{it.name} registers {it.cpu_units} CPU units ({it.vcpus} vCPUs x 1024)",
            f"request at most {it.cpu_units}, or pick a larger instance type",
        )


@_rule
def _task_memory(spec: Spec) -> Iterator[Problem]:
    svc, it = spec.service, spec.instance
    if svc.memory_mib > it.schedulable_memory_mib:
        yield Problem(
            "service.memory_mib",
            svc.memory_mib,
            f"{it.name} has {it.memory_gib:g} GiB but about {it.schedulable_memory_mib} MiB "
            f"is left for tasks after the OS and the ECS agent reserve "
            f"({catalog.ECS_RESERVED_MEMORY_MIB} MiB)",
            f"request at most {it.schedulable_memory_mib}, or pick a larger instance type",
        )


@_rule
def _instance_bounds(spec: Spec) -> Iterator[Problem]:
    cap = spec.capacity
    if cap.min_instances > cap.max_instances:
        yield Problem(
            "capacity.min_instances",
            cap.min_instances,
            f"greater than capacity.max_instances ({cap.max_instances})",
            "make min_instances <= max_instances",
        )


@_rule
def _task_bounds(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.min_tasks > sc.max_tasks:
        yield Problem(
            "scaling.min_tasks",
            sc.min_tasks,
            f"greater than scaling.max_tasks ({sc.max_tasks})",
            "make min_tasks <= max_tasks",
        )


@_rule
def _reservation_pair(spec: Spec) -> Iterator[Problem]:
    cap = spec.capacity
    if cap.capacity_reservation_id is not None and cap.reserved_instances is None:
        yield Problem(
            "capacity.capacity_reservation_id",
            cap.capacity_reservation_id,
            "a reservation needs capacity.reserved_instances, the number of instances "
            "it holds, so the fleet never drops below what you pay for",
            "add `reserved_instances = N` under [capacity]",
        )
    if cap.reserved_instances is not None and cap.capacity_reservation_id is None:
        yield Problem(
            "capacity.reserved_instances",
            cap.reserved_instances,
            "set without capacity.capacity_reservation_id",
            "add the reservation id (cr-...) or remove reserved_instances",
        )


@_rule
def _reservation_floor(spec: Spec) -> Iterator[Problem]:
    cap = spec.capacity
    if cap.reserved_instances is None:
        return
    if cap.reserved_instances > cap.min_instances:
        yield Problem(
            "capacity.reserved_instances",
            cap.reserved_instances,
            f"greater than capacity.min_instances ({cap.min_instances}): the fleet would scale "
            "below the reservation you already pay for",
            f"set min_instances to at least {cap.reserved_instances}",
        )
    if cap.reserved_instances > cap.max_instances:
        yield Problem(
            "capacity.reserved_instances",
            cap.reserved_instances,
            f"greater than capacity.max_instances ({cap.max_instances})",
            f"set max_instances to at least {cap.reserved_instances}",
        )


@_rule
def _max_tasks_reachable(spec: Spec) -> Iterator[Problem]:
    if not _task_fits(spec):
        return  # the task-size rules above already say why nothing fits
    svc, cap, sc, it = spec.service, spec.capacity, spec.scaling, spec.instance
    per = spec.tasks_per_instance
    if per < 1 or sc.max_tasks <= per * cap.max_instances:
        return
    need = -(-sc.max_tasks // per)  # integer ceil: TOML ints are unbounded
    binding = it.binding_limits(svc.gpus_per_task, svc.cpu_units, svc.memory_mib)
    fix = f"raise capacity.max_instances to {need}, or lower max_tasks to "
    fix += f"{per * cap.max_instances}"
    if catalog.ENI in binding:
        fix += (
            ", or pick an instance type with more network interfaces (`ecs-gpu catalog`, "
            "column ENIs: the number in brackets is awsvpc tasks per instance)"
        )
    yield Problem(
        "scaling.max_tasks",
        sc.max_tasks,
        f"{cap.max_instances} x {it.name} fit only {per * cap.max_instances} tasks "
        f"({per} per instance); {_fit_reason(spec, binding)}",
        fix,
    )


@_rule
def _min_tasks_reachable(spec: Spec) -> Iterator[Problem]:
    if not _task_fits(spec):
        return
    cap, sc = spec.capacity, spec.scaling
    per = spec.tasks_per_instance
    if per >= 1 and sc.min_tasks > per * cap.max_instances:
        yield Problem(
            "scaling.min_tasks",
            sc.min_tasks,
            f"more than {cap.max_instances} instances can hold",
            "lower min_tasks or raise capacity.max_instances",
        )


@_rule
def _signal_needs_metrics(spec: Spec) -> Iterator[Problem]:
    # Without [service.metrics] the default signal is a GPU one, so this is
    # only reached by writing signal = "concurrency".
    if spec.scaling.signal == "concurrency" and spec.service.metrics is None:
        yield Problem(
            "scaling.signal",
            "concurrency",
            "scaling on concurrency reads the requests running and waiting from the "
            "server's Prometheus metrics, and [service.metrics] (where to scrape them) "
            "is missing",
            'add a [service.metrics] table, e.g. `preset = "vllm"` (or "tgi", "sglang", '
            '"triton"), or scale on GPU utilization with signal = "task-gpus"',
        )


@_rule
def _signal_needs_target(spec: Spec) -> Iterator[Problem]:
    sc, sim = spec.scaling, spec.simulation
    if sc.signal == "concurrency" and sc.target_concurrency_per_task is None:
        # Little's law: a task at full load holds rps x seconds per request.
        full = sim.task_capacity_rps * sim.mean_request_s
        yield Problem(
            "scaling.signal",
            "concurrency",
            "needs scaling.target_concurrency_per_task, the requests running plus "
            "waiting per task that target tracking holds (signal is 'concurrency' by "
            "default when [service.metrics] is present)",
            "add `target_concurrency_per_task = N` under [scaling]: the batch size at "
            f"which latency is still acceptable (at [simulation]'s speeds a task at full "
            f"load holds {full:g}, so about {max(0.7 * full, 0.1):.3g} keeps 30 % headroom), "
            'or scale on GPU utilization with signal = "task-gpus"',
        )


@_rule
def _fast_path_needs_concurrency(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.fast_scale_out is True and sc.signal != "concurrency":
        yield Problem(
            "scaling.fast_scale_out",
            True,
            f"the fast path reads a 10-second concurrency series, and signal = {sc.signal!r} "
            "has none (GPU metrics arrive once a minute)",
            'remove fast_scale_out, or set signal = "concurrency" with a [service.metrics] table',
        )


@_rule
def _guard_needs_concurrency(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.gpu_guard and sc.signal != "concurrency":
        yield Problem(
            "scaling.gpu_guard",
            True,
            f"the GPU guard adds a GPU policy beside the concurrency one, and with "
            f"signal = {sc.signal!r} the GPU policy is already the signal",
            'remove gpu_guard, or set signal = "concurrency" with a [service.metrics] table',
        )


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


@_rule
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


@_rule
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


# The root volume holds, besides the weights (downloaded into the container),
# the OS with the NVIDIA driver and the ECS and CloudWatch agents, and the
# serving image, extracted. Both are named guesses: the ECS GPU AMI's root
# snapshot is 30 GiB (aws/amazon-ecs-ami block_device_size_gb) and holds the
# OS; deep-learning serving images are 15-20 GB (aws-semantics.md §4).
ROOT_OS_GIB = 30
ROOT_IMAGE_GIB = 20


def root_volume_needed_gib(spec: Spec) -> int:
    """Root volume an instance needs at least: OS + image + every placed task's model."""
    size = spec.service.model_size_gib or 0.0
    return ROOT_OS_GIB + ROOT_IMAGE_GIB + math.ceil(size * max(1, spec.tasks_per_instance))


@_rule
def _root_volume_holds_the_model(spec: Spec) -> Iterator[Problem]:
    cap, svc = spec.capacity, spec.service
    if svc.model_size_gib is None or not _task_fits(spec):
        return
    if svc.model_size_gib * 1024 > _weights_room_mib(spec):
        return  # it never loads (_model_fits_gpu_memory): the disk is not the problem
    need = root_volume_needed_gib(spec)
    if cap.root_volume_gib >= need:
        return
    per = spec.tasks_per_instance
    yield Problem(
        "capacity.root_volume_gib",
        cap.root_volume_gib,
        f"each instance downloads the {svc.model_size_gib:g}-GiB model once per task "
        f"({per} per instance) beside the OS (about {ROOT_OS_GIB} GiB) and the image "
        f"(about {ROOT_IMAGE_GIB} GiB): {need} GiB at least, so the download fills the disk "
        "and the task never serves",
        f"set root_volume_gib to at least {need} (more leaves room for a redeploy: ECS keeps "
        "a stopped container's files for 3 hours)",
    )


# "Inbound or outbound rules per security group: 60" (Amazon VPC quotas,
# https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html,
# "Security groups"); the load balancer's group has one more rule for the
# clients security group (infra/loadbalancer.py).
SG_INBOUND_RULES_QUOTA = 60
LB_OTHER_INBOUND_RULES = 1


@_rule
def _ingress_rules_quota(spec: Spec) -> Iterator[Problem]:
    lb = spec.load_balancer
    cidrs = (lb.ingress_cidrs or []) if lb is not None else []
    most = SG_INBOUND_RULES_QUOTA - LB_OTHER_INBOUND_RULES
    if len(cidrs) > most:
        yield Problem(
            "load_balancer.ingress_cidrs",
            f"{len(cidrs)} CIDRs",
            f"the load balancer's security group takes one inbound rule per CIDR and one "
            f"for the clients security group, and a security group holds at most "
            f"{SG_INBOUND_RULES_QUOTA} inbound rules by default (Amazon VPC quotas), so "
            "CloudFormation fails to create it",
            f"list at most {most}: merge neighbouring ranges into wider prefixes, or let "
            "clients in through the clients security group (stack output) instead",
        )


def _control_character(text: str) -> int | None:
    """Index of the first control character other than tab and newline, or None."""
    for i, c in enumerate(text):
        if unicodedata.category(c) == "Cc" and c not in "\t\n":
            return i
    return None


@_rule
def _control_characters(spec: Spec) -> Iterator[Problem]:
    # A NUL ends the string in the container's C runtime (execve, getenv), and
    # the other control characters are a mistake (a pasted escape, \r from a
    # Windows file): refuse them here rather than hand ECS a value it mangles.
    # Every string is checked; most keys' patterns refuse them already.
    for key, value in _strings(spec, ""):
        at = _control_character(value)
        if at is not None:
            yield Problem(
                key,
                _short(value),
                f"holds the control character U+{ord(value[at]):04X} at character {at}; "
                "containers take no NUL in a variable or argument, and other control "
                "characters are almost always a paste mistake",
                "remove it (tabs and newlines are allowed)",
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


@_rule
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


# CDK's token markers: "${Token[...]}" (strings), "#{Token[...]}" (lists). A user
# string holding one is read by CDK as a reference to an object it does not have
# (UnrecognizedTokenKey) or, worse, to one it has. CDK has no escape for a literal
# marker and no serving setting needs one, so they are refused, naming the key.
# CDK's number tokens are doubles near -1.9e289, below every numeric key's range.
# CloudFormation's dynamic references ("{{resolve:ssm:...}}") are resolved in
# any property at deploy time, so they are no literal text either.
CDK_TOKEN_RE = re.compile(r"[$#]\{Token\[")
CFN_DYNAMIC_REF_RE = re.compile(r"\{\{resolve:")


def _short(text: str) -> str:
    """A string as a message shows it: whole up to _MAX_SHOWN characters."""
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _strings(value: object, key: str) -> Iterator[tuple[str, str]]:
    """(dotted key, string) for every string in a spec value, table keys included."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _strings(getattr(value, name), f"{key}.{name}" if key else name)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k, f"{key} (a name)")
            yield from _strings(v, f"{key}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _strings(v, f"{key}[{i}]")


@_rule
def _cdk_tokens(spec: Spec) -> Iterator[Problem]:
    for key, text in _strings(spec, ""):
        if CFN_DYNAMIC_REF_RE.search(text):
            yield Problem(
                key,
                _short(text),
                "holds a CloudFormation dynamic reference ({{resolve:...}}), which "
                "CloudFormation replaces at deploy time, and the value lands in the task "
                "definition in plain text",
                "put the secret or parameter's ARN under [service] secrets instead",
            )
        elif CDK_TOKEN_RE.search(text):
            yield Problem(
                key,
                _short(text),
                "holds a CDK token marker (${Token[...]} or #{Token[...]}), which the "
                "template generator would read as a reference instead of your text",
                "write the value without it; a value from elsewhere belongs in [service] "
                "secrets (an ARN) rather than in the spec",
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


@_rule
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


@_rule
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


@_rule
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


@_rule
def _gp3_ratios(spec: Spec) -> Iterator[Problem]:
    # The launch template takes a broken ratio and EC2 refuses it only when
    # the group launches an instance, so the fleet never starts. CDK's synth
    # catches the throughput ratio only when root_volume_iops is set.
    cap = spec.capacity
    iops = cap.root_volume_iops or GP3_BASELINE_IOPS
    iops_from = (
        "root_volume_iops" if cap.root_volume_iops else "gp3's baseline without root_volume_iops"
    )
    thr = cap.root_volume_throughput_mibps
    if thr is not None and thr * GP3_IOPS_PER_MIBPS > iops:
        yield Problem(
            "capacity.root_volume_throughput_mibps",
            thr,
            f"gp3 allows at most 0.25 MiB/s per IOPS, so {iops} IOPS ({iops_from}) carry at "
            f"most {iops // GP3_IOPS_PER_MIBPS} MiB/s; EC2 refuses to launch the instances",
            f"set root_volume_iops to at least {thr * GP3_IOPS_PER_MIBPS} (4 x throughput), "
            f"or lower root_volume_throughput_mibps to at most {iops // GP3_IOPS_PER_MIBPS}",
        )
    most = GP3_MAX_IOPS_PER_GIB * cap.root_volume_gib
    if iops > most:
        need = -(-iops // GP3_MAX_IOPS_PER_GIB)
        yield Problem(
            "capacity.root_volume_iops",
            iops,
            f"gp3 allows at most {GP3_MAX_IOPS_PER_GIB} IOPS per GiB, so a "
            f"{cap.root_volume_gib}-GiB root volume takes at most {most}; EC2 refuses to "
            "launch the instances",
            f"raise root_volume_gib to at least {need}, or lower root_volume_iops to at most "
            f"{most}",
        )


@_rule
def _warm_pool(spec: Spec) -> Iterator[Problem]:
    cap = spec.capacity
    wp = cap.warm_pool
    if wp is None:
        return
    if wp.min_size > cap.max_instances:
        yield Problem(
            "capacity.warm_pool.min_size",
            wp.min_size,
            f"greater than capacity.max_instances ({cap.max_instances}): the group can never "
            "take in that many, and each waiting instance's volume is paid for",
            f"set min_size to at most {cap.max_instances}",
        )
    if wp.max_prepared is not None and wp.max_prepared > cap.max_instances:
        # The pool holds max_prepared - desired instances (PutWarmPool), so at
        # max_instances the ones beyond it wait for a group that never grows.
        yield Problem(
            "capacity.warm_pool.max_prepared",
            wp.max_prepared,
            f"greater than capacity.max_instances ({cap.max_instances}): the group never "
            f"holds more than {cap.max_instances}, so {wp.max_prepared - cap.max_instances} "
            "prepared instance(s) can never join it, yet each boots, pulls the image and "
            "is billed",
            f"set max_prepared to at most {cap.max_instances}, or remove it "
            "(default: min_size, at least 1)",
        )
    if wp.max_prepared is not None and wp.max_prepared < wp.min_size:
        yield Problem(
            "capacity.warm_pool.max_prepared",
            wp.max_prepared,
            f"less than warm_pool.min_size ({wp.min_size}); max_prepared counts the group's "
            "instances and the pool's together",
            f"set max_prepared to at least {wp.min_size}, or remove it (default: min_size)",
        )
    if wp.pool_state == "Hibernated":
        # EC2's hibernation prerequisites list no accelerated-computing (G, P)
        # family, and the catalog holds only those.
        yield Problem(
            "capacity.warm_pool.pool_state",
            "Hibernated",
            f"{spec.instance.name} cannot hibernate: EC2 supports hibernation on no GPU "
            "instance family",
            'use pool_state = "Stopped" (only the volume is paid for while waiting)',
        )
    if wp.reuse_on_scale_in:
        # awsdocs/amazon-ecs-developer-guide#216: with a capacity provider the
        # scale-in of reused instances breaks; ECS documents the option as unsupported.
        yield Problem(
            "capacity.warm_pool.reuse_on_scale_in",
            True,
            "Amazon ECS capacity providers do not support returning instances to the warm "
            "pool on scale-in (ECS developer guide, capacity providers with warm pools)",
            "remove reuse_on_scale_in",
        )


@_rule
def _duplicate_subnets(spec: Spec) -> Iterator[Problem]:
    net = spec.network
    if net is None:
        return
    for key, ids in (("subnet_ids", net.subnet_ids), ("public_subnet_ids", net.public_subnet_ids)):
        twice = sorted({i for i in ids or [] if (ids or []).count(i) > 1})
        if twice:
            yield Problem(
                f"network.{key}",
                ids,
                f"lists {', '.join(twice)} more than once, which counts one subnet "
                "(and one Availability Zone) twice",
                "list each subnet once",
            )


@_rule
def _load_balancer_subnets(spec: Spec) -> Iterator[Problem]:
    net, lb = spec.network, spec.load_balancer
    if lb is None or net is None:
        return
    if len(net.subnet_ids) < 2:
        yield Problem(
            "network.subnet_ids",
            net.subnet_ids,
            "a load balancer needs subnets in at least two Availability Zones",
            "list at least two subnets in different Availability Zones",
        )
    if lb.scheme == "internet-facing" and len(net.public_subnet_ids or []) < 2:
        yield Problem(
            "load_balancer.scheme",
            lb.scheme,
            "an internet-facing load balancer in your VPC needs public subnets in at "
            "least two Availability Zones",
            "add `public_subnet_ids = [...]` (two or more) under [network], or use "
            'scheme = "internal"',
        )


@_rule
def _public_listener_needs_cidrs(spec: Spec) -> Iterator[Problem]:
    # A model endpoint has no authentication of its own: who may call it is
    # decided here, so a public one is never open by default.
    lb = spec.load_balancer
    if lb is not None and lb.scheme == "internet-facing" and lb.ingress_cidrs is None:
        yield Problem(
            "load_balancer.scheme",
            lb.scheme,
            "an internet-facing load balancer needs load_balancer.ingress_cidrs: the model "
            "server checks no credentials, so whoever reaches the listener can use your GPUs",
            'add `ingress_cidrs = ["203.0.113.0/24"]` with your clients\' public ranges '
            "under [load_balancer]; to open it to everyone on purpose, write "
            'ingress_cidrs = ["0.0.0.0/0"]',
        )


@_rule
def _alerts(spec: Spec) -> Iterator[Problem]:
    al = spec.alerts
    if al is None:
        return
    if al.sns_topic_arn is not None and al.email is not None:
        yield Problem(
            "alerts.email",
            al.email,
            "set together with alerts.sns_topic_arn: the stack either publishes to your "
            "topic or creates its own for these addresses, not both",
            "subscribe the addresses to your topic yourself and remove email, or remove "
            "sns_topic_arn to have the stack create a topic",
        )
    if al.sns_topic_arn is None and al.email is None:
        yield Problem(
            "alerts",
            {},
            "is empty, so nobody would be told when the GPU metric stops",
            'add `sns_topic_arn = "arn:aws:sns:..."` or `email = ["you@example.com"]`, '
            "or remove the [alerts] section",
        )


# --- notes: valid, but worth saying -----------------------------------------------------


@_note
def _open_to_the_internet(spec: Spec) -> Iterator[Problem]:
    lb = spec.load_balancer
    if lb is None or lb.scheme != "internet-facing":
        return
    if any(ipaddress.IPv4Network(c).prefixlen == 0 for c in lb.ingress_cidrs or []):
        yield Problem(
            "load_balancer.ingress_cidrs",
            lb.ingress_cidrs,
            "the endpoint is unauthenticated: anyone on the internet can call the model "
            "and keep your GPU instances scaled out",
            "list only your clients' CIDRs, or put authentication in front (an API "
            "gateway, or an ALB authenticate-oidc/cognito action)",
        )


@_note
def _plain_http_on_the_internet(spec: Spec) -> Iterator[Problem]:
    lb = spec.load_balancer
    if lb is not None and lb.scheme == "internet-facing" and lb.certificate_arn is None:
        yield Problem(
            "load_balancer.scheme",
            lb.scheme,
            "without certificate_arn the listener is plain HTTP: prompts, completions and "
            "any API key cross the internet unencrypted",
            'add `certificate_arn = "arn:aws:acm:..."` (an ACM certificate in the stack\'s '
            "Region) under [load_balancer]",
        )


@_note
def _unused_concurrency_target(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.target_concurrency_per_task is not None and sc.signal != "concurrency":
        yield Problem(
            "scaling.target_concurrency_per_task",
            sc.target_concurrency_per_task,
            f"is not used: the service scales on signal = {sc.signal!r}",
            'remove it, or set signal = "concurrency" with a [service.metrics] table',
        )


# The next two notes fire only on keys the user wrote (model_fields_set): the
# defaults are there in every spec and say nothing about intent.


@_note
def _unused_gpu_target(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if "gpu_target_percent" not in sc.model_fields_set:
        return
    if sc.signal == "concurrency" and not sc.gpu_guard:
        yield Problem(
            "scaling.gpu_target_percent",
            sc.gpu_target_percent,
            "is not used: the service scales on signal = 'concurrency' and, without "
            "gpu_guard, no policy tracks GPU utilization",
            "remove it, or add `gpu_guard = true` under [scaling] for a GPU policy beside "
            "the concurrency one",
        )


@_note
def _unused_panic_threshold(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if "panic_threshold_percent" not in sc.model_fields_set or sc.fast_scale_out_enabled:
        return
    why = (
        "fast_scale_out = false"
        if sc.signal == "concurrency"
        else f"signal = {sc.signal!r} has no 10-second series"
    )
    yield Problem(
        "scaling.panic_threshold_percent",
        sc.panic_threshold_percent,
        f"is not used: it sets when the fast path fires, and the fast path is off ({why})",
        'remove it, or turn the fast path on: signal = "concurrency" with fast_scale_out '
        "unset or true",
    )


@_note
def _target_above_simulated_capacity(spec: Spec) -> Iterator[Problem]:
    # The simulator's task holds task_capacity_rps x mean_request_s requests at
    # full load (Little's law); a target above that can never be reached there,
    # so `plan` would show a fleet that runs overloaded for a reason of its own.
    sc, sim = spec.scaling, spec.simulation
    if sc.signal != "concurrency" or sc.target_concurrency_per_task is None:
        return
    full = sim.task_capacity_rps * sim.mean_request_s
    if sc.target_concurrency_per_task > full:
        yield Problem(
            "scaling.target_concurrency_per_task",
            sc.target_concurrency_per_task,
            f"is above the {full:g} requests a task holds at full load in the simulation "
            f"(task_capacity_rps {sim.task_capacity_rps:g} x mean_request_s "
            f"{sim.mean_request_s:g}), so plan/simulate show a fleet that never catches up",
            "set [simulation] task_capacity_rps and mean_request_s to what you measured for "
            f"one task, or lower the target (70 % of full load here: {0.7 * full:g})",
        )


@_note
def _running_warm_pool(spec: Spec) -> Iterator[Problem]:
    wp = spec.capacity.warm_pool
    if wp is not None and wp.pool_state == "Running":
        yield Problem(
            "capacity.warm_pool.pool_state",
            "Running",
            "a running pool instance costs as much as a serving one, for a start about a "
            "minute faster than a stopped one",
            'use pool_state = "Stopped" unless that minute matters more than the price',
        )


def cross_field_problems(spec: Spec, path: str = "spec") -> list[str]:
    """Rules that span keys. Each returned line names file, key, value and the fix."""
    return [p.format(path) for rule in RULES for p in rule(spec)]


def spec_warnings(spec: Spec, path: str = "spec") -> list[str]:
    """Notes on a valid spec (same one-line form as problems); they never refuse it."""
    return [p.format(path) for note in NOTES for p in note(spec)]


# A spec is a few kilobytes; ECS takes at most 64 KiB of container definitions.
MAX_SPEC_BYTES = 1024 * 1024


def parse_spec(text: str, path: str = "spec") -> Spec:
    """Parse and validate spec text; ``path`` names the source in errors."""
    try:
        return _parse_spec(text, path)
    except RecursionError:
        # tomllib (and reporting on the value) recurse once per nesting level.
        raise SpecError(
            path,
            [
                f"{path}: arrays or inline tables nested too deeply to read (a spec nests "
                "a few levels). Fix: write the values flat, as docs/spec.md shows."
            ],
        ) from None


def _parse_spec(text: str, path: str) -> Spec:
    # A byte-order mark is no part of the text (editors on Windows write one).
    text = text.removeprefix("\ufeff")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(
            path, [f"{path}: not valid TOML: {e}. Fix: correct the syntax there."]
        ) from None
    except ValueError:
        # tomllib lets Python's int() limit escape: an integer over 4300 digits.
        raise SpecError(
            path,
            [f"{path}: has an integer too long to read. Fix: write numbers with fewer digits."],
        ) from None
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        raise SpecError(path, _format_pydantic(path, data, e)) from None
    problems = cross_field_problems(spec, path)
    if problems:
        raise SpecError(path, problems)
    return spec


def load_spec(path: str | Path) -> Spec:
    """Read and validate the spec file at ``path`` (SPEC on the command line)."""
    text = read_text(
        path,
        option="SPEC",
        kind="spec",
        limit=MAX_SPEC_BYTES,
        fix="pass the TOML spec (docs/spec.md): a spec is a few kilobytes",
    )
    return parse_spec(text, str(path))
