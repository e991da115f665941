"""The instance layer: CapacityProviderReservation, the ASG's policies, launches each minute."""

from __future__ import annotations

from simhelp import context, params

from ecs_gpu.sim.controllers.managed_scaling import (
    AsgScaler,
    InstanceLayer,
    capacity_provider_reservation,
)
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.metrics import MetricSeries


def test_capacity_provider_reservation() -> None:
    assert capacity_provider_reservation(0, 3, 0, 1) == 200.0
    assert capacity_provider_reservation(0, 0, 0, 1) == 100.0
    assert capacity_provider_reservation(2, 3, 0, 1) == 250.0
    assert capacity_provider_reservation(2, 3, 0, 4) == 150.0
    assert capacity_provider_reservation(4, 0, 1, 1) == 75.0
    assert capacity_provider_reservation(4, 0, 0, 1) == 100.0


def _series(*values: float) -> MetricSeries:
    m = MetricSeries()
    for v in values:
        m.publish(0.0, v)
    m.visible(0.0)
    return m


def test_asg_steps_warmup_floor_and_scale_in_rate() -> None:
    asg = AsgScaler(100, floor_instances=2, max_instances=10, min_step=1, max_step=3,
                    host_cpu_target_percent=None)  # fmt: skip
    assert asg.decide(0, True, _series(200.0), None) == 2  # from zero: two
    assert asg.decide(2, True, _series(300.0), None) == 3  # capped by max step
    assert asg.decide(2, False, _series(300.0), None) == 0  # waits for warm-up
    assert asg.decide(9, True, _series(200.0), None) == 1  # capped by max instances
    # 15 low minutes: remove, at most just under half, never below the floor.
    assert asg.decide(8, True, _series(*[25.0] * 15), None) == -3
    assert asg.decide(3, True, _series(*[34.0] * 15), None) == -1
    assert asg.decide(8, True, _series(*[25.0] * 14), None) == 0


def test_asg_low_datapoints_what_if_waits_longer() -> None:
    # ManagedScaling.cpr_low_datapoints (a what-if: AWS's alarm is 15 of 15).
    asg = AsgScaler(100, floor_instances=1, max_instances=10, min_step=1, max_step=3,
                    host_cpu_target_percent=None, low_datapoints=30)  # fmt: skip
    lows = MetricSeries(window=30)
    for _ in range(29):
        lows.publish(0.0, 25.0)
    lows.visible(0.0)
    assert asg.decide(8, True, lows, None) == 0  # 29 low minutes: not yet
    lows.publish(0.0, 25.0)
    lows.visible(0.0)
    assert asg.decide(8, True, lows, None) == -3


def test_each_minute_it_publishes_cpr_and_launches_what_its_alarm_asks() -> None:
    p = params(min_instances=0).with_(managed_scaling={"cpr_delay_s": 0.0})
    fleet = Fleet(p.tasks_per_instance, 0.0, 0.0)
    fleet.provisioning = 3  # tasks waiting, no instance: CPR 200
    ctx = context(p, fleet, 3)
    layer = InstanceLayer(p, lambda: 120.0)
    ctx.instances = layer
    layer.on_minute(60.0, ctx)
    # From zero, CPR 200 reads as two instances; both boot for 120 s.
    assert layer.last_cpr == 200.0 and len(fleet.instances) == 2
    assert not fleet.registered and fleet.next_event == 180.0
