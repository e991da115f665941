"""[simulation]: the workload's own speeds, which the simulator needs and AWS cannot know."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ecs_gpu.spec.sections.base import _Section

# One day: the longest duration a [simulation] key may give.
MAX_SIM_SECONDS = 86400.0

# The Spot Instance Advisor's frequency-of-interruption bands (aws-semantics
# §11); ecs_gpu.design.spot gives each its rate per instance-hour.
SpotBand = Literal["<5%", "5-10%", "10-15%", "15-20%", ">20%"]


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
    # A what-if the simulator runs and the template never deploys: an
    # ASGAverageCPUUtilization target-tracking policy on the GPU ASG, the
    # anti-pattern of the field report (infra/capacity.py). Unset (the
    # default) means none.
    # At least 1 %, as the service's targets.
    host_cpu_policy_target_percent: Annotated[float, Field(ge=1, le=100)] | None = None
    # [capacity.spot] only. The Spot Instance Advisor's band for the listed
    # types in the Region: its upper edge, as a share of instances reclaimed
    # in a month, becomes a rate per instance-hour (ecs_gpu.design.spot).
    spot_interruption_band: SpotBand = "<5%"
    # Instead of the band: interruptions per Spot instance-hour (0: never).
    spot_interruptions_per_instance_hour: Annotated[float, Field(ge=0, le=1)] | None = None
    # Spot's discount off On-Demand, percent; unset: the catalog's dated
    # figure for the family (catalog.SPOT_DISCOUNTS), which not every family has.
    spot_discount_percent: Annotated[float, Field(ge=0, le=95)] | None = None
