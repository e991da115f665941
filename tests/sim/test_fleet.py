"""The fleet on its own: boot, whole-GPU placement, image cache, stop order, termination."""

from __future__ import annotations

import pytest

from ecs_gpu.sim.fleet import Fleet, WarmPool

PULL, LOAD = 240.0, 60.0


def _fleet(slots: int = 1, placement: str = "spread") -> Fleet:
    return Fleet(slots, PULL, LOAD, placement)  # type: ignore[arg-type]


def test_boot_pull_and_load_in_order() -> None:
    f = _fleet()
    f.launch(0.0, 150.0, 300.0)
    f.provisioning = 1
    assert f.place(0.0) == 0  # nothing registered yet: the task waits
    f.advance(149.0)
    assert f.registered == []
    f.advance(150.0)
    assert len(f.registered) == 1
    assert f.place(150.0) == 1
    assert (f.placed, f.running, f.ready) == (1, 0, 0)
    f.advance(150.0 + PULL - 1.0)
    assert f.running == 0
    f.advance(150.0 + PULL)
    assert (f.running, f.ready) == (1, 0)  # RUNNING while the model loads
    f.advance(150.0 + PULL + LOAD)
    assert (f.running, f.ready) == (1, 1)
    assert not f.all_warm(299.0) and f.all_warm(300.0)


def test_whole_gpu_slots_and_image_cache() -> None:
    f = _fleet(slots=2)
    inst = f.launch(0.0, 0.0, 0.0)
    f.provisioning = 3
    assert f.place(0.0) == 2  # two slots: the third task waits for an instance
    assert f.provisioning == 1 and inst.free() == 0
    # The first task pulls; the second finds the pull under way and shares it.
    assert [t.running_at for t in inst.tasks] == [PULL, PULL]
    f.stop(2)  # provisioning first, then the newest starting task
    assert f.provisioning == 0 and f.placed == 1
    f.provisioning = 1
    f.advance(PULL)
    assert f.place(PULL + 100.0) == 1
    # Image on disk: the new task runs at once and only loads its model.
    new = inst.tasks[-1]
    assert new.running_at == PULL + 100.0
    assert new.ready_at == PULL + 100.0 + LOAD


@pytest.mark.parametrize(("placement", "per_instance"), [("spread", [1, 1]), ("binpack", [2, 0])])
def test_placement_strategy(placement: str, per_instance: list[int]) -> None:
    f = _fleet(slots=2, placement=placement)
    a, b = f.launch(0.0, 0.0, 0.0), f.launch(0.0, 0.0, 0.0)
    f.provisioning = 2
    f.place(0.0)
    assert [len(a.tasks), len(b.tasks)] == per_instance


def test_termination_removes_only_empty_instances_booting_first() -> None:
    f = _fleet()
    busy = f.launch(0.0, 0.0, 0.0)
    idle = f.launch(0.0, 0.0, 0.0)
    booting = f.launch(0.0, 500.0, 0.0)
    f.add_ready_task(busy, 0.0)
    assert f.empty_registered() == 1
    assert f.terminate_empty(1) == 1
    assert booting not in f.instances and idle in f.instances
    # Asked for three, only one more is empty: the busy one stays.
    assert f.terminate_empty(3) == 1
    assert f.instances == [busy] and f.registered == [busy]
    assert f.terminate_empty(1) == 0
    assert (f.running, f.ready) == (1, 1)


def test_stop_takes_serving_tasks_from_the_emptiest_instance() -> None:
    f = _fleet(slots=2)
    full, half = f.launch(0.0, 0.0, 0.0), f.launch(0.0, 0.0, 0.0)
    for inst in (full, full, half):
        f.add_ready_task(inst, 0.0)
    f.stop(1)
    # The half-used instance drains, so managed scaling can remove it.
    assert (len(full.tasks), len(half.tasks)) == (2, 0)
    assert (f.placed, f.running, f.ready) == (2, 2, 2)


def test_warm_pool_size_refill_take_and_billing() -> None:
    pool = WarmPool(min_size=1, max_prepared=5, prepare_s=390.0, register_s=60.0,
                    billed_running=False)  # fmt: skip
    # MaxGroupPreparedCapacity - in service, at least MinSize.
    assert pool.size(2) == 3 and pool.size(5) == 1 and pool.size(9) == 1
    pool.fill(0.0, 2)
    # Preparing: billed as running, and not yet ready to take.
    assert pool.billed(100.0) == 3
    assert not pool.take(100.0)
    # Prepared and stopped: only the volumes bill, and taken first.
    assert pool.billed(390.0) == 0 and pool.stopped(390.0) == 3
    assert pool.stopped(100.0) == 0
    assert pool.take(390.0) and pool.take(390.0)
    # Two more in service: the pool refills to max(1, 5 - 4) = 1, which it has.
    pool.fill(400.0, 4)
    assert pool.billed(401.0) == 0
    assert pool.take(401.0) and not pool.take(401.0)
    pool.fill(401.0, 5)
    assert pool.billed(402.0) == 1 and pool.starts == 3
    running = WarmPool(1, 3, 390.0, 60.0, billed_running=True)
    running.fill(0.0, 0, ready_at=-1.0)
    assert running.billed(0.0) == 3 and running.stopped(0.0) == 0
