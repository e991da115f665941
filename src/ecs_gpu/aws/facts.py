"""Facts: read a live GPU deployment into a snapshot of raw AWS API objects.

A snapshot is a JSON document (docs/doctor.md "Snapshot format"): each key
names a kind of AWS object and holds the items exactly as the AWS API returns
them, with datetimes as ISO-8601 strings. A kind that could not be read is
*absent*, never empty, so a check over it reports "unknown" rather than "ok".
``_collection`` records what was asked for, which calls AWS denied (with the
IAM permission) and which failed.

Every list call goes through a paginator; every Describe call is batched at
the API's maximum (100 container instances or tasks, 50 ASG names, 100
alarms); throttling is retried by botocore's standard mode and, past that,
by tenacity, so a throttled API is never reported as broken.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

import boto3
from botocore import exceptions as bx
from tenacity import (
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from ecs_gpu.aws.clients import client
from ecs_gpu.aws.errors import (
    AccessDenied,
    Unreachable,
    error_code,
    iam_action,
    is_access_denied,
    is_throttling,
    translate,
)
from ecs_gpu.checks.snapshot import (
    COLLECTION_KEY,
    KIND_TABLE,
    KINDS,
    SNAPSHOT_VERSION,
    Snapshot,
    permissions,
    to_json_safe,
)
from ecs_gpu.checks.target import Target as Target
from ecs_gpu.checks.target import WarmPool as WarmPool
from ecs_gpu.contracts import signals
from ecs_gpu.contracts.naming import scalable_target_id
from ecs_gpu.errors import AwsError, AwsRefused, BadInputError
from ecs_gpu.host.probe import probe_commands

T = TypeVar("T")

# Every IAM action a collection needs (docs/doctor.md "Permissions"), from
# the kinds' table (checks/kinds.py); the probe's two are needed only
# with --probe-hosts.
PERMISSIONS: Final = permissions("core", "always")
PROBE_PERMISSIONS: Final = permissions("probe")
# Needed only when a group has a warm pool, or the spec deploys one.
WARM_POOL_PERMISSIONS: Final = permissions("warm_pool")

# API maxima for one Describe call (botocore service models / API references).
ECS_DESCRIBE_BATCH: Final = 100  # DescribeContainerInstances, DescribeTasks
ASG_NAMES_BATCH: Final = 50  # DescribeAutoScalingGroups AutoScalingGroupNames
ALARM_NAMES_BATCH: Final = 100  # DescribeAlarms AlarmNames
# DescribeInstances documents no InstanceIds maximum; 100 keeps it O(n/100)
# like the ECS describes.
EC2_IDS_BATCH: Final = 100
CP_NAMES_BATCH: Final = 100  # DescribeCapacityProviders: "Up to 100 ... in an action"
WARM_POOL_RECORDS: Final = 50  # DescribeWarmPool MaxRecords: "The maximum value is 50"
SSM_TARGETS_BATCH: Final = 50  # SendCommand InstanceIds max 50
# Newest activities per call: Application Auto Scaling's MaxResults maximum
# (EC2 Auto Scaling allows 100); only the newest few matter to the checks.
SCALING_ACTIVITY_RECORDS: Final = 50
# Recent window of GPU datapoints: long enough for target tracking's 3-of-3
# and the missing-metric alarm to have something to show, short enough to be
# "now".
METRIC_WINDOW: Final = timedelta(minutes=30)
PROBE_TIMEOUT_S: Final = 60
PROBE_POLL_S: Final = 2.0
_SSM_DONE: Final = frozenset(
    {"Success", "Cancelled", "TimedOut", "Failed", "Cancelling", "Undeliverable", "Terminated"}
)


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """Consecutive slices of at most ``size`` items."""
    for i in range(0, len(items), size):
        yield list(items[i : i + size])


class _Skip(Exception):
    """A kind could not be collected; recorded, the rest goes on."""


_throttle_retry = retry(
    retry=retry_if_exception(is_throttling),
    # botocore already retried 8 times; these are the last, slower tries.
    wait=wait_exponential_jitter(initial=1, max=10),
    stop=stop_after_attempt(3),
    reraise=True,
)


@dataclass
class Collector:
    """One collection run. ``collect`` is the public entry point."""

    session: boto3.Session
    target: Target
    probe_hosts: bool = False
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    probe_timeout_s: float = PROBE_TIMEOUT_S
    snapshot: Snapshot = field(default_factory=dict)
    _clients: dict[str, Any] = field(default_factory=dict)

    # --- plumbing -------------------------------------------------------------

    def _client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = client(self.session, service)
        return self._clients[service]

    def call(self, service: str, operation: str, method: str, **kwargs: Any) -> dict[str, Any]:
        """One API call: throttling retried, the response without ResponseMetadata."""
        fn = getattr(self._client(service), method)
        resp: dict[str, Any] = _throttle_retry(fn)(**kwargs)
        resp.pop("ResponseMetadata", None)
        return resp

    def pages(
        self, service: str, operation: str, method: str, **kwargs: Any
    ) -> list[dict[str, Any]]:
        """Every page of a paginated call.

        botocore retries a throttled page; if throttling outlasts that, the
        whole listing is retried (a paginator generator cannot resume after
        an exception).
        """

        def run() -> list[dict[str, Any]]:
            paginator = self._client(service).get_paginator(method)
            out = []
            for page in paginator.paginate(**kwargs):
                page.pop("ResponseMetadata", None)
                out.append(page)
            return out

        result: list[dict[str, Any]] = _throttle_retry(run)()
        return result

    def _collection(self) -> dict[str, Any]:
        meta: dict[str, Any] = self.snapshot[COLLECTION_KEY]
        return meta

    def kind(
        self, kinds: Sequence[str], service: str, operation: str, fn: Callable[[], None]
    ) -> None:
        """Run ``fn`` which fills ``kinds``; on denial or failure leave them absent.

        AccessDenied is recorded with the permission it needs; an unreachable
        endpoint aborts the whole run (exit 3); any other AWS error is recorded
        and the dependent checks report "unknown".
        """
        try:
            fn()
        except (bx.ClientError, bx.BotoCoreError) as e:
            translated = translate(e, service, operation)
            if isinstance(translated, Unreachable):
                # No endpoint, a timeout, or a server that is not AWS: every
                # other call would end the same way.
                raise translated from None
            op = getattr(e, "operation_name", None) or operation
            for k in kinds:
                self.snapshot.pop(k, None)
            if is_access_denied(e):
                self._collection()["denied"].append(
                    {
                        "call": f"{service} {op}",
                        "permission": iam_action(service, op),
                        "code": error_code(e),
                        "kinds": list(kinds),
                    }
                )
            else:
                self._collection()["errors"].append(
                    {"call": f"{service} {op}", "message": str(e), "kinds": list(kinds)}
                )
        except _Skip as e:
            for k in kinds:
                self.snapshot.pop(k, None)
            self._collection()["errors"].append(
                {"call": f"{service} {operation}", "message": str(e), "kinds": list(kinds)}
            )

    def put(self, kind: str, value: Any) -> None:
        self.snapshot[kind] = to_json_safe(value)

    # --- the collection, in dependency order ------------------------------------

    def collect(self) -> Snapshot:
        self.snapshot = {
            COLLECTION_KEY: {
                "version": SNAPSHOT_VERSION,
                "tool": "ecs-gpu doctor",
                "region": self.session.region_name,
                "collected_at": self.now.isoformat(),
                "target": self.target.as_dict(),
                "probe_hosts": self.probe_hosts,
                "denied": [],
                "errors": [],
            }
        }
        self._core()
        for kind, src in KIND_TABLE.items():
            if src.need == "core" or (src.need == "probe" and not self.probe_hosts):
                continue
            self.kind((kind,), src.service, src.collected_by, getattr(self, f"_collect_{kind}"))
        return self.snapshot

    def _core(self) -> None:
        """Cluster and service: without them there is nothing to diagnose."""
        for kind, src in KIND_TABLE.items():
            if src.need != "core":
                continue
            service, op = src.service, src.collected_by
            try:
                getattr(self, f"_collect_{kind}")()
            except (bx.ClientError, bx.BotoCoreError) as e:
                err = translate(e, service, op)
                if isinstance(err, AwsRefused):
                    # Elsewhere a refusal is a failed operation (1); here it leaves
                    # nothing to check, which is doctor's exit 3.
                    err = AwsError(err.message)
                raise err from None

    def _collect_clusters(self) -> None:
        t = self.target
        resp = self.call("ecs", "DescribeClusters", "describe_clusters", clusters=[t.cluster])
        active = [c for c in resp.get("clusters", []) if c.get("status") != "INACTIVE"]
        if not active:
            raise BadInputError(
                f"cluster {t.cluster!r} not found in region {self.session.region_name}. "
                "Fix: check --cluster (or [service] name in the spec) and --region; if the "
                "stack was never deployed, run `ecs-gpu deploy SPEC`."
            )
        self.put("clusters", active)

    def _collect_services(self) -> None:
        t = self.target
        resp = self.call(
            "ecs", "DescribeServices", "describe_services", cluster=t.cluster, services=[t.service]
        )
        found = [s for s in resp.get("services", []) if s.get("status") != "INACTIVE"]
        if not found:
            raise BadInputError(
                f"service {t.service!r} not found in cluster {t.cluster!r} "
                f"(region {self.session.region_name}). Fix: check --service (or [service] name "
                "in the spec), or deploy it with `ecs-gpu deploy`."
            )
        self.put("services", found)

    def _service_item(self) -> dict[str, Any]:
        item: dict[str, Any] = self.snapshot["services"][0]
        return item

    def _collect_task_definitions(self) -> None:
        svc = self._service_item()
        arns = [svc.get("taskDefinition")] + [
            d.get("taskDefinition") for d in svc.get("deployments", [])
        ]
        unique = list(dict.fromkeys(a for a in arns if a))
        out = []
        for arn in unique:
            resp = self.call(
                "ecs", "DescribeTaskDefinition", "describe_task_definition", taskDefinition=arn
            )
            out.append(resp["taskDefinition"])
        self.put("task_definitions", out)

    def _collect_container_instances(self) -> None:
        arns: list[str] = []
        for page in self.pages(
            "ecs", "ListContainerInstances", "list_container_instances", cluster=self.target.cluster
        ):
            arns.extend(page.get("containerInstanceArns", []))
        out: list[dict[str, Any]] = []
        for batch in chunks(arns, ECS_DESCRIBE_BATCH):
            resp = self.call(
                "ecs",
                "DescribeContainerInstances",
                "describe_container_instances",
                cluster=self.target.cluster,
                containerInstances=batch,
            )
            out.extend(resp.get("containerInstances", []))
        self.put("container_instances", out)

    def _collect_tasks(self) -> None:
        t = self.target
        arns: list[str] = []
        # Running and pending tasks of the whole cluster (other services hold
        # GPUs too), and the service's recently stopped ones (their
        # stoppedReason explains crash loops).
        for kwargs in (
            {"cluster": t.cluster, "desiredStatus": "RUNNING"},
            {"cluster": t.cluster, "serviceName": t.service, "desiredStatus": "STOPPED"},
        ):
            for page in self.pages("ecs", "ListTasks", "list_tasks", **kwargs):
                arns.extend(page.get("taskArns", []))
        unique = list(dict.fromkeys(arns))
        out: list[dict[str, Any]] = []
        for batch in chunks(unique, ECS_DESCRIBE_BATCH):
            resp = self.call(
                "ecs", "DescribeTasks", "describe_tasks", cluster=t.cluster, tasks=batch
            )
            out.extend(resp.get("tasks", []))
        self.put("tasks", out)

    def _cp_names(self) -> list[str]:
        names: list[str] = []
        for c in self.snapshot.get("clusters", []):
            names.extend(c.get("capacityProviders", []))
        svc = self._service_item()
        names.extend(s["capacityProvider"] for s in svc.get("capacityProviderStrategy", []))
        if self.target.capacity_provider:
            names.append(self.target.capacity_provider)
        # FARGATE and FARGATE_SPOT are not describable capacity providers of ours.
        return [n for n in dict.fromkeys(names) if n not in ("FARGATE", "FARGATE_SPOT")]

    def _collect_capacity_providers(self) -> None:
        names = self._cp_names()
        out: list[dict[str, Any]] = []
        for batch in chunks(names, CP_NAMES_BATCH):
            resp = self.call(
                "ecs",
                "DescribeCapacityProviders",
                "describe_capacity_providers",
                capacityProviders=batch,
            )
            out.extend(resp.get("capacityProviders", []))
        self.put("capacity_providers", out)

    def asg_names(self) -> list[str]:
        """The GPU ASGs: behind the capacity providers, else the spec's name."""
        names = []
        for cp in self.snapshot.get("capacity_providers", []):
            arn = cp.get("autoScalingGroupProvider", {}).get("autoScalingGroupArn", "")
            if "autoScalingGroupName/" in arn:
                names.append(arn.split("autoScalingGroupName/", 1)[1])
        if self.target.asg:
            names.append(self.target.asg)
        return list(dict.fromkeys(names))

    def _collect_auto_scaling_groups(self) -> None:
        names = self.asg_names()
        out: list[dict[str, Any]] = []
        for batch in chunks(names, ASG_NAMES_BATCH):
            for page in self.pages(
                "autoscaling",
                "DescribeAutoScalingGroups",
                "describe_auto_scaling_groups",
                AutoScalingGroupNames=batch,
            ):
                out.extend(page.get("AutoScalingGroups", []))
        self.put("auto_scaling_groups", out)

    def _found_asg_names(self) -> list[str]:
        if "auto_scaling_groups" not in self.snapshot:
            raise _Skip("the Auto Scaling groups were not collected")
        return [g["AutoScalingGroupName"] for g in self.snapshot["auto_scaling_groups"]]

    def _collect_scaling_activities(self) -> None:
        out: list[dict[str, Any]] = []
        for name in self._found_asg_names():
            # The most recent activities only: the newest failure is what matters.
            resp = self.call(
                "autoscaling",
                "DescribeScalingActivities",
                "describe_scaling_activities",
                AutoScalingGroupName=name,
                MaxRecords=SCALING_ACTIVITY_RECORDS,
            )
            out.extend(resp.get("Activities", []))
        self.put("scaling_activities", out)

    def _collect_asg_policies(self) -> None:
        out: list[dict[str, Any]] = []
        for name in self._found_asg_names():
            for page in self.pages(
                "autoscaling", "DescribePolicies", "describe_policies", AutoScalingGroupName=name
            ):
                out.extend(page.get("ScalingPolicies", []))
        self.put("asg_policies", out)

    def warm_pool_asg_names(self) -> list[str]:
        """The groups whose warm pool and hooks are read: every group when the
        spec deploys a warm pool, else those DescribeAutoScalingGroups shows with one.

        Read only then, so that doctor of a stack without a warm pool needs none
        of WARM_POOL_PERMISSIONS.
        """
        if self.target.warm_pool is not None:
            return self._found_asg_names()
        return [
            g["AutoScalingGroupName"]
            for g in self.snapshot.get("auto_scaling_groups", [])
            if g.get("WarmPoolConfiguration")
        ]

    def _collect_warm_pools(self) -> None:
        names = self.warm_pool_asg_names()
        if not names:
            return  # nothing has or should have a warm pool: not asked for
        out: dict[str, Any] = {}
        for name in names:
            merged: dict[str, Any] = {"Instances": []}
            for page in self.pages(
                "autoscaling",
                "DescribeWarmPool",
                "describe_warm_pool",
                AutoScalingGroupName=name,
                PaginationConfig={"PageSize": WARM_POOL_RECORDS},
            ):
                # Pages continue Instances; the configuration is on each one.
                if "WarmPoolConfiguration" in page:
                    merged["WarmPoolConfiguration"] = page["WarmPoolConfiguration"]
                merged["Instances"].extend(page.get("Instances", []))
            out[name] = merged
        self.put("warm_pools", out)

    def _collect_lifecycle_hooks(self) -> None:
        names = self.warm_pool_asg_names()
        if not names:
            return
        out: list[dict[str, Any]] = []
        for name in names:
            # Every hook of the group, so a misnamed one shows as evidence.
            resp = self.call(
                "autoscaling",
                "DescribeLifecycleHooks",
                "describe_lifecycle_hooks",
                AutoScalingGroupName=name,
            )
            out.extend(resp.get("LifecycleHooks", []))
        self.put("lifecycle_hooks", out)

    def _collect_launch_template_versions(self) -> None:
        if "auto_scaling_groups" not in self.snapshot:
            raise _Skip("the Auto Scaling groups were not collected")
        wanted: dict[str, set[str]] = {}
        for g in self.snapshot["auto_scaling_groups"]:
            spec = g.get("LaunchTemplate") or (
                g.get("MixedInstancesPolicy", {})
                .get("LaunchTemplate", {})
                .get("LaunchTemplateSpecification")
            )
            if not spec or not spec.get("LaunchTemplateId"):
                continue
            versions = wanted.setdefault(spec["LaunchTemplateId"], {"$Latest", "$Default"})
            for inst in g.get("Instances", []):
                v = inst.get("LaunchTemplate", {}).get("Version")
                if v:
                    versions.add(str(v))
        out: list[dict[str, Any]] = []
        for lt_id, versions in wanted.items():
            resp = self.call(
                "ec2",
                "DescribeLaunchTemplateVersions",
                "describe_launch_template_versions",
                LaunchTemplateId=lt_id,
                Versions=sorted(versions),
            )
            seen: set[int] = set()
            for v in resp.get("LaunchTemplateVersions", []):
                # $Latest and $Default may name the same version twice.
                if v.get("VersionNumber") not in seen:
                    seen.add(v.get("VersionNumber"))
                    out.append(v)
        self.put("launch_template_versions", out)

    def instance_ids(self) -> list[str]:
        ids = [ci["ec2InstanceId"] for ci in self.snapshot.get("container_instances", [])]
        for g in self.snapshot.get("auto_scaling_groups", []):
            ids.extend(i["InstanceId"] for i in g.get("Instances", []))
        return list(dict.fromkeys(i for i in ids if i))

    def _collect_instances(self) -> None:
        # The warm pool's instances too (their LaunchTime tells doctor how long one
        # has waited on the launch hook), but not for the probe: a stopped instance
        # takes no command.
        pool_ids = [
            i["InstanceId"]
            for pool in self.snapshot.get("warm_pools", {}).values()
            for i in pool.get("Instances", [])
            if i.get("InstanceId")
        ]
        ids = list(dict.fromkeys([*self.instance_ids(), *pool_ids]))
        out: list[dict[str, Any]] = []
        for batch in chunks(ids, EC2_IDS_BATCH):
            for page in self.pages(
                "ec2", "DescribeInstances", "describe_instances", InstanceIds=batch
            ):
                for r in page.get("Reservations", []):
                    out.extend(r.get("Instances", []))
        self.put("instances", out)

    def _resource_id(self) -> str:
        return scalable_target_id(self.target.cluster, self.target.service)

    def _collect_scalable_targets(self) -> None:
        out: list[dict[str, Any]] = []
        for page in self.pages(
            "application-autoscaling",
            "DescribeScalableTargets",
            "describe_scalable_targets",
            ServiceNamespace="ecs",
            ResourceIds=[self._resource_id()],
        ):
            out.extend(page.get("ScalableTargets", []))
        self.put("scalable_targets", out)

    def _collect_scaling_policies(self) -> None:
        out: list[dict[str, Any]] = []
        for page in self.pages(
            "application-autoscaling",
            "DescribeScalingPolicies",
            "describe_scaling_policies",
            ServiceNamespace="ecs",
            ResourceId=self._resource_id(),
        ):
            out.extend(page.get("ScalingPolicies", []))
        self.put("scaling_policies", out)

    def _collect_service_scaling_activities(self) -> None:
        resp = self.call(
            "application-autoscaling",
            "DescribeScalingActivities",
            "describe_scaling_activities",
            ServiceNamespace="ecs",
            ResourceId=self._resource_id(),
            MaxResults=SCALING_ACTIVITY_RECORDS,
        )
        self.put("service_scaling_activities", resp.get("ScalingActivities", []))

    def _collect_scheduled_actions(self) -> None:
        out: list[dict[str, Any]] = []
        for page in self.pages(
            "application-autoscaling",
            "DescribeScheduledActions",
            "describe_scheduled_actions",
            ServiceNamespace="ecs",
            ResourceId=self._resource_id(),
        ):
            out.extend(page.get("ScheduledActions", []))
        self.put("scheduled_actions", out)

    def alarm_names(self) -> list[str]:
        """The missing-metric alarm, the Spot group's alarms and every alarm a scaling
        policy owns."""
        names: list[str] = []
        if self.target.missing_metric_alarm:
            names.append(self.target.missing_metric_alarm)
        sp = self.target.spot
        if sp is not None:
            names.extend(n for n in (sp.gpu_missing_alarm, sp.shortfall_alarm) if n)
        for key in ("scaling_policies", "asg_policies"):
            for p in self.snapshot.get(key, []):
                names.extend(a["AlarmName"] for a in p.get("Alarms", []) if a.get("AlarmName"))
        return list(dict.fromkeys(names))

    def _collect_alarms(self) -> None:
        names = self.alarm_names()
        self._collection()["alarm_names"] = names
        out: list[dict[str, Any]] = []
        for batch in chunks(names, ALARM_NAMES_BATCH):
            for page in self.pages(
                "cloudwatch",
                "DescribeAlarms",
                "describe_alarms",
                AlarmNames=batch,
                AlarmTypes=["MetricAlarm"],
            ):
                out.extend(page.get("MetricAlarms", []))
        self.put("alarms", out)

    def _collect_metric_data(self) -> None:
        names = [g["AutoScalingGroupName"] for g in self.snapshot.get("auto_scaling_groups", [])]
        # The spec's group first: with [capacity.spot] the GPU series is the
        # On-Demand group's (the policy and the alarm read that one).
        asg = self.target.asg if self.target.asg in names else (names[0] if names else None)
        asg = asg or self.target.asg
        if not asg:
            raise _Skip("no GPU Auto Scaling group is known, so there is no series to read")
        # Every signal's series (signals.SERIES): the contract's agent series,
        # and ECS's GPUReservation of the cluster: the divisor of the task-gpus
        # expression, so doctor can tell "the agent writes, but the tracked
        # signal is empty" from "nothing is written"; and the sidecars'
        # concurrency series. One call: whichever the service scales on.
        queries = signals.metric_data_queries(
            signals.SeriesAt(asg=asg, cluster=self.target.cluster, service=self.target.service)
        )
        start, end = self.now - METRIC_WINDOW, self.now
        self._collection()["metric_queries"] = queries
        self._collection()["metric_window"] = {"start": start.isoformat(), "end": end.isoformat()}
        results: dict[str, dict[str, Any]] = {}
        for page in self.pages(
            "cloudwatch",
            "GetMetricData",
            "get_metric_data",
            MetricDataQueries=queries,
            StartTime=start,
            EndTime=end,
            ScanBy="TimestampDescending",
        ):
            for r in page.get("MetricDataResults", []):
                # Pages continue a result's series; merge them by Id.
                cur = results.setdefault(r["Id"], {**r, "Timestamps": [], "Values": []})
                cur["Timestamps"].extend(r.get("Timestamps", []))
                cur["Values"].extend(r.get("Values", []))
                cur["StatusCode"] = r.get("StatusCode", cur.get("StatusCode"))
        self.put("metric_data", list(results.values()))

    def _collect_stacks(self) -> None:
        if not self.target.stack:
            raise _Skip("no stack name (run doctor with the spec to check the stack)")
        try:
            resp = self.call(
                "cloudformation", "DescribeStacks", "describe_stacks", StackName=self.target.stack
            )
        except bx.ClientError as e:
            # A stack that does not exist is a fact ("none"), not a failure.
            if error_code(e) == "ValidationError" and "does not exist" in str(e):
                self.put("stacks", [])
                return
            raise
        self.put("stacks", resp.get("Stacks", []))

    def _collect_host_probes(self) -> None:
        ids = self.instance_ids()
        out: dict[str, Any] = {}
        for batch in chunks(ids, SSM_TARGETS_BATCH):
            resp = self.call(
                "ssm",
                "SendCommand",
                "send_command",
                InstanceIds=batch,
                DocumentName="AWS-RunShellScript",
                Comment="ecs-gpu doctor read-only host probe",
                Parameters={"commands": probe_commands()},
                TimeoutSeconds=max(30, int(self.probe_timeout_s)),
            )
            command_id = resp["Command"]["CommandId"]
            out.update(self._wait_invocations(command_id, batch))
        self.put("host_probes", out)

    def _wait_invocations(self, command_id: str, instance_ids: Iterable[str]) -> dict[str, Any]:
        pending = list(instance_ids)
        done: dict[str, Any] = {}
        deadline = time.monotonic() + self.probe_timeout_s
        while pending:
            still: list[str] = []
            for iid in pending:
                try:
                    inv = self.call(
                        "ssm",
                        "GetCommandInvocation",
                        "get_command_invocation",
                        CommandId=command_id,
                        InstanceId=iid,
                    )
                except bx.ClientError as e:
                    # Right after SendCommand the invocation may not exist yet.
                    if error_code(e) == "InvocationDoesNotExist":
                        still.append(iid)
                        continue
                    raise
                if inv.get("Status") in _SSM_DONE:
                    done[iid] = inv
                else:
                    still.append(iid)
            pending = still
            if pending and time.monotonic() >= deadline:
                for iid in pending:
                    done[iid] = {"CommandId": command_id, "InstanceId": iid, "Status": "Pending"}
                break
            if pending:
                time.sleep(PROBE_POLL_S)
        return done


def collect(
    session: boto3.Session,
    target: Target,
    *,
    probe_hosts: bool = False,
    now: datetime | None = None,
    probe_timeout_s: float = PROBE_TIMEOUT_S,
) -> Snapshot:
    """Read one deployment into a snapshot (see the module docstring).

    Raises BadInputError (exit 2) when the cluster or service does not exist,
    AccessDenied / Unreachable (exit 3) when the cluster and service cannot be
    read at all. Any other denied call only leaves its kinds absent.
    """
    c = Collector(
        session,
        target,
        probe_hosts=probe_hosts,
        now=now or datetime.now(UTC),
        probe_timeout_s=probe_timeout_s,
    )
    return c.collect()


__all__ = [
    "COLLECTION_KEY",
    "KINDS",
    "PERMISSIONS",
    "PROBE_PERMISSIONS",
    "SNAPSHOT_VERSION",
    "WARM_POOL_PERMISSIONS",
    "AccessDenied",
    "AwsError",
    "Collector",
    "Snapshot",
    "Target",
    "Unreachable",
    "WarmPool",
    "chunks",
    "collect",
    "probe_commands",
]
