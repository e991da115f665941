"""The bundled g5 example as tests about the GPU signal need it.

examples/g5-vllm.toml scales on concurrency: its image serves vLLM's
Prometheus metrics, so it has ``[service.metrics]`` and a
``target_concurrency_per_task``. Tests about the GPU signal on that service
(the GPU metric chain, the GPU policy's expression, variants built on it)
take :data:`G5_GPU`: the same file without those two, i.e. the same service
on the default GPU signal ("task-gpus"). Everything else is the example's
text, so a change to the example still reaches them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ecs_gpu.spec import parse_spec

EXAMPLES_DIR: Final = Path(__file__).resolve().parents[1] / "examples"
G5_PATH: Final = EXAMPLES_DIR / "g5-vllm.toml"
G5: Final = G5_PATH.read_text(encoding="utf-8")
# The big models: g6e's 61-GiB model loads in 433 s, p5's in 2,398 s (startup.model_ready_s).
G6E: Final = (EXAMPLES_DIR / "g6e-alb-odcr.toml").read_text(encoding="utf-8")
P5: Final = (EXAMPLES_DIR / "p5-8gpu.toml").read_text(encoding="utf-8")


def without_concurrency(text: str) -> str:
    """``text`` less its ``[service.metrics]`` table and ``target_concurrency_per_task``.

    The comment lines right above what goes go with it.
    """
    out: list[str] = []
    comments: list[str] = []
    in_metrics = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("#"):
            comments.append(line)
            continue
        if stripped.startswith("["):
            in_metrics = stripped == "[service.metrics]"
        dropped = in_metrics or stripped.startswith("target_concurrency_per_task")
        if not dropped:
            out += comments
            out.append(line)
        comments = []
    return "".join(out + comments)


G5_GPU: Final = without_concurrency(G5)


def write_g5_gpu(directory: Path) -> Path:
    """G5_GPU written as a spec file (CLI tests take a path); the name keeps the service name."""
    path = directory / "g5-vllm-gpu.toml"
    path.write_text(G5_GPU, encoding="utf-8")
    return path


# What the scale-to-zero tests append: an internal load balancer (the wake path's).
INTERNAL_LB: Final = '\n[load_balancer]\nscheme = "internal"\n'


def scaled_to_zero(text: str = G5) -> str:
    """``text`` with ``min_tasks`` and ``min_instances`` 0: a service that may run no task."""
    return text.replace("min_tasks = 1", "min_tasks = 0").replace(
        "min_instances = 1", "min_instances = 0"
    )


def _check() -> None:
    # The two files differ exactly in the signal: a stale helper fails loudly here.
    conc, gpu = parse_spec(G5, "g5-vllm.toml"), parse_spec(G5_GPU, "g5-vllm-gpu.toml")
    assert conc.scaling.signal == "concurrency" and conc.service.metrics is not None
    assert gpu.scaling.signal == "task-gpus" and gpu.service.metrics is None
    assert gpu.service.name == conc.service.name
    zero = parse_spec(scaled_to_zero() + INTERNAL_LB, "g5-vllm-zero.toml")
    assert zero.scaling.min_tasks == 0 and zero.capacity.min_instances == 0


_check()
