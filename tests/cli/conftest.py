"""Fixtures for the operate tests: clients on moto, a deployable template, no-sleep waits."""

from __future__ import annotations

import copy
import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from ecs_gpu.aws.deploy import Waits
from ecs_gpu.contracts.naming import Names
from support.doctor_fixtures import (  # noqa: F401 (doctor's fixtures, for test_doctor.py)
    fixes_quote_runnable_commands,
    healthy,
)
from support.examples import templates  # noqa: F401 (the examples validated once, for test_define.py)
from support.moto_cfn import for_moto, moto_skips  # noqa: F401 (re-exported to the tests here)

NAMES = Names("vllm-g5")


def no_sleep(_: float) -> None:
    """Moto answers synchronously, so polling needs no real sleep."""


NO_WAIT = Waits(poll_s=0.0, change_set_timeout_s=5.0, sleep=no_sleep)

# How long a test waits for the publisher thread to catch up with a tick
# before it fails: a hang guard on a slow or busy machine, not a measurement.
SETTLE_S = 60.0


class Lockstep:
    """Paces a verify Publisher by a test's fake clock (verify_scaling.Pace).

    The publisher puts one datapoint when it starts and one per :meth:`tick`,
    so how many datapoints reach moto is the number of ticks, whatever the
    machine's speed (a real-time interval let a fast machine put tens of
    thousands, and moto's ListMetrics then timed out).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ticks = 0
        self._waits = 0
        self._woken = False

    def wait(self, stop: threading.Event, interval_s: float) -> None:
        with self._cond:
            self._waits += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._woken or self._ticks >= self._waits, SETTLE_S)

    def wake(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def tick(self) -> None:
        """Let the next datapoint go, and return once it has been put."""
        with self._cond:
            self._ticks += 1
            self._cond.notify_all()
            settled = self._cond.wait_for(
                lambda: self._woken or self._waits > self._ticks, SETTLE_S
            )
        assert settled, f"the publisher did not put its datapoint within {SETTLE_S:.0f} s"

    def started(self) -> None:
        """Return once the publisher has put its first datapoint (or stopped)."""
        with self._cond:
            settled = self._cond.wait_for(lambda: self._woken or self._waits > 0, SETTLE_S)
        assert settled, f"the publisher did not start within {SETTLE_S:.0f} s"


def _hand_template() -> dict[str, Any]:
    """A small stand-in with the GPU stack's resource types and physical names."""
    return {
        "Resources": {
            "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {"ClusterName": NAMES.cluster}},
            "InstanceRole": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "ec2.amazonaws.com"},
                                "Action": "sts:AssumeRole",
                            }
                        ],
                    }
                },
            },
            "LaunchTemplate": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {
                    "LaunchTemplateData": {"ImageId": "ami-12c6146b", "InstanceType": "g5.xlarge"}
                },
            },
            "Asg": {
                "Type": "AWS::AutoScaling::AutoScalingGroup",
                "Properties": {
                    "AutoScalingGroupName": NAMES.asg,
                    "MinSize": "1",
                    "MaxSize": "4",
                    "DesiredCapacity": "1",
                    "AvailabilityZones": ["us-east-1a"],
                    "NewInstancesProtectedFromScaleIn": True,
                    "LaunchTemplate": {
                        "LaunchTemplateId": {"Ref": "LaunchTemplate"},
                        "Version": {"Fn::GetAtt": ["LaunchTemplate", "LatestVersionNumber"]},
                    },
                },
            },
            "CapacityProvider": {
                "Type": "AWS::ECS::CapacityProvider",
                "Properties": {
                    "Name": NAMES.capacity_provider,
                    "AutoScalingGroupProvider": {
                        "AutoScalingGroupArn": {"Ref": "Asg"},
                        "ManagedTerminationProtection": "ENABLED",
                        "ManagedScaling": {"Status": "ENABLED", "TargetCapacity": 100},
                    },
                },
            },
            "TaskDefinition": {
                "Type": "AWS::ECS::TaskDefinition",
                "Properties": {
                    "Family": NAMES.task_family,
                    "RequiresCompatibilities": ["EC2"],
                    "ContainerDefinitions": [
                        {
                            "Name": "app",
                            "Image": "vllm/vllm-openai:v0.11.0",
                            "Cpu": 3072,
                            "Memory": 12288,
                            "ResourceRequirements": [{"Type": "GPU", "Value": "1"}],
                        }
                    ],
                },
            },
            "Service": {
                "Type": "AWS::ECS::Service",
                "Properties": {
                    "ServiceName": NAMES.service,
                    "Cluster": {"Ref": "Cluster"},
                    "TaskDefinition": {"Ref": "TaskDefinition"},
                    "DesiredCount": 1,
                },
            },
            "LogGroup": {
                "Type": "AWS::Logs::LogGroup",
                "Properties": {"LogGroupName": NAMES.task_log_group, "RetentionInDays": 30},
            },
        }
    }


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return _hand_template()


EXAMPLE_SPEC = Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml"


@pytest.fixture(scope="session")
def g5_template() -> dict[str, Any]:
    """The real synthesized template of examples/g5-vllm.toml (synthesized once)."""
    from ecs_gpu.spec import load_spec
    from ecs_gpu.template.synth import synth_template

    return synth_template(load_spec(EXAMPLE_SPEC))


@pytest.fixture(scope="session")
def g5_for_moto(g5_template: dict[str, Any]) -> dict[str, Any]:
    return for_moto(g5_template)


@pytest.fixture
def fresh_template(template: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(template)


class Clients:
    """Real boto3 clients, built from the environment the ``aws`` fixture set."""

    def __init__(self) -> None:
        session = boto3.Session()
        self.cfn = session.client("cloudformation")
        self.ecs = session.client("ecs")
        self.autoscaling = session.client("autoscaling")
        self.appscaling = session.client("application-autoscaling")
        self.cw = session.client("cloudwatch")
        self.iam = session.client("iam")


@pytest.fixture
def clients(aws: str) -> Clients:
    return Clients()


@pytest.fixture
def iam_enforced(aws: str) -> Iterator[str]:
    """Make moto check IAM policies for every request, as AWS does; undo afterwards."""

    def set_count(value: str) -> None:
        req = urllib.request.Request(
            f"{aws}/moto-api/reset-auth",
            data=value.encode(),
            method="POST",
            # Not form-encoded, or the server reads an empty body.
            headers={"Content-Type": "text/plain"},
        )
        urllib.request.urlopen(req, timeout=10).close()

    set_count("0")
    try:
        yield aws
    finally:
        set_count("inf")


def dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
