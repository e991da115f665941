"""The capacity provider as doctor judges it (checks/doctor/capacity_provider.py, ASG008):
missing, without managed scaling, or protecting instances the group does not."""

from __future__ import annotations

from collections.abc import Callable

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.checks.doctor import run_checks
from support.doctor_cases import Snap
from support.snapshots import IID, NAMES, validate_snapshot


def test_no_capacity_provider_is_asg008(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["capacity_providers"] = []
    s["clusters"][0]["capacityProviders"] = []
    s["services"][0]["capacityProviderStrategy"] = []
    s[COLLECTION_KEY]["target"]["capacity_provider"] = None
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "ASG008")
    assert f.severity == "error" and f.title == "No capacity provider grows the fleet"
    assert f.evidence[0].value == "none" and "ecs-gpu deploy" in f.fix
    # A provider with no group (or one being deleted) grows nothing either.
    s = healthy()
    s["capacity_providers"][0]["status"] = "INACTIVE"
    f = next(f for f in run_checks(s).findings if f.id == "ASG008")
    assert f.title == "No capacity provider grows the fleet"
    assert f"the service asks for {NAMES.capacity_provider}" in f.fix


def test_a_capacity_provider_or_its_group_that_is_gone_is_asg008(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    s["auto_scaling_groups"] = []
    f = next(f for f in run_checks(s).findings if f.id == "ASG008")
    assert f.title == "The capacity provider's Auto Scaling group does not exist"
    assert NAMES.asg in f.fix
    assert "`ecs-gpu destroy SPEC` then `ecs-gpu deploy SPEC`" in f.fix
    s = healthy()
    s["services"][0]["capacityProviderStrategy"].append(
        {"capacityProvider": "gone", "weight": 1, "base": 0}
    )
    f = next(f for f in run_checks(s).findings if f.id == "ASG008")
    assert f.title == "The service's capacity provider does not exist" and "gone" in f.fix


def test_managed_scaling_off_echoes_the_providers_settings(healthy: Callable[[], Snap]) -> None:
    # A provider someone tuned, then turned off: the fix turns it on and keeps the
    # tuning (a field left out of the update takes ECS's default).
    s = healthy()
    prov = s["capacity_providers"][0]["autoScalingGroupProvider"]
    prov["managedScaling"].update(status="DISABLED", targetCapacity=90, minimumScalingStepSize=2)
    prov["managedDraining"] = "DISABLED"
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "ASG008")
    assert (f.evidence[1].kind, f.evidence[1].id) == ("capacity_providers", NAMES.capacity_provider)
    assert f.evidence[1].value["targetCapacity"] == 90
    assert "(status=DISABLED,targetCapacity=90,minimumScalingStepSize=2," in f.fix
    assert (
        f"aws ecs update-capacity-provider --name {NAMES.capacity_provider} "
        "--auto-scaling-group-provider 'managedScaling={status=ENABLED,targetCapacity=90,"
        "minimumScalingStepSize=2,maximumScalingStepSize=10,instanceWarmupPeriod=300},"
        "managedTerminationProtection=ENABLED,managedDraining=DISABLED'"
    ) in f.fix
    # Without a targetCapacity the command sets ecs-gpu's, 100.
    del prov["managedScaling"]["targetCapacity"]
    f = next(f for f in run_checks(s).findings if f.id == "ASG008")
    assert "managedScaling={status=ENABLED,targetCapacity=100,minimumScalingStepSize=2," in f.fix


def test_termination_protection_without_group_protection_names_both_commands(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    g = s["auto_scaling_groups"][0]
    g["NewInstancesProtectedFromScaleIn"] = False
    g["Instances"][0]["ProtectedFromScaleIn"] = False
    f = next(f for f in run_checks(s).findings if f.id == "ASG008")
    assert f.severity == "warning"
    assert (
        f"aws autoscaling update-auto-scaling-group --auto-scaling-group-name {NAMES.asg} "
        "--new-instances-protected-from-scale-in;"
    ) in f.fix
    assert f"--instance-ids {IID} --protected-from-scale-in" in f.fix
