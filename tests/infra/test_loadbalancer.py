"""The load balancer on every example's template (infra/loadbalancer.py), when configured."""

from __future__ import annotations

from typing import Any

from ecs_gpu.infra import loadbalancer
from ecs_gpu.spec import Spec

from .tpl import props, resources

T = dict[str, Any]


def test_load_balancer_when_configured(t: T, spec: Spec) -> None:
    lb = spec.load_balancer
    albs = resources(t, "AWS::ElasticLoadBalancingV2::LoadBalancer")
    if lb is None:
        assert not albs
        return
    (alb,) = albs.values()
    assert alb["Properties"]["Scheme"] == lb.scheme
    if lb.scheme == "internet-facing" and spec.network is not None:
        assert alb["Properties"]["Subnets"] == spec.network.public_subnet_ids
    tg = props(t, "AWS::ElasticLoadBalancingV2::TargetGroup")
    assert tg["TargetType"] == "ip"
    assert tg["Port"] == spec.service.container_port
    assert tg["HealthCheckPath"] == lb.health_check_path
    assert tg["HealthCheckIntervalSeconds"] == loadbalancer.HEALTH_CHECK_INTERVAL_S
    assert (tg["HealthyThresholdCount"], tg["UnhealthyThresholdCount"]) == (2, 3)
    tg_attrs = {a["Key"]: a["Value"] for a in tg["TargetGroupAttributes"]}
    assert tg_attrs["deregistration_delay.timeout_seconds"] == "120"
    # Streaming generations outlive the ALB's default 60 s idle timeout.
    lb_attrs = {a["Key"]: a["Value"] for a in alb["Properties"]["LoadBalancerAttributes"]}
    assert lb_attrs["idle_timeout.timeout_seconds"] == "600"
    assert lb_attrs["routing.http.drop_invalid_header_fields.enabled"] == "true"
    listener = props(t, "AWS::ElasticLoadBalancingV2::Listener")
    if lb.certificate_arn:
        assert listener["Protocol"] == "HTTPS"
        assert listener["Certificates"] == [{"CertificateArn": lb.certificate_arn}]
    else:
        assert listener["Protocol"] == "HTTP"
    service = props(t, "AWS::ECS::Service")
    (binding,) = service["LoadBalancers"]
    assert binding["ContainerPort"] == spec.service.container_port
