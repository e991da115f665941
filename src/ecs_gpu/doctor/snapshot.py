"""The snapshot format: what the collector writes and doctor reads (docs/doctor.md).

Pure: no AWS call.
"""

from __future__ import annotations

from typing import Any, Final

Snapshot = dict[str, Any]

SNAPSHOT_VERSION: Final = 1
COLLECTION_KEY: Final = "_collection"

# Every kind a full collection writes, in the order docs/doctor.md lists them.
KINDS: Final = (
    "clusters",
    "services",
    "task_definitions",
    "container_instances",
    "tasks",
    "capacity_providers",
    "auto_scaling_groups",
    "scaling_activities",
    "asg_policies",
    "launch_template_versions",
    "instances",
    "scalable_targets",
    "scaling_policies",
    "service_scaling_activities",
    "alarms",
    "metric_data",
    "stacks",
    "host_probes",
)
