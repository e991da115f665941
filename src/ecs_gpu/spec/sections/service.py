"""[service] and [service.metrics]: the container, its image, environment, secrets and metrics."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from ecs_gpu.spec.messages import RuleError
from ecs_gpu.spec.sections.base import _Section

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DRIVER_CAPABILITIES = {"all", "compute", "compat32", "graphics", "utility", "video", "display"}
# ECS sets NVIDIA_VISIBLE_DEVICES to the UUIDs of the GPUs it pinned to the
# container (aws-semantics.md §3); a user value would break that pinning.
RESERVED_ENV = {"NVIDIA_VISIBLE_DEVICES": "ECS sets it to the GPUs it assigned to the task"}


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
# Each server's counter of finished requests, which the arrival-rate estimate
# reads (demand_metric.py "The estimate"): vLLM's request_success_total (one
# series per finish reason, abort included), TGI's request_success, SGLang's
# num_requests_total ("Number of requests processed", metrics/collector.py),
# Triton's nv_inference_request_success.
COMPLETED_PRESETS: dict[str, str] = {
    "vllm": "vllm:request_success_total",
    "tgi": "tgi_request_success",
    "sglang": "sglang:num_requests_total",
    "triton": "nv_inference_request_success",
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
# What a runtime pulls by: the OCI image spec's sha256 digest is lowercase hex
# ("[A-F] MUST NOT be used", descriptor.md), and distribution/reference parses
# the digest with go-digest, whose sha256 pattern is ^[a-f0-9]{64}$; ECS takes
# uppercase, and every task would stop with CannotPullContainerError.
_PULLABLE_DIGEST = re.compile(r"sha256:[a-f0-9]{64}")
# What a container runtime can pull: the image-reference grammar of the
# distribution/reference library Docker and containerd parse with (regexp.go):
# an optional registry host[:port]/, then path components of lowercase letters
# and digits joined by one '.', one or two '_' or any run of '-', separated by
# '/', then an optional :tag of 1-128 word characters, '.' and '-' (not first).
# ECS takes more ("Vllm/x:", "a//b", "x:1:2"); every task would then stop with
# CannotPullContainerError, after the GPU instances started.
_REF_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REF_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_REF_HOST = re.compile(
    rf"(?:{_REF_HOST_PART}(?:\.{_REF_HOST_PART})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?", re.ASCII
)
_REF_REPOSITORY = re.compile(rf"{_REF_PATH}(?:/{_REF_PATH})*", re.ASCII)
_REF_TAG = re.compile(r"\w[\w.-]{0,127}", re.ASCII)


def _reference_problem(name: str, tag: str | None) -> tuple[str, str] | None:
    """(what is wrong, the fix) when ``name[:tag]`` is no pullable image reference."""
    # The first part is a registry only with a '.' or ':' in it, or as localhost
    # (normalize.go splitDockerDomain); "Vllm/x" is a repository path, not a host.
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        host, repository = first, rest
    else:
        host, repository = "", name
    if host and not _REF_HOST.fullmatch(host):
        return (
            f"the registry {host!r} is no host name, IP address or host:port",
            "write the registry as host[:port], e.g. 123456789012.dkr.ecr.us-east-1.amazonaws.com",
        )
    if not _REF_REPOSITORY.fullmatch(repository):
        if _REF_REPOSITORY.fullmatch(repository.lower()):
            lowered = f"{host}/{repository.lower()}" if host else repository.lower()
            return (
                "a repository path has lowercase letters only (a registry host may not)",
                f"write {lowered + (':' + tag if tag is not None else '')!r}",
            )
        return (
            "it is no image reference a runtime can pull: each '/'-separated part of the "
            "repository must be lowercase letters and digits joined by '.', '_', '__' or '-'",
            'write registry/repository:tag, e.g. "vllm/vllm-openai:v0.11.0"',
        )
    if tag is not None and not _REF_TAG.fullmatch(tag):
        return (
            f"the tag {tag!r} must be 1-128 letters, digits, '_', '.' or '-', not starting "
            "with '.' or '-' (one tag only, after the last '/')",
            'write repository:tag, e.g. "vllm/vllm-openai:v0.11.0"',
        )
    return None


def _split_reference(image: str) -> tuple[str, str | None]:
    """(name, tag): the tag is what follows the last ':' after the last '/'."""
    last = image.rsplit("/", 1)
    if ":" in last[-1]:
        name_end, _, tag = image.rpartition(":")
        return name_end, tag
    return image, None


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
        if not _PULLABLE_DIGEST.fullmatch(digest):
            return (
                "the digest has uppercase hex digits: ECS takes them, but a runtime refuses "
                "the reference (OCI digests are lowercase), so no task could pull the image",
                f"lowercase the digest: write {name + '@' + digest.lower()!r}",
            )
        return _reference_problem(*_split_reference(name))
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
    return _reference_problem(*_split_reference(image))


class ServiceMetricsSpec(_Section):
    """[service.metrics]: where the serving image publishes Prometheus metrics."""

    preset: Literal["vllm", "tgi", "sglang", "triton"] = "vllm"
    # Default: the container port (vLLM, TGI and SGLang serve /metrics there).
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    path: Annotated[str, Field(pattern=r"^/[!-~]*$", max_length=1024)] = "/metrics"
    running_metric: Annotated[str, Field(pattern=PROM_NAME_RE, max_length=200)] | None = None
    waiting_metric: Annotated[str, Field(pattern=PROM_NAME_RE, max_length=200)] | None = None
    # The counter of finished requests (the arrival-rate estimate's).
    completed_metric: Annotated[str, Field(pattern=PROM_NAME_RE, max_length=200)] | None = None

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

    @property
    def waiting_name(self) -> str:
        """The waiting series (a part of :attr:`names`; empty where the server has none)."""
        return self.waiting_metric or METRICS_PRESETS[self.preset][1]

    @property
    def completed_name(self) -> str:
        """The counter of finished requests the arrival-rate estimate reads."""
        return self.completed_metric or COMPLETED_PRESETS[self.preset]


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

    @field_validator("log_retention_days", mode="before")
    @classmethod
    def _whole_days(cls, v: object) -> object:
        # A Literal of ints also takes True (== 1) and 1.0: `true`, meant as "keep
        # the logs", would keep them one day.
        if isinstance(v, bool) or not isinstance(v, int):
            raise RuleError(
                f"must be a whole number of days, not {v!r}",
                "write one of CloudWatch Logs' retention periods, e.g. log_retention_days = 30",
            )
        return v

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
