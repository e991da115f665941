"""Template sizes: what deploy sends (minified JSON) against CloudFormation's inline limit.

The specs are the examples, the examples with a warm pool and the GPU guard
(and one alert email), the g5 example with Spot and at scale to zero behind a
load balancer (with and without a warm pool), and the "every feature on" spec of
tests/template/test_limits.py, which asserts the limits these numbers are
measured against. Also the indented file `ecs-gpu synth` would write and what
each optional feature adds to the g5 example.

Run:

    .venv/bin/python benchmarks/template_sizes.py

It prints the Markdown tables of docs/host.md "Size".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from tests.template.test_limits import (  # noqa: E402
    EXAMPLES,
    EXAMPLES_DIR,
    WARM_POOL,
    _with_warm_pool,
    _with_warm_pool_and_guard,
    largest_spec_text,
)

from ecs_gpu.contracts import demand_metric  # noqa: E402
from ecs_gpu.spec import parse_spec  # noqa: E402
from ecs_gpu.template.limits import MAX_TEMPLATE_BODY_BYTES, minified  # noqa: E402
from ecs_gpu.template.synth import synth_template  # noqa: E402

ONE_EMAIL = '\n[alerts]\nemail = ["oncall@example.com"]\n'
# Any names: the script's size does not depend on them.
SIDECAR = {
    "metrics_port": 8000,
    "metrics_path": "/metrics",
    "series": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
    "cluster_name": "c",
    "service_name": "s",
    "starting_max_s": 600,
}


# [capacity.spot] over two interchangeable types (tests/infra/conftest.py SPOT).
SPOT = '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'


# An internal load balancer, and min_tasks = 0 behind it: the wake path (the
# requests alarm and its step policy) and the sleep path (ecs_gpu.design.paths.sleep) on top,
# and the missing-metric alarms in their scale-to-zero form.
ALB = '\n[load_balancer]\nscheme = "internal"\n'


def at_zero(text: str) -> str:
    """``text`` with no task and no instance at the floor (min_tasks = 0,
    min_instances = 0) behind an internal load balancer."""
    text = text.replace("min_instances = 1", "min_instances = 0", 1)
    return text.replace("min_tasks = 1", "min_tasks = 0", 1) + ALB


def size(text: str) -> int:
    return len(minified(synth_template(parse_spec(text, "size.toml"))).encode())


def row(what: str, n: int) -> str:
    room = MAX_TEMPLATE_BODY_BYTES - n
    fits = f"{room:,}" if room >= 0 else f"none: {-room:,} over (--template-bucket)"
    return f"| {what} | {n:,} | {fits} |"


def main() -> int:
    g5 = (EXAMPLES_DIR / "g5-vllm.toml").read_text()
    print("| Spec | Minified template | Headroom |")
    print("|---|---:|---|")
    print(row("g5-vllm example (concurrency)", size(g5)))
    print(row("g5-vllm + warm pool", size(_with_warm_pool(g5))))
    pooled = _with_warm_pool_and_guard(g5)
    print(row("g5-vllm + warm pool + GPU guard", size(pooled)))
    print(row("g5-vllm + warm pool + GPU guard + one alert email", size(pooled + ONE_EMAIL)))
    spot_at = g5.index("\n[", g5.index("[capacity]\n") + 1)
    print(row("g5-vllm + [capacity.spot], two types", size(g5[:spot_at] + SPOT + g5[spot_at:])))
    print(row("g5-vllm at zero (min_tasks = min_instances = 0) + internal ALB", size(at_zero(g5))))
    print(row("g5-vllm at zero + internal ALB + warm pool", size(at_zero(_with_warm_pool(g5)))))
    for example in EXAMPLES:
        if example != "g5-vllm.toml":
            text = _with_warm_pool_and_guard((EXAMPLES_DIR / example).read_text())
            print(row(f"{example.removesuffix('.toml')} example + warm pool", size(text)))
    for example in EXAMPLES:
        print(row(f"every feature on, {example}", size(largest_spec_text(example))))
    print()
    t = synth_template(parse_spec(g5, "g5.toml"))
    pretty = len((json.dumps(t, indent=1) + "\n").encode())
    print(f"g5-vllm example: indented file {pretty:,} bytes, minified {size(g5):,} bytes")
    base = size(g5)
    cap = g5.index("\n[", g5.index("[capacity]\n") + 1)
    features = {
        "[capacity.warm_pool]": g5[:cap] + WARM_POOL + g5[cap:],
        "fast_scale_in = true": g5.replace("[scaling]\n", "[scaling]\nfast_scale_in = true\n", 1),
        "gpu_guard": g5.replace("[scaling]\n", "[scaling]\ngpu_guard = true\n", 1),
        "one alert email": g5 + ONE_EMAIL,
        "fast_scale_out = false": g5.replace("[scaling]\n", "[scaling]\nfast_scale_out = false\n"),
        "[capacity.spot], two types": g5[:cap] + SPOT + g5[cap:],
        "internal [load_balancer]": g5 + ALB,
        "internal [load_balancer], min_tasks = min_instances = 0": at_zero(g5),
    }
    print("| g5-vllm + | bytes added |")
    print("|---|---:|")
    for what, text in features.items():
        print(f"| {what} | {size(text) - base:+,} |")
    print()
    big = synth_template(parse_spec(largest_spec_text("g5-vllm.toml"), "largest.toml"))
    print("| every feature on, g5-vllm: largest resources | type | minified bytes |")
    print("|---|---|---:|")
    sizes = {k: len(minified(r).encode()) for k, r in big["Resources"].items()}
    for key in sorted(sizes, key=sizes.__getitem__, reverse=True)[:4]:
        print(f"| {key} | {big['Resources'][key]['Type']} | {sizes[key]:,} |")
    body = demand_metric.sidecar_environment(**SIDECAR)[demand_metric.SCRIPT_ENV]
    # As the template holds it: a JSON string (quotes and newlines escaped).
    sidecar = len(json.dumps(body))
    print(f"\nthe demand sidecar's script (its Fn::Sub body, as JSON): {sidecar:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
