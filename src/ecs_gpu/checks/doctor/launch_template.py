"""Link 9, launch template: what new instances launch from."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import yaml

from ecs_gpu import host
from ecs_gpu.checks.doctor.common import (
    ODCR_FIRST,
    revert_drift,
    spot_groups,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.model import Check, Evidence, Finding
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.design import redeploy
from ecs_gpu.design.spot import DRAIN_FLAG
from ecs_gpu.host.layout import ECS_CONFIG_PATH


def _lt_versions(s: Snapshot) -> list[dict[str, Any]]:
    """Launch template versions that say which template and version they are."""
    return [
        v
        for v in s["launch_template_versions"]
        if v.get("LaunchTemplateId") and isinstance(v.get("VersionNumber"), int)
    ]


def _lt_target_versions(s: Snapshot) -> dict[str, dict[str, int]]:
    """Per launch template id: $Latest and $Default version numbers."""
    out: dict[str, dict[str, int]] = {}
    for v in _lt_versions(s):
        d = out.setdefault(v["LaunchTemplateId"], {"$Latest": 0})
        d["$Latest"] = max(d["$Latest"], int(v["VersionNumber"]))
        if v.get("DefaultVersion"):
            d["$Default"] = int(v["VersionNumber"])
    return out


@check(
    "LT001",
    link="launch_template",
    severity="warning",
    title="Instances run an old launch template",
    requires=("auto_scaling_groups", "launch_template_versions"),
    doc="ASG instances run a launch template version other than the one the ASG launches.",
)
def _old_launch_template(s: Snapshot, c: Check) -> list[Finding]:
    resolved = _lt_target_versions(s)
    images = {
        (v["LaunchTemplateId"], int(v["VersionNumber"])): v.get("LaunchTemplateData", {}).get(
            "ImageId"
        )
        for v in _lt_versions(s)
    }
    out = []
    for g in s["auto_scaling_groups"]:
        spec = g.get("LaunchTemplate") or g.get("MixedInstancesPolicy", {}).get(
            "LaunchTemplate", {}
        ).get("LaunchTemplateSpecification")
        if not spec or not spec.get("LaunchTemplateId"):
            continue
        lt = spec["LaunchTemplateId"]
        if lt not in resolved:
            # Collected, and no version of it: the template is gone, and with it
            # every launch (absent is not "no instance runs an old version").
            out.append(
                c.finding(
                    [
                        Evidence(
                            "auto_scaling_groups",
                            g.get("AutoScalingGroupName", "?"),
                            "LaunchTemplate.LaunchTemplateId",
                            lt,
                        ),
                        Evidence(
                            "launch_template_versions",
                            lt,
                            "LaunchTemplateId",
                            sorted(resolved) or "none",
                        ),
                    ],
                    f"The group launches from the launch template {lt}, of which "
                    "DescribeLaunchTemplateVersions returned no version: it was deleted, so "
                    "every launch fails (ASG001 shows the failed activity). "
                    + revert_drift(s, "a launch template")
                    + " Read the change set before you run it: it must create the template "
                    "and set the group's LaunchTemplate to the new one, which is a FLEET "
                    "REFRESH: the group's instance refresh replaces every GPU instance (new "
                    f"ones first, {redeploy.REFRESH_HEALTHY_RANGE} healthy) and restarts the "
                    "tasks on each.",
                    title="The group's launch template does not exist",
                    severity="error",
                )
            )
            continue
        want_raw = str(spec.get("Version", "$Default"))
        want = resolved[lt].get(want_raw) if want_raw.startswith("$") else int(want_raw)
        if want is None:
            continue
        stale = [
            (i["InstanceId"], int(i["LaunchTemplate"]["Version"]))
            for i in g.get("Instances", [])
            if i.get("LaunchTemplate", {}).get("Version", "").isdigit()
            and int(i["LaunchTemplate"]["Version"]) != want
        ]
        if not stale:
            continue
        old_images = sorted({str(images.get((lt, v))) for _, v in stale})
        out.append(
            c.finding(
                [
                    Evidence(
                        "auto_scaling_groups",
                        g["AutoScalingGroupName"],
                        "Instances[].LaunchTemplate.Version",
                        {iid: v for iid, v in stale},
                    ),
                    Evidence("launch_template_versions", lt, f"{want_raw} VersionNumber", want),
                    Evidence(
                        "launch_template_versions",
                        lt,
                        "LaunchTemplateData.ImageId (old -> new)",
                        f"{', '.join(old_images)} -> {images.get((lt, want))}",
                    ),
                ],
                "These instances still run an older launch template (older AMI and NVIDIA driver) "
                "and keep it until replaced. An instance refresh replaces each of them, and the "
                "tasks on it, one new instance first (the template's own refresh settings: "
                "every GPU instance is scale-in protected, so the default Wait would stall for "
                f"an hour and fail, and {redeploy.REFRESH_HEALTHY_RANGE} healthy never drops below "
                "today's GPUs; the "
                "group's DefaultInstanceWarmup paces it): aws autoscaling "
                f"start-instance-refresh --auto-scaling-group-name {g['AutoScalingGroupName']} "
                f"--preferences '{json.dumps(redeploy.REFRESH_PREFERENCES)}'.",
            )
        )
    return out


def _launched_lt_data(s: Snapshot, g: dict[str, Any]) -> tuple[str, int, dict[str, Any]] | None:
    """(launch template id, version, LaunchTemplateData) the group launches new instances from."""
    spec = g.get("LaunchTemplate") or g.get("MixedInstancesPolicy", {}).get(
        "LaunchTemplate", {}
    ).get("LaunchTemplateSpecification")
    resolved = _lt_target_versions(s)
    if not spec or spec.get("LaunchTemplateId") not in resolved:
        return None
    lt = spec["LaunchTemplateId"]
    raw = str(spec.get("Version", "$Default"))
    want = resolved[lt].get(raw) if raw.startswith("$") else int(raw) if raw.isdigit() else None
    for v in _lt_versions(s):
        if v["LaunchTemplateId"] == lt and int(v["VersionNumber"]) == want:
            return lt, want, v.get("LaunchTemplateData", {})
    return None


def _group_target(lt_target: dict[str, Any]) -> dict[str, Any]:
    """A launch template's CapacityReservationTarget (one id or resource group) as the
    group's (lists of them)."""
    out: dict[str, Any] = {}
    if "CapacityReservationId" in lt_target:
        out["CapacityReservationIds"] = [lt_target["CapacityReservationId"]]
    if "CapacityReservationResourceGroupArn" in lt_target:
        out["CapacityReservationResourceGroupArns"] = [
            lt_target["CapacityReservationResourceGroupArn"]
        ]
    return out


def _odcr_fix(group: str, target: dict[str, Any], *, lt_too: bool) -> str:
    """Redeploy, or set the group's preference to capacity-reservations-first by hand,
    keeping the reservation it targets (``target``: the group's CapacityReservationTarget)."""
    spec: dict[str, Any] = {"CapacityReservationPreference": ODCR_FIRST}
    if target:
        spec["CapacityReservationTarget"] = target
    return (
        "Redeploy with `ecs-gpu deploy`: the group then targets the reservation with "
        f"{ODCR_FIRST}, which fills it and launches On-Demand beyond it. By hand: aws "
        f"autoscaling update-auto-scaling-group --auto-scaling-group-name {group} "
        f"--capacity-reservation-specification '{json.dumps(spec)}'"
        + (" (and drop the launch template's own reservation target)." if lt_too else ".")
    )


@check(
    "LT002",
    link="launch_template",
    severity="warning",
    title="Scale-out cannot pass the capacity reservation",
    requires=("auto_scaling_groups", "launch_template_versions"),
    doc="The launch template targets a Capacity Reservation by id while the group sets no "
    "reservation preference, or the group launches only into reservations.",
)
def _odcr_blocks_growth(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for g in s["auto_scaling_groups"]:
        name = g.get("AutoScalingGroupName", "?")
        crs = g.get("CapacityReservationSpecification") or {}
        pref = crs.get("CapacityReservationPreference")
        if pref == "capacity-reservations-only":
            out.append(
                c.finding(
                    [
                        Evidence(
                            "auto_scaling_groups",
                            name,
                            "CapacityReservationSpecification.CapacityReservationPreference",
                            pref,
                        )
                    ],
                    "The group launches only into its Capacity Reservation: once the reservation "
                    "is full, every scale-out fails. "
                    + _odcr_fix(name, crs.get("CapacityReservationTarget") or {}, lt_too=False),
                )
            )
            continue
        if pref not in (None, "default"):
            continue  # first or none: the group decides, and On-Demand is allowed
        launched = _launched_lt_data(s, g)
        if launched is None:
            continue
        lt, version, data = launched
        target = (data.get("CapacityReservationSpecification") or {}).get(
            "CapacityReservationTarget"
        ) or {}
        if not target:
            continue
        out.append(
            c.finding(
                [
                    Evidence(
                        "launch_template_versions",
                        f"{lt} v{version}",
                        "LaunchTemplateData.CapacityReservationSpecification."
                        "CapacityReservationTarget",
                        target,
                    ),
                    Evidence(
                        "auto_scaling_groups",
                        name,
                        "CapacityReservationSpecification.CapacityReservationPreference",
                        pref,
                    ),
                ],
                "The launch template targets a Capacity Reservation, and EC2 fails a launch that "
                "targets a full reservation (ReservationCapacityExceeded): the fleet cannot grow "
                "past the reservation. " + _odcr_fix(name, _group_target(target), lt_too=True),
            )
        )
    return out


def _user_data_text(data: dict[str, Any]) -> str | None:
    """The launch template's user data, decoded; None when it has none or it is not base64."""
    raw = data.get("UserData")
    if not raw:
        return None
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _drains_on_notice(text: str) -> bool:
    """Whether user data turns on Spot draining: our cloud-config's ecs.config, or the line
    the ECS guide has a script append to it."""
    want = f"{DRAIN_FLAG}=true"
    try:
        files = host.written_files(text)
    except (ValueError, yaml.YAMLError, AttributeError, TypeError, KeyError):
        files = {}
    config = files.get(ECS_CONFIG_PATH)
    if config is not None:
        return want in config.splitlines()
    return want in text


@check(
    "LT003",
    link="launch_template",
    severity="error",
    title="Spot instances do not drain on their interruption notice",
    requires=("auto_scaling_groups", "launch_template_versions"),
    doc="A Spot group's launch template does not set ECS_ENABLE_SPOT_INSTANCE_DRAINING=true.",
)
def _spot_draining_off(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for g in spot_groups(s):
        launched = _launched_lt_data(s, g)
        if launched is None:
            continue  # LT001 reports a template that is gone
        lt, version, data = launched
        text = _user_data_text(data)
        if text is not None and _drains_on_notice(text):
            continue
        out.append(
            c.finding(
                [
                    Evidence(
                        "launch_template_versions",
                        f"{lt} v{version}",
                        f"LaunchTemplateData.UserData {ECS_CONFIG_PATH} {DRAIN_FLAG}",
                        "no user data" if text is None else "not set",
                    )
                ],
                f"The Spot group {g.get('AutoScalingGroupName', '?')} launches instances without "
                f"{DRAIN_FLAG}=true (off by default): on EC2's two-minute notice ECS does not "
                "drain the instance, so its tasks are replaced only after it is gone. Redeploy "
                "with `ecs-gpu deploy` (the Spot launch template sets it); by hand, add the line "
                f"to {ECS_CONFIG_PATH} in the template's user data.",
            )
        )
    return out
