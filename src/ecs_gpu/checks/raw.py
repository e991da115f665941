"""A snapshot assembled from raw AWS output: each kind the output of its call, no ``_collection``.

A support engineer has ``aws ecs describe-services`` output, not an ecs-gpu
collection. Each kind of such a file holds either its items (as a collected
snapshot does) or the whole output of the kind's call as the AWS CLI prints
it; :func:`unwrap` takes the items out (``Reservations[].Instances[]`` for
``instances``). :func:`infer_collection` then writes the ``_collection`` a
collection would have, from the one cluster and service in the file, and
says in ``assumed`` what it took from where, so the report can print it.

Pure: no I/O, no AWS call; the current time is a parameter.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Final

from ecs_gpu.checks.kinds import (
    COLLECTION_KEY,
    KIND_SOURCES,
    OBJECT_KINDS,
    SNAPSHOT_VERSION,
    Snapshot,
    TargetNames,
)
from ecs_gpu.contracts.naming import Names
from ecs_gpu.errors import BadInputError

TOOL: Final = "raw AWS output (no _collection)"
# AWS's own Fargate providers have no Auto Scaling group; never the GPU fleet's.
_FARGATE: Final = frozenset({"FARGATE", "FARGATE_SPOT"})
_CHOOSE: Final = (
    "pass --cluster NAME --service NAME with --from-snapshot to choose one, or keep only "
    "that one in the file"
)


def cli_command(kind: str) -> str:
    """The AWS CLI command whose output a kind may hold, e.g. ``aws ecs describe-services``."""
    service, operation, _ = KIND_SOURCES[kind]
    return f"aws {service} {re.sub(r'(?<!^)(?=[A-Z])', '-', operation).lower()}"


def _items(output: dict[str, Any], members: tuple[str, ...]) -> list[Any] | None:
    """The items under ``members`` of one output, lists flattened; None if a member is absent."""
    values: list[Any] = [output]
    for name in members:
        found: list[Any] = []
        for v in values:
            if not isinstance(v, dict) or name not in v:
                return None
            got = v[name]
            found.extend(got if isinstance(got, list) else [got])
        values = found
    return values


def unwrap(data: Snapshot) -> tuple[Snapshot, list[str]]:
    """``data`` with each kind that holds its call's whole output replaced by the items.

    Returns the new snapshot and a problem per kind that is an object but not
    that output (its item member missing). Lists and the object kinds
    (``host_probes``, ``warm_pools``) stay as they are.
    """
    out: Snapshot = {}
    problems: list[str] = []
    for kind, value in data.items():
        if kind in KIND_SOURCES and kind not in OBJECT_KINDS and isinstance(value, dict):
            members = KIND_SOURCES[kind][2]
            items = _items(value, members)
            if items is None:
                problems.append(
                    f"{kind} is an object without {'[].'.join(members)}: it holds a list of "
                    f"items, or the output of `{cli_command(kind)}` as the AWS CLI prints it"
                )
                continue
            value = items
        out[kind] = value
    return out, problems


def _cluster_of(svc: dict[str, Any]) -> str | None:
    # arn:aws:ecs:REGION:ACCOUNT:service/CLUSTER/NAME (the long ARN format).
    parts = str(svc.get("clusterArn") or svc.get("serviceArn") or "").split(":", 5)
    if len(parts) < 6:
        return None
    path = parts[5].split("/")
    if path[0] == "cluster" and len(path) == 2:
        return path[1]
    if path[0] == "service" and len(path) == 3:
        return path[1]
    return None


def _region_of(svc: dict[str, Any]) -> str | None:
    parts = str(svc.get("serviceArn") or "").split(":")
    return parts[3] if len(parts) > 3 and parts[3] else None


def _label(cluster: str | None, service: Any) -> str:
    return f"{cluster or '?'}/{service}"


def _choose_service(
    data: Snapshot, source: str, cluster: str | None, service: str | None
) -> dict[str, Any] | None:
    """The service to diagnose; None: services is empty and --service names it."""
    if "services" not in data:
        raise BadInputError(
            f"{source}: no _collection and no services: doctor takes the target from the one "
            'service in a snapshot of raw AWS output. Fix: add "services": the output of '
            "`aws ecs describe-services --cluster CLUSTER --services SERVICE`, or pass a file "
            "written by `ecs-gpu doctor --save-snapshot`."
        )
    services: list[dict[str, Any]] = data["services"]
    matching = [
        svc
        for svc in services
        if (service is None or svc.get("serviceName") == service)
        and (cluster is None or _cluster_of(svc) in (None, cluster))
    ]
    held = ", ".join(_label(_cluster_of(s), s.get("serviceName")) for s in services) or "none"
    if not matching:
        if not services and service is not None:
            return None  # collected, none there: SVC000 reports the service missing
        if not services:
            raise BadInputError(
                f"{source}: services is empty and there is no _collection to say which service "
                "was asked for. Fix: pass --cluster NAME --service NAME with --from-snapshot "
                "(doctor then reports that it does not exist), or add the service's "
                "`aws ecs describe-services` output."
            )
        chosen = " ".join(
            f"{flag} {value}"
            for flag, value in (("--cluster", cluster), ("--service", service))
            if value
        )
        raise BadInputError(
            f"{source}: {chosen}: no such service in the snapshot, which holds {held}. Fix: "
            "pass one of those names."
        )
    if len(matching) > 1:
        raise BadInputError(
            f"{source}: the snapshot holds {len(matching)} services ({held}) and no "
            f"_collection to say which to diagnose. Fix: {_CHOOSE}."
        )
    return matching[0]


def _choose_cluster(
    data: Snapshot, source: str, cluster: str | None, svc: dict[str, Any] | None
) -> tuple[str, str]:
    """(cluster name, where it came from)."""
    names = [c.get("clusterName") for c in data.get("clusters", []) if c.get("clusterName")]
    if cluster is not None:
        return cluster, "--cluster"
    from_service = None if svc is None else _cluster_of(svc)
    if from_service is not None:
        return from_service, "the service's clusterArn"
    if len(names) == 1:
        return str(names[0]), "the one cluster in clusters"
    if names:
        raise BadInputError(
            f"{source}: the snapshot holds {len(names)} clusters ({', '.join(map(str, names))}) "
            f"and the service names none. Fix: {_CHOOSE}."
        )
    raise BadInputError(
        f"{source}: cannot tell the service's cluster: it has no clusterArn and there is no "
        "clusters. Fix: pass --cluster NAME with --from-snapshot, or add the output of "
        "`aws ecs describe-clusters --clusters CLUSTER`."
    )


def _capacity_provider(
    data: Snapshot, svc: dict[str, Any] | None, cluster: dict[str, Any] | None
) -> tuple[str | None, str]:
    """(the GPU fleet's capacity provider, where it came from); None when nothing says one."""

    def ours(names: list[Any]) -> list[str]:
        return [str(n) for n in dict.fromkeys(names) if n and n not in _FARGATE]

    candidates = (
        (
            "the service's capacityProviderStrategy",
            ours(
                [
                    st.get("capacityProvider")
                    for st in (svc or {}).get("capacityProviderStrategy", [])
                ]
            ),
        ),
        (
            "the cluster's defaultCapacityProviderStrategy",
            ours(
                [
                    st.get("capacityProvider")
                    for st in (cluster or {}).get("defaultCapacityProviderStrategy", [])
                ]
            ),
        ),
        (
            "the cluster's capacityProviders",
            ours(list((cluster or {}).get("capacityProviders", []))),
        ),
        (
            "the one capacity provider with a group in capacity_providers",
            ours(
                [
                    cp.get("name")
                    for cp in data.get("capacity_providers", [])
                    if cp.get("autoScalingGroupProvider")
                ]
            ),
        ),
    )
    for where, names in candidates:
        if len(names) == 1:
            return names[0], where
        if names:
            return None, f"none: {where} names {len(names)} ({', '.join(names)})"
    return None, "none: no capacity provider in the snapshot"


def _asg(data: Snapshot, provider: str | None) -> tuple[str | None, str]:
    for cp in data.get("capacity_providers", []):
        arn = str((cp.get("autoScalingGroupProvider") or {}).get("autoScalingGroupArn", ""))
        if provider and cp.get("name") == provider and "autoScalingGroupName/" in arn:
            return arn.split("autoScalingGroupName/", 1)[1], f"capacity provider {provider}'s group"
    groups = [g.get("AutoScalingGroupName") for g in data.get("auto_scaling_groups", [])]
    if len(groups) == 1 and groups[0]:
        return str(groups[0]), "the one group in auto_scaling_groups"
    return None, "none: no capacity provider's group, and not one group in auto_scaling_groups"


def infer_collection(
    data: Snapshot,
    source: str,
    now: datetime,
    *,
    cluster: str | None = None,
    service: str | None = None,
) -> Snapshot:
    """``data`` (items, checked) with the ``_collection`` its one cluster and service imply.

    ``cluster``/``service`` choose among several (the --cluster/--service of
    ``doctor --from-snapshot``). The chosen service and cluster are the only
    ones kept in ``services`` and ``clusters``, as a collection holds only the
    target's. ``_collection.assumed`` says, one line each, what was taken from
    where. BadInputError names what is ambiguous and how to choose.
    """
    out = dict(data)
    assumed: list[str] = []
    svc = _choose_service(data, source, cluster, service)
    cluster_name, cluster_from = _choose_cluster(data, source, cluster, svc)
    service_name = str(svc.get("serviceName")) if svc is not None else str(service)
    assumed.append(f"cluster {cluster_name}: from {cluster_from}")
    assumed.append(
        f"service {service_name}: "
        + ("from --service" if service is not None else "the one service in services")
    )
    if svc is not None and len(data["services"]) > 1:
        out["services"] = [svc]
        assumed.append(f"services: only {service_name} kept of {len(data['services'])}")
    clusters = [c for c in data.get("clusters", []) if c.get("clusterName") == cluster_name]
    if "clusters" in data and len(clusters) != len(data["clusters"]):
        out["clusters"] = clusters
        assumed.append(f"clusters: only {cluster_name} kept of {len(data['clusters'])}")
    provider, provider_from = _capacity_provider(data, svc, clusters[0] if clusters else None)
    assumed.append(
        f"capacity provider {provider}: from {provider_from}"
        if provider
        else f"capacity provider {provider_from}"
    )
    asg, asg_from = _asg(data, provider)
    assumed.append(
        f"Auto Scaling group {asg}: from {asg_from}" if asg else f"Auto Scaling group {asg_from}"
    )
    stacks = [st.get("StackName") for st in data.get("stacks", []) if st.get("StackName")]
    stack = str(stacks[0]) if len(stacks) == 1 else None
    if stack:
        assumed.append(f"stack {stack}: the one stack in stacks")
    alarm = Names(service_name).gpu_metric_missing_alarm
    assumed.append(f"missing-metric alarm {alarm}: the name ecs-gpu gives service {service_name}")
    assumed.append(
        "scaling signal: read off the scaling policies (no spec: no gpu_guard, fast path or "
        "warm pool to compare with)"
    )
    collected_at = now.isoformat()
    assumed.append(f"collected at {collected_at}: now (raw output carries no collection time)")
    region = None if svc is None else _region_of(svc)
    out[COLLECTION_KEY] = {
        "version": SNAPSHOT_VERSION,
        "tool": TOOL,
        "region": region,
        "collected_at": collected_at,
        # No spec: no signal, guard, fast path or warm pool (their None defaults).
        "target": TargetNames(
            cluster=cluster_name,
            service=service_name,
            asg=asg,
            capacity_provider=provider,
            stack=stack,
            missing_metric_alarm=alarm,
        ).as_dict(),
        "probe_hosts": "host_probes" in data,
        "denied": [],
        "errors": [],
        "assumed": assumed,
    }
    return out
