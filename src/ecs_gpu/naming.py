"""Physical names of the resources a spec creates.

The CDK stack, deploy, destroy, verify and doctor all find a deployment by
these names, so they are derived from the service name in one place.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Names:
    """Every physical name derived from ``service.name``."""

    service_name: str

    @property
    def stack(self) -> str:
        return self.service_name

    @property
    def cluster(self) -> str:
        return self.service_name

    @property
    def service(self) -> str:
        return self.service_name

    @property
    def asg(self) -> str:
        return f"{self.service_name}-gpu-asg"

    @property
    def capacity_provider(self) -> str:
        # Capacity provider names may not start with "aws", "ecs" or "fargate".
        return f"cp-{self.service_name}-gpu"

    @property
    def task_family(self) -> str:
        return self.service_name

    @property
    def task_log_group(self) -> str:
        return f"/ecs-gpu/{self.service_name}/tasks"

    @property
    def host_log_group(self) -> str:
        """Log group the host CloudWatch agent ships the ECS agent's logs to."""
        return f"/ecs-gpu/{self.service_name}/host"

    @property
    def dashboard(self) -> str:
        return f"{self.service_name}-gpu"

    @property
    def gpu_metric_missing_alarm(self) -> str:
        return f"{self.service_name}-gpu-metric-missing"

    @property
    def scalable_target_resource_id(self) -> str:
        return f"service/{self.cluster}/{self.service}"
