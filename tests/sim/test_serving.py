"""The request queue: ready capacity serves, the rest waits up to max_queue_s, the rest is lost."""

from __future__ import annotations

import pytest

from ecs_gpu.sim.serving import RequestQueue


def test_capacity_serves_the_queue_first_and_the_overflow_is_unserved() -> None:
    q = RequestQueue(max_queue_s=5.0)
    served, busy = q.serve(30.0, cap=2.0, step_s=10.0)  # 20 served, 10 wait
    assert (served, busy, q.queue, q.unserved) == (20.0, 1.0, 10.0, 0.0)
    # 10 waiting + 30 new on 2 req/s: 20 served, 20 left, the queue holds 2 x 5 s.
    served, _ = q.serve(30.0, cap=2.0, step_s=10.0)
    assert (served, q.queue, q.unserved) == (20.0, 10.0, 10.0)
    served, busy = q.serve(0.0, cap=4.0, step_s=10.0)
    assert served == 10.0 and busy == pytest.approx(0.25) and q.queue == 0.0
    assert (q.offered, q.served) == (60.0, 50.0)


def test_with_no_ready_capacity_nothing_waits() -> None:
    q = RequestQueue(max_queue_s=5.0)
    assert q.serve(10.0, cap=0.0, step_s=10.0) == (0.0, 0.0)
    assert q.unserved == 10.0 and q.queue == 0.0
