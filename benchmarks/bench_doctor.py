"""Doctor: API calls and wall time of a full run against moto for 10, 100 and 1,000 instances.

A "full run" is what ``ecs-gpu doctor SPEC`` does without --probe-hosts:
collect every kind through the real clients (paginators, batched
Describe calls) from a moto server on 127.0.0.1, then run every check.
The deployment is built by tests/support/world.py (the same world the tests
use, with the same hooks for the GPU fields moto does not model). Tasks are
30 % of the instances (300 at 1,000).

Run:

    .venv/bin/python benchmarks/bench_doctor.py

It prints a markdown table for docs/benchmarks.md. Wall time is the median
of 3 runs on the same moto state; it measures this tool plus moto's own
request handling on loopback, not AWS latency. "--from-snapshot read" is
what doctor spends before its checks on the saved snapshot: decode the JSON
and validate every item against botocore's output shapes
(checks/snapshot.py), median of 3.
"""

from __future__ import annotations

import logging
import os
import socket
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from moto.server import ThreadedMotoServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ecs_gpu.aws import facts
from ecs_gpu.aws.clients import make_session
from ecs_gpu.checks import snapshot as snapshots
from ecs_gpu.checks.doctor import run_checks
from support import world

SIZES = (10, 100, 1000)
REPEATS = 3
PER_ITEM_CALLS = ("ecs:DescribeContainerInstances", "ecs:DescribeTasks", "ec2:DescribeInstances")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request log lines
    port = _port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    os.environ.update(
        AWS_ENDPOINT_URL=url,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    target = facts.Target.from_names(world.NAMES)
    rows = []
    try:
        for n in SIZES:
            urllib.request.urlopen(
                urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10
            ).close()
            setup = make_session(None, "us-east-1")
            world.build_world(setup, instances=n, tasks=max(1, n * 3 // 10))
            walls = []
            counter = world.CallCounter()
            for _ in range(REPEATS):
                session = make_session(None, "us-east-1")
                world.install_moto_gaps(session)
                counter = world.CallCounter()
                counter.install(session)
                t0 = time.perf_counter()
                snap = facts.collect(session, target)
                report = run_checks(snap)
                walls.append(time.perf_counter() - t0)
                assert len(snap["container_instances"]) == n, "collector missed instances"
                assert not report.has_error, [f.as_dict() for f in report.findings]
            saved = snapshots.dumps(snap).encode()
            reads = []
            for _ in range(REPEATS):
                t0 = time.perf_counter()
                assert snapshots.parse(saved, "bench") == snap, "snapshot does not round-trip"
                reads.append(time.perf_counter() - t0)
            per_item = sum(counter.calls[k] for k in PER_ITEM_CALLS)
            rows.append(
                (
                    n,
                    len(snap["tasks"]),
                    counter.total,
                    per_item,
                    counter.calls["ecs:DescribeContainerInstances"],
                    statistics.median(walls),
                    min(walls),
                    len(saved) / 2**20,
                    statistics.median(reads),
                )
            )
    finally:
        server.stop()
    print(
        "| container instances | tasks | API calls | of which batched describes "
        "(ECS instances + tasks + EC2) | DescribeContainerInstances | wall (median of 3) | "
        "wall (best) | snapshot size | --from-snapshot read (median of 3) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, tasks, total, per_item, dci, med, best, mib, read in rows:
        print(
            f"| {n:,} | {tasks} | {total} | {per_item} | {dci} | {med:.2f} s | {best:.2f} s "
            f"| {mib:.1f} MiB | {read:.2f} s |"
        )


if __name__ == "__main__":
    main()
