"""The collector against moto in server mode (fixture ``aws``), through its real clients.

What moto lacks is supplied by botocore event hooks (tests/doctor/world.py
says exactly what and why): the GPU entries of registeredResources, EC2 Auto
Scaling activities (moto always answers []), Application Auto Scaling
DescribeScalingActivities (not in moto), and SSM command output (moto runs
nothing). AccessDenied and throttling are injected at the HTTP layer
(before-send), so botocore's own retry and error parsing handle them.
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

from ecs_gpu import demand_metric, fast_path, gpu_metric
from ecs_gpu.aws import facts
from ecs_gpu.aws.clients import make_session
from ecs_gpu.aws.errors import AccessDenied
from ecs_gpu.doctor import snapshot as snapshots
from ecs_gpu.doctor.checks import run_checks
from ecs_gpu.errors import BadInputError
from ecs_gpu.spec import parse_spec

from . import world
from .snapshots import concurrency_spec, probe_output, validate_response, validate_snapshot

TARGET = facts.Target.from_names(world.NAMES)
ALL_BUT_PROBES = [k for k in facts.KINDS if k != "host_probes"]


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
    yield
    world.ASG_ACTIVITIES.clear()
    world.SERVICE_ACTIVITIES.clear()


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
    assert snap[facts.COLLECTION_KEY]["denied"] == [
        {
            "call": "autoscaling DescribePolicies",
            "permission": "autoscaling:DescribePolicies",
            "code": "AccessDenied",
            "kinds": ["asg_policies"],
        }
    ]
    report = run_checks(snap)
    status = {r.check.id: r for r in report.results}
    assert status["ASG003"].status == "unknown"
    assert "autoscaling:DescribePolicies" in status["ASG003"].reason
    assert status["GPU001"].status == "ok" and status["MET001"].status == "ok"
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
    n_instances, n_tasks = 1000, 300
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
