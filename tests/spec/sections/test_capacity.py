"""[capacity] (spec/sections/capacity.py): the instance types it refuses and the AMI id."""

from __future__ import annotations

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    PATH,
    one_problem,
    with_,
)


@pytest.mark.parametrize(
    ("itype", "why"),
    [
        ("p2.xlarge", "20230912"),
        ("g3.4xlarge", "previous-generation"),
        ("g2.2xlarge", "deprecated"),
        ("g6f.large", "fractions of an L4"),
        ("fargate", "Fargate has no GPU support"),
        ("windows", "Windows containers"),
        ("m5.large", "not an ECS-supported GPU instance type"),
        ("G5.XLARGE", "use 'g5.xlarge'"),
    ],
)
def test_refused_instance_type(itype: str, why: str) -> None:
    line = one_problem(with_("capacity", instance_type=itype), "capacity.instance_type")
    assert repr(itype) in line and why in line
    assert "Fix: pick a type that `ecs-gpu catalog` lists" in line


@pytest.mark.parametrize("good", ["ami-12c6146b", "ami-0123456789abcdef0"])
def test_ami_id_takes_both_ec2_id_lengths(good: str) -> None:
    assert parse_spec(with_("capacity", ami_id=good), PATH).capacity.ami_id == good


@pytest.mark.parametrize("bad", ["ami-0123", "AMI-0123456789ABCDEF0", "i-0123456789abcdef0"])
def test_ami_id_that_is_no_image_id_says_where_to_read_one(bad: str) -> None:
    line = one_problem(with_("capacity", ami_id=bad), "capacity.ami_id", repr(bad))
    assert "aws ssm get-parameter --name /aws/service/ecs/optimized-ami/" in line
