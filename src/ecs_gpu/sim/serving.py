"""Serving and the queue: what the ready tasks do with each step's requests.

Ready tasks serve up to their capacity; the rest waits in one queue bounded
at ``max_queue_s`` seconds of the ready capacity, and what overflows is
unserved. Requests in service follow Little's law: a task serving at rate
``r`` holds ``r x mean_request_s`` requests at once (docs/simulator.md).
"""

from __future__ import annotations


class RequestQueue:
    """The service's one queue, with running totals for the summary."""

    __slots__ = ("max_queue_s", "offered", "queue", "served", "unserved")

    def __init__(self, max_queue_s: float) -> None:
        self.max_queue_s = max_queue_s
        self.queue = 0.0
        self.offered = 0.0
        self.served = 0.0
        self.unserved = 0.0

    def serve(self, arrivals: float, cap: float, step_s: float) -> tuple[float, float]:
        """Serve one step at ``cap`` req/s; return (requests served, busy fraction)."""
        self.offered += arrivals
        can = cap * step_s
        work = self.queue + arrivals
        served = work if work < can else can
        left = work - served
        bound = cap * self.max_queue_s
        drop = left - bound if left > bound else 0.0
        self.queue = left - drop
        self.unserved += drop
        self.served += served
        return served, served / can if can > 0 else 0.0
