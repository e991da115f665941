"""The collector against moto in server mode (fixture ``aws``), through its real clients.

What moto lacks is supplied by botocore event hooks (tests/support/world.py
says exactly what and why): the GPU entries of registeredResources, EC2 Auto
Scaling activities (moto always answers []), Application Auto Scaling
DescribeScalingActivities (not in moto), SSM command output (moto runs
nothing) and the instances of a warm pool (moto puts none in one).
AccessDenied and throttling are injected at the HTTP layer (before-send), so
botocore's own retry and error parsing handle them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from ecs_gpu.aws import facts
from ecs_gpu.aws.clients import make_session
from ecs_gpu.aws.errors import AccessDenied
from ecs_gpu.checks import snapshot as snapshots
from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.design.paths import fast_path
from ecs_gpu.errors import BadInputError
from ecs_gpu.spec import parse_spec
from support import world
from support.snapshot_variants import concurrency_spec, warm_pool_spec
from support.snapshots import probe_output, validate_response, validate_snapshot

TARGET = facts.Target.from_names(world.NAMES)


def test_every_kind_has_its_collector_step() -> None:
    # A kind is a row of doctor/kinds.KIND_TABLE and a Collector._collect_<kind> method.
    for kind in snapshots.KINDS:
        assert callable(getattr(facts.Collector, f"_collect_{kind}", None)), kind


def test_target_is_the_snapshot_target_model() -> None:
    # One model: what the collector writes is what the snapshot validator reads.
    target = facts.Target.from_spec(warm_pool_spec(), world.NAMES)
    assert isinstance(target, snapshots.TargetNames)
    assert isinstance(target.warm_pool, snapshots.WarmPoolTarget)
    assert snapshots.TargetNames.model_validate(target.as_dict()).as_dict() == target.as_dict()
    assert list(target.as_dict()) == list(snapshots.TargetNames.model_fields)
    assert world.NAMES.scalable_target_resource_id == facts.scalable_target_id(
        world.NAMES.cluster, world.NAMES.service
    )


WARM_POOL_KINDS = ("warm_pools", "lifecycle_hooks")
# A group without a warm pool: its kinds are not asked for (nor their permissions).
ALL_BUT_PROBES = [k for k in facts.KINDS if k != "host_probes" and k not in WARM_POOL_KINDS]


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


def _http(status: int, body: str, content_type: str) -> AWSResponse:
    headers = {"Content-Type": content_type}
    return AWSResponse("http://127.0.0.1/injected", status, headers, _Raw(body.encode()))


@pytest.fixture
def session(aws: str) -> boto3.Session:
    s = make_session(None, "us-east-1")
    world.install_moto_gaps(s)
    return s


@pytest.fixture(autouse=True)
def _no_recorded_activities() -> Iterator[None]:
    world.ASG_ACTIVITIES.clear()
    world.SERVICE_ACTIVITIES.clear()
    world.WARM_POOL_INSTANCES.clear()
    yield
    world.ASG_ACTIVITIES.clear()
    world.SERVICE_ACTIVITIES.clear()
    world.WARM_POOL_INSTANCES.clear()


def test_collects_every_kind_in_real_shapes(session: boto3.Session) -> None:
    world.build_world(session, instances=2, tasks=1)
    counter = world.CallCounter()
    counter.install(session)
    snap = facts.collect(session, TARGET)
    # The documented permission list is exactly the set of calls made.
    assert set(counter.calls) == set(facts.PERMISSIONS)
    assert [k for k in facts.KINDS if k in snap] == ALL_BUT_PROBES
    meta = snap[facts.COLLECTION_KEY]
    assert meta["denied"] == [] and meta["errors"] == []
    assert meta["target"]["asg"] == world.NAMES.asg
    # Every field moto and the hooks returned exists in the model with its type.
    validate_snapshot(snap, required=False)
    assert len(snap["container_instances"]) == 2
    assert all(
        any(r["name"] == "GPU" for r in ci["registeredResources"])
        for ci in snap["container_instances"]
    )
    assert len(snap["tasks"]) == 1
    assert snap["auto_scaling_groups"][0]["AutoScalingGroupName"] == world.NAMES.asg
    assert {a["AlarmName"] for a in snap["alarms"]} >= {world.NAMES.gpu_metric_missing_alarm}
    # The contract's three series and the task-gpus divisor, then the concurrency
    # series, which this GPU-signal world's tasks have no sidecar to write.
    concurrency = demand_metric.metric_data_queries(world.NAMES.cluster, world.NAMES.service)
    assert [r["Label"] for r in snap["metric_data"]] == [
        *gpu_metric.METRIC_NAMES,
        gpu_metric.RESERVATION_METRIC,
        *(q["Label"] for q in concurrency),
    ]
    assert all(r["Values"] for r in snap["metric_data"][: -len(concurrency)])
    assert not any(r["Values"] for r in snap["metric_data"][-len(concurrency) :])
    assert snap["stacks"] == []  # no stack of that name: collected, and none
    report = run_checks(snap)
    assert not report.has_error, [f.as_dict() for f in report.findings]
    # Everything except the host probe was decided.
    assert {r.check.id for r in report.unknown} == {
        c.check.id for c in report.results if c.check.id.startswith("HOST")
    }


def test_missing_metric_is_found_end_to_end(session: boto3.Session) -> None:
    world.build_world(session, instances=1, tasks=0, metric=False)
    snap = facts.collect(session, TARGET)
    assert snap["metric_data"] and not any(r["Values"] for r in snap["metric_data"])
    assert "MET001" in {f.id for f in run_checks(snap).findings}


def test_tracked_signal_without_reservation_is_found_end_to_end(session: boto3.Session) -> None:
    # The agent writes its series, but no GPUReservation reaches the cluster.
    world.build_world(session, instances=1, tasks=1, reservation=False)
    snap = facts.collect(session, TARGET)
    by_label = {r["Label"]: r for r in snap["metric_data"]}
    assert by_label[gpu_metric.UTILIZATION]["Values"]
    assert by_label[gpu_metric.RESERVATION_METRIC]["Values"] == []
    # The reservation was asked for the target cluster, by ClusterName only.
    (query,) = [
        q
        for q in snap[facts.COLLECTION_KEY]["metric_queries"]
        if q["Id"] == gpu_metric.RESERVATION_ID
    ]
    assert query["MetricStat"]["Metric"] == {
        "Namespace": gpu_metric.RESERVATION_NAMESPACE,
        "MetricName": gpu_metric.RESERVATION_METRIC,
        "Dimensions": [{"Name": "ClusterName", "Value": world.NAMES.cluster}],
    }
    ids = [f.id for f in run_checks(snap).findings]
    assert "MET004" in ids and "MET001" not in ids


def test_recorded_stockout_activity_fires_asg001(session: boto3.Session) -> None:
    world.build_world(session)
    activity = {
        "ActivityId": "5e3b1c2d-aaaa-4bbb-8ccc-0d1e2f3a4b5c",
        "AutoScalingGroupName": world.NAMES.asg,
        "Description": "Launching a new EC2 instance.  Status Reason: We currently do not have "
        "sufficient g5.xlarge capacity in the Availability Zone you requested (us-east-1a).",
        "Cause": "At 2026-11-29T17:00:10Z an instance was started in response to a difference "
        "between desired and actual capacity, increasing the capacity from 1 to 2.",
        "StartTime": "2026-11-29T17:00:10+00:00",
        "StatusCode": "Failed",
        "StatusMessage": "We currently do not have sufficient g5.xlarge capacity in the "
        "Availability Zone you requested (us-east-1a). (Error Code: InsufficientInstanceCapacity)",
        "Progress": 100,
    }
    validate_response("autoscaling", "DescribeScalingActivities", {"Activities": [activity]})
    world.ASG_ACTIVITIES.append(activity)
    snap = facts.collect(session, TARGET)
    assert snap["scaling_activities"][0]["StatusCode"] == "Failed"
    assert "ASG001" in {f.id for f in run_checks(snap).findings}


def _denied_only(snap: dict[str, Any], service: str, operation: str, code: str, kind: str) -> None:
    """The collection's one denied call: ``service``'s ``operation`` (its IAM action of the
    same name) answered ``code``, leaving the snapshot kind ``kind`` uncollected."""
    assert snap[facts.COLLECTION_KEY]["denied"] == [
        {
            "call": f"{service} {operation}",
            "permission": f"{service}:{operation}",
            "code": code,
            "kinds": [kind],
        }
    ]


def test_access_denied_on_one_api_leaves_only_its_checks_unknown(session: boto3.Session) -> None:
    world.build_world(session)
    denied = (
        '<ErrorResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><Error>'
        "<Type>Sender</Type><Code>AccessDenied</Code><Message>User: "
        "arn:aws:iam::123456789012:user/oncall is not authorized to perform: "
        "autoscaling:DescribePolicies</Message></Error><RequestId>1d2c</RequestId></ErrorResponse>"
    )

    def deny(**_: Any) -> AWSResponse:
        return _http(403, denied, "text/xml")

    session.events.register("before-send.auto-scaling.DescribePolicies", deny)
    snap = facts.collect(session, TARGET)
    assert "asg_policies" not in snap
    _denied_only(snap, "autoscaling", "DescribePolicies", "AccessDenied", "asg_policies")
    report = run_checks(snap)
    status = {r.check.id: r for r in report.results}
    assert status["SCL006"].status == "unknown"
    assert "autoscaling:DescribePolicies" in status["SCL006"].reason
    assert status["ECS003"].status == "ok" and status["MET001"].status == "ok"
    assert report.as_dict()["missing_permissions"][0]["permission"] == (
        "autoscaling:DescribePolicies"
    )


def test_denied_core_call_is_access_denied(session: boto3.Session) -> None:
    world.build_world(session)
    body = json.dumps({"__type": "AccessDeniedException", "message": "not authorized"})
    session.events.register(
        "before-send.ecs.DescribeClusters",
        lambda **_: _http(400, body, "application/x-amz-json-1.1"),
    )
    with pytest.raises(AccessDenied) as e:
        facts.collect(session, TARGET)
    assert e.value.permission == "ecs:DescribeClusters"
    assert e.value.exit_code == 3


def test_throttled_api_is_retried_not_reported(session: boto3.Session) -> None:
    world.build_world(session)
    counter = world.CallCounter()
    counter.install(session)
    throttled = json.dumps({"__type": "ThrottlingException", "message": "Rate exceeded"})
    remaining = [2]

    def throttle(**_: Any) -> AWSResponse | None:
        if remaining[0] > 0:
            remaining[0] -= 1
            return _http(400, throttled, "application/x-amz-json-1.1")
        return None

    session.events.register("before-send.ecs.ListContainerInstances", throttle)
    snap = facts.collect(session, TARGET)
    assert counter.calls["ecs:ListContainerInstances"] == 1
    assert counter.attempts["ecs:ListContainerInstances"] == 3  # 2 throttled + 1 answered
    assert len(snap["container_instances"]) == 1
    assert snap[facts.COLLECTION_KEY]["errors"] == []
    assert snap[facts.COLLECTION_KEY]["denied"] == []


def test_unknown_cluster_and_service_are_bad_input(session: boto3.Session) -> None:
    world.build_world(session)
    with pytest.raises(BadInputError, match="cluster 'nope' not found"):
        facts.collect(session, facts.Target.from_cluster_service("nope", "x"))
    with pytest.raises(BadInputError, match="service 'nope' not found"):
        facts.collect(session, facts.Target.from_cluster_service(world.NAMES.cluster, "nope"))


def test_cluster_and_service_alone_find_the_asg(session: boto3.Session) -> None:
    world.build_world(session)
    snap = facts.collect(
        session, facts.Target.from_cluster_service(world.NAMES.cluster, world.NAMES.service)
    )
    # Found through the capacity provider's autoScalingGroupArn, not by a name guess.
    assert [g["AutoScalingGroupName"] for g in snap["auto_scaling_groups"]] == [world.NAMES.asg]
    assert "stacks" not in snap
    assert any("stack" in e["message"] for e in snap[facts.COLLECTION_KEY]["errors"])


def test_large_cluster_is_collected_in_batches_of_100(session: boto3.Session) -> None:
    # Past two batch boundaries with a part-filled last batch: the call counts
    # prove the batching; 1,000 instances is docs/benchmarks.md "Doctor".
    n_instances, n_tasks = 250, 150
    world.build_world(session, instances=n_instances, tasks=n_tasks)
    counter = world.CallCounter()
    counter.install(session)
    snap = facts.collect(session, TARGET)
    assert len(snap["container_instances"]) == n_instances
    assert len(snap["tasks"]) == n_tasks
    assert counter.calls["ecs:DescribeContainerInstances"] == math.ceil(n_instances / 100)
    assert counter.calls["ecs:DescribeTasks"] == math.ceil(n_tasks / 100)
    assert counter.calls["ec2:DescribeInstances"] == math.ceil(n_instances / 100)
    # Everything else is a constant number of calls, independent of n.
    per_item = sum(
        counter.calls[k]
        for k in ("ecs:DescribeContainerInstances", "ecs:DescribeTasks", "ec2:DescribeInstances")
    )
    assert counter.total - per_item <= 20, counter.calls


def test_host_probe_through_ssm(session: boto3.Session) -> None:
    ids = world.build_world(session)["instance_ids"]
    sent: list[dict[str, Any]] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        sent.append(params)

    def output(parsed: dict[str, Any], **_: Any) -> None:
        # moto runs nothing on an instance: supply what the probe prints on a
        # healthy GPU host, as SSM returns it.
        parsed["StandardOutputContent"] = probe_output()
        parsed["Status"] = parsed["StatusDetails"] = "Success"

    session.events.register("before-parameter-build.ssm.SendCommand", capture)
    session.events.register("after-call.ssm.GetCommandInvocation", output)
    counter = world.CallCounter()
    counter.install(session)
    snap = facts.collect(session, TARGET, probe_hosts=True)
    assert set(counter.calls) == set(facts.PERMISSIONS) | set(facts.PROBE_PERMISSIONS)
    assert sent and sent[0]["DocumentName"] == "AWS-RunShellScript"
    assert sent[0]["Parameters"]["commands"] == facts.probe_commands()
    assert sorted(snap["host_probes"]) == sorted(ids)
    validate_snapshot({"host_probes": snap["host_probes"]}, required=False)
    report = run_checks(snap)
    host_results = [r for r in report.results if r.check.id.startswith("HOST")]
    assert {r.status for r in host_results} == {"ok"}, [
        (r.check.id, r.reason, [f.fix for f in r.findings]) for r in host_results
    ]


def test_snapshot_round_trip_gives_the_same_report(session: boto3.Session, tmp_path: Path) -> None:
    world.build_world(session, instances=2, tasks=1)
    snap = facts.collect(session, TARGET)
    path = tmp_path / "snap.json"
    path.write_text(snapshots.dumps(snap), encoding="utf-8")
    loaded = snapshots.load(path)  # what the collector writes passes the typed format
    assert loaded == snap
    assert run_checks(loaded).as_dict() == run_checks(snap).as_dict()


def _scale_on_concurrency(session: boto3.Session, *, publish: bool) -> None:
    """The world's service also tracks the sidecars' series, which moto may hold."""
    session.client("application-autoscaling").put_scaling_policy(
        PolicyName="concurrency",
        ServiceNamespace="ecs",
        ResourceId=world.NAMES.scalable_target_resource_id,
        ScalableDimension="ecs:service:DesiredCount",
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": 8.0,
            "CustomizedMetricSpecification": {
                "MetricName": demand_metric.METRIC_NAME,
                "Namespace": demand_metric.NAMESPACE,
                "Dimensions": demand_metric.dimensions(world.NAMES.cluster, world.NAMES.service),
                "Statistic": demand_metric.STATISTIC,
            },
        },
    )
    if publish:
        now = datetime.now(UTC)
        session.client("cloudwatch").put_metric_data(
            Namespace=demand_metric.NAMESPACE,
            MetricData=[
                {
                    "MetricName": demand_metric.METRIC_NAME,
                    "Dimensions": demand_metric.dimensions(
                        world.NAMES.cluster, world.NAMES.service
                    ),
                    "Timestamp": now - timedelta(seconds=demand_metric.PUBLISH_INTERVAL_S * k),
                    "Value": 6.0,
                    "Unit": demand_metric.UNIT,
                    "StorageResolution": demand_metric.STORAGE_RESOLUTION,
                }
                for k in range(1, 7)
            ],
        )


@pytest.mark.parametrize("publish", [True, False], ids=["published", "silent"])
def test_concurrency_series_is_read_end_to_end(session: boto3.Session, publish: bool) -> None:
    world.build_world(session, instances=1, tasks=1)
    _scale_on_concurrency(session, publish=publish)
    snap = facts.collect(session, facts.Target.from_names(world.NAMES, signal="concurrency"))
    validate_snapshot(snap, required=False)
    snapshots.validate(snap, "collected")
    assert snap[facts.COLLECTION_KEY]["target"]["signal"] == "concurrency"
    c0 = next(r for r in snap["metric_data"] if r["Id"] == "c0")
    assert bool(c0["Values"]) is publish
    findings = {f.id: f for f in run_checks(snap).findings}
    assert ("MET005" in findings) is (not publish)
    # The world's task definition has no demand-metric sidecar.
    assert "TD001" in findings
    assert findings["TD001"].evidence[0].value == [world.NAMES.service]


def test_target_from_spec_records_what_the_scaling_checks_compare_with() -> None:
    # SCL001/SCL005/MET001 read these back; the threshold is fast_path's, not re-derived.
    spec = concurrency_spec()
    fp = fast_path.fast_path(spec)
    assert fp is not None
    target = facts.Target.from_spec(spec, world.NAMES).as_dict()
    assert (target["signal"], target["gpu_guard"], target["fast_path_threshold"]) == (
        "concurrency",
        False,
        fp.threshold,
    )
    off = parse_spec(
        world.SPEC_TOML.replace(
            'signal = "task-gpus"',
            'signal = "concurrency"\ntarget_concurrency_per_task = 8\nfast_scale_out = false'
            "\ngpu_guard = true",
        )
        + '\n[service.metrics]\npreset = "vllm"\n'
    )
    target = facts.Target.from_spec(off, world.NAMES).as_dict()
    assert (target["gpu_guard"], target["fast_path_threshold"]) == (True, None)
    gpu = facts.Target.from_spec(parse_spec(world.SPEC_TOML), world.NAMES).as_dict()
    assert (gpu["signal"], gpu["gpu_guard"], gpu["fast_path_threshold"]) == (
        "task-gpus",
        False,
        None,
    )
    # The snapshot format takes them (strict types).
    meta: dict[str, Any] = {
        "version": 1,
        "tool": "t",
        "collected_at": "2026-11-29T17:00:00+00:00",
        "target": facts.Target.from_spec(spec, world.NAMES).as_dict(),
    }
    snapshots.validate({facts.COLLECTION_KEY: meta}, "snap.json")
    meta["target"]["gpu_guard"] = "yes"
    with pytest.raises(BadInputError, match=r"_collection\.target\.gpu_guard"):
        snapshots.validate({facts.COLLECTION_KEY: meta}, "snap.json")


# --- the warm pool ([capacity.warm_pool]) --------------------------------------------------

WARM_TARGET = facts.Target.from_spec(warm_pool_spec(), world.NAMES)


def _statuses(snap: dict[str, Any]) -> dict[str, Any]:
    return {r.check.id: r for r in run_checks(snap).results}


def test_warm_pool_is_collected_with_its_hooks_and_checks_pass(session: boto3.Session) -> None:
    world.build_world(session, instances=1, tasks=1)
    world.add_warm_pool(session, warm_pool_spec())
    counter = world.CallCounter()
    counter.install(session)
    snap = facts.collect(session, WARM_TARGET)
    # The warm pool's two calls, and only with a warm pool.
    assert set(counter.calls) == set(facts.PERMISSIONS) | set(facts.WARM_POOL_PERMISSIONS)
    assert counter.calls["autoscaling:DescribeWarmPool"] == 1
    assert [k for k in facts.KINDS if k in snap] == [k for k in facts.KINDS if k != "host_probes"]
    validate_snapshot(snap, required=False)
    snapshots.validate(snap, "collected")
    want = snap[facts.COLLECTION_KEY]["target"]["warm_pool"]
    assert want == {
        "min_size": 1,
        # Unset in the spec: the default the template deploys, min_size.
        "max_prepared": 1,
        "pool_state": "Stopped",
        "hook_name": f"{world.NAMES.asg}-launch",
        "hook_timeout_s": 2015,
    }
    assert snap["warm_pools"][world.NAMES.asg]["WarmPoolConfiguration"]["MinSize"] == 1
    assert [h["LifecycleHookName"] for h in snap["lifecycle_hooks"]] == [want["hook_name"]]
    status = _statuses(snap)
    assert {status[i].status for i in ("ASG005", "ASG006", "ASG007")} == {"ok"}


def _put(session: boto3.Session, **changes: Any) -> None:
    """Change the deployed pool or hook the way a hand edit (or an old deploy) would."""
    asg = session.client("autoscaling")
    if "min_size" in changes:
        asg.put_warm_pool(
            AutoScalingGroupName=world.NAMES.asg, MinSize=changes["min_size"], PoolState="Stopped"
        )
    if "heartbeat" in changes:
        asg.put_lifecycle_hook(
            AutoScalingGroupName=world.NAMES.asg,
            LifecycleHookName=f"{world.NAMES.asg}-launch",
            LifecycleTransition="autoscaling:EC2_INSTANCE_LAUNCHING",
            HeartbeatTimeout=changes["heartbeat"],
            DefaultResult="CONTINUE",
        )


@pytest.mark.parametrize(
    ("deploy", "change", "check_id", "severity", "field"),
    [
        ({"pool": False}, {}, "ASG005", "error", "WarmPoolConfiguration"),
        ({}, {"min_size": 0}, "ASG005", "warning", "WarmPoolConfiguration.MinSize"),
        ({"hook": False}, {}, "ASG006", "error", "LifecycleHookName"),
        ({}, {"heartbeat": 600}, "ASG006", "warning", "HeartbeatTimeout"),
    ],
    ids=["no-pool", "min-size", "no-hook", "heartbeat"],
)
def test_warm_pool_off_the_spec_is_found_end_to_end(
    session: boto3.Session,
    deploy: dict[str, bool],
    change: dict[str, int],
    check_id: str,
    severity: str,
    field: str,
) -> None:
    world.build_world(session)
    world.add_warm_pool(session, warm_pool_spec(), **deploy)
    _put(session, **change)
    snap = facts.collect(session, WARM_TARGET)
    # With the spec's pool the group's pool and hooks are read even when it has none.
    assert set(WARM_POOL_KINDS) <= set(snap)
    validate_snapshot(snap, required=False)
    findings = [f for f in run_checks(snap).findings if f.id.startswith("ASG00")]
    assert [(f.id, f.severity) for f in findings] == [(check_id, severity)]
    assert any(field in e.field for e in findings[0].evidence), findings[0].evidence


def test_instance_waiting_past_the_heartbeat_is_found_end_to_end(
    session: boto3.Session,
) -> None:
    world.build_world(session)
    world.add_warm_pool(session, warm_pool_spec())
    ec2 = session.client("ec2")
    (warming,) = ec2.run_instances(
        ImageId="ami-12c6146b", InstanceType="g5.xlarge", MinCount=1, MaxCount=1
    )["Instances"]
    iid = warming["InstanceId"]
    # What DescribeWarmPool returns for an instance warming in the pool (moto returns none).
    item = {
        "InstanceId": iid,
        "InstanceType": "g5.xlarge",
        "AvailabilityZone": "us-east-1a",
        "LifecycleState": "Warmed:Pending:Wait",
        "HealthStatus": "Healthy",
        "ProtectedFromScaleIn": True,
    }
    validate_response(
        "autoscaling", "DescribeWarmPool", {"WarmPoolConfiguration": {}, "Instances": [item]}
    )
    world.WARM_POOL_INSTANCES.append(item)
    heartbeat = WARM_TARGET.warm_pool.hook_timeout_s if WARM_TARGET.warm_pool else 0
    launched = warming["LaunchTime"]
    # Within the heartbeat the unit may still be pulling: nothing to say.
    soon = facts.collect(session, WARM_TARGET, now=launched + timedelta(seconds=heartbeat - 60))
    assert [i["InstanceId"] for i in soon["warm_pools"][world.NAMES.asg]["Instances"]] == [iid]
    # The pool's instances are read for their LaunchTime, and not probed.
    assert iid in {i["InstanceId"] for i in soon["instances"]}
    assert _statuses(soon)["ASG007"].status == "ok"
    late = facts.collect(session, WARM_TARGET, now=launched + timedelta(seconds=heartbeat + 600))
    (f,) = [f for f in run_checks(late).findings if f.id == "ASG007"]
    assert f.severity == "warning" and iid in f.fix
    assert f"{world.NAMES.host_log_group}" in f.fix


def test_warm_pool_pages_are_merged(session: boto3.Session) -> None:
    world.build_world(session)
    world.add_warm_pool(session, warm_pool_spec())
    sent: list[dict[str, Any]] = []
    config = {"MinSize": 1, "PoolState": "Stopped"}

    def instance(n: int) -> dict[str, Any]:
        return {
            "InstanceId": f"i-0{n:016x}",
            "AvailabilityZone": "us-east-1a",
            "LifecycleState": "Warmed:Stopped",
            "HealthStatus": "Healthy",
            "ProtectedFromScaleIn": True,
        }

    pages = [
        {"WarmPoolConfiguration": config, "Instances": [instance(1)], "NextToken": "t1"},
        {"WarmPoolConfiguration": config, "Instances": [instance(2)]},
    ]
    for page in pages:
        validate_response("autoscaling", "DescribeWarmPool", page)

    def capture(params: dict[str, Any], **_: Any) -> None:
        sent.append(dict(params))

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        # moto ignores MaxRecords and NextToken: answer as a paging AWS would.
        return _http(200, "", "text/xml"), pages[len(sent) - 1]

    session.events.register("before-parameter-build.auto-scaling.DescribeWarmPool", capture)
    session.events.register("before-call.auto-scaling.DescribeWarmPool", answer)
    snap = facts.collect(session, WARM_TARGET)
    assert [p.get("MaxRecords") for p in sent] == [facts.WARM_POOL_RECORDS] * 2
    assert [p.get("NextToken") for p in sent] == [None, "t1"]
    assert snap["warm_pools"] == {
        world.NAMES.asg: {"WarmPoolConfiguration": config, "Instances": [instance(1), instance(2)]}
    }


def test_without_a_spec_a_group_with_a_pool_is_read(session: boto3.Session) -> None:
    world.build_world(session)
    target = facts.Target.from_cluster_service(world.NAMES.cluster, world.NAMES.service)
    assert WARM_POOL_KINDS[0] not in facts.collect(session, target)
    world.add_warm_pool(session, warm_pool_spec(), hook=False)
    snap = facts.collect(session, target)
    assert set(WARM_POOL_KINDS) <= set(snap)
    assert snap[facts.COLLECTION_KEY]["target"]["warm_pool"] is None
    # Nothing of the spec to compare with, but a warm pool needs a launch hook.
    findings = [f for f in run_checks(snap).findings if f.id.startswith("ASG00")]
    assert [(f.id, f.severity) for f in findings] == [("ASG006", "error")]
    assert "launch lifecycle hook (" in findings[0].fix


def test_denied_warm_pool_leaves_only_its_check_unknown(session: boto3.Session) -> None:
    world.build_world(session)
    world.add_warm_pool(session, warm_pool_spec())
    denied = (
        '<ErrorResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><Error>'
        "<Type>Sender</Type><Code>AccessDenied</Code><Message>User: "
        "arn:aws:iam::123456789012:user/oncall is not authorized to perform: "
        "autoscaling:DescribeWarmPool</Message></Error><RequestId>1d2c</RequestId></ErrorResponse>"
    )
    session.events.register(
        "before-send.auto-scaling.DescribeWarmPool", lambda **_: _http(403, denied, "text/xml")
    )
    snap = facts.collect(session, WARM_TARGET)
    assert "warm_pools" not in snap and "lifecycle_hooks" in snap
    _denied_only(snap, "autoscaling", "DescribeWarmPool", "AccessDenied", "warm_pools")
    status = _statuses(snap)
    assert status["ASG007"].status == "unknown"
    assert "autoscaling:DescribeWarmPool" in status["ASG007"].reason
    # The pool's configuration comes with the group, the hook on its own.
    assert status["ASG005"].status == status["ASG006"].status == "ok"


# --- scheduled actions ([[scaling.schedule]]: SCL008, SCL009) ----------------------------------

SCHEDULE_TOML = """
[[scaling.schedule]]
cron = "0 20 ? * MON-FRI *"
min_tasks = 0
max_tasks = 0

[[scaling.schedule]]
cron = "0 8 ? * MON-FRI *"
min_tasks = 1
max_tasks = 4
"""


def _put_schedule(session: boto3.Session, day_max: int = 4) -> None:
    """The scheduled actions the template writes (moto's CloudFormation skips the
    scalable target and its ScheduledActions): moto keeps and lists them."""
    aas = session.client("application-autoscaling")
    for name, cron, lo, hi in (
        ("vllm-g5-Schedule0", "cron(0 20 ? * MON-FRI *)", 0, 0),
        ("vllm-g5-Schedule1", "cron(0 8 ? * MON-FRI *)", 1, day_max),
    ):
        aas.put_scheduled_action(
            ServiceNamespace="ecs",
            ScheduledActionName=name,
            ResourceId=world.NAMES.scalable_target_resource_id,
            ScalableDimension="ecs:service:DesiredCount",
            Schedule=cron,
            ScalableTargetAction={"MinCapacity": lo, "MaxCapacity": hi},
        )


def _schedule_target() -> facts.Target:
    spec = parse_spec(world.SPEC_TOML + SCHEDULE_TOML, "schedule.toml")
    return facts.Target.from_spec(spec, world.NAMES)


def test_scheduled_actions_are_collected_and_checked_end_to_end(session: boto3.Session) -> None:
    world.build_world(session, instances=1, tasks=1)
    _put_schedule(session)
    counter = world.CallCounter()
    counter.install(session)
    snap = facts.collect(session, _schedule_target())
    # One paginated call (moto answers one page: it ignores MaxResults and NextToken).
    assert counter.calls["application-autoscaling:DescribeScheduledActions"] == 1
    acts = snap["scheduled_actions"]
    assert sorted(a["Schedule"] for a in acts) == [
        "cron(0 20 ? * MON-FRI *)",
        "cron(0 8 ? * MON-FRI *)",
    ]
    # moto writes null for the unset StartTime, EndTime and Timezone, which AWS omits;
    # without them every item is in botocore's output shape.
    validate_snapshot(
        {"scheduled_actions": [{k: v for k, v in a.items() if v is not None} for a in acts]},
        required=False,
    )
    status = _statuses(snap)
    assert status["SCL009"].status == "ok"
    # At MinCapacity 0 without a load balancer the workday action wakes it.
    session.client("application-autoscaling").register_scalable_target(
        ServiceNamespace="ecs",
        ResourceId=world.NAMES.scalable_target_resource_id,
        ScalableDimension="ecs:service:DesiredCount",
        MinCapacity=0,
        MaxCapacity=4,
    )
    snap = facts.collect(session, _schedule_target())
    assert _statuses(snap)["SCL008"].status == "ok"
    # An older deployment: the workday maximum 2, and no action that raises the minimum.
    _put_schedule(session, day_max=2)
    status = _statuses(facts.collect(session, _schedule_target()))
    (f,) = status["SCL009"].findings
    assert "MaxCapacity 2 (want 4)" in f.fix
    session.client("application-autoscaling").delete_scheduled_action(
        ServiceNamespace="ecs",
        ScheduledActionName="vllm-g5-Schedule1",
        ResourceId=world.NAMES.scalable_target_resource_id,
        ScalableDimension="ecs:service:DesiredCount",
    )
    status = _statuses(facts.collect(session, _schedule_target()))
    assert status["SCL008"].status == "finding"
    assert "no scheduled action that can still run" in status["SCL008"].findings[0].fix
    assert status["SCL009"].findings[0].title == "A schedule entry is not deployed"


def test_denied_scheduled_actions_leave_only_their_checks_unknown(session: boto3.Session) -> None:
    world.build_world(session)
    body = json.dumps(
        {
            "__type": "AccessDeniedException",
            "message": "User: arn:aws:iam::123456789012:user/oncall is not authorized to "
            "perform: application-autoscaling:DescribeScheduledActions",
        }
    )

    def deny(**_: Any) -> AWSResponse:
        return _http(400, body, "application/x-amz-json-1.1")

    session.events.register("before-send.application-auto-scaling.DescribeScheduledActions", deny)
    snap = facts.collect(session, _schedule_target())
    assert "scheduled_actions" not in snap
    _denied_only(
        snap,
        "application-autoscaling",
        "DescribeScheduledActions",
        "AccessDeniedException",
        "scheduled_actions",
    )
    status = _statuses(snap)
    assert status["SCL009"].status == "unknown"
    assert "application-autoscaling:DescribeScheduledActions" in status["SCL009"].reason
    # A kept service (MinCapacity 1) needs no scheduled action to wake.
    assert status["SCL008"].status == "ok" and status["SCL004"].status == "ok"
