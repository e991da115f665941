"""What every [section] model shares: strict, frozen, finite floats, no -0.0, 32-bit integers."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from ecs_gpu.spec.messages import RuleError

# The largest integer the AWS APIs' "integer" shapes take (botocore: Smithy int32).
INT32_MAX = 2**31 - 1
# Integer keys that reach a double field instead (TargetValue), with their own bound.
NOT_INT32_KEYS = frozenset({"request_count_target"})
# TargetTrackingScalingPolicyConfiguration.TargetValue: "Values must be in the range
# of -2^360 to 2^360" (botocore 1.44 application-autoscaling 2016-02-06 model).
TARGET_VALUE_MAX = 2**360
# CDK's token markers: "${Token[...]}" (strings), "#{Token[...]}" (lists); the
# rule that refuses them is spec.rules.strings._cdk_tokens.
CDK_TOKEN_RE = re.compile(r"[$#]\{Token\[")


class _Section(BaseModel):
    # allow_inf_nan=False: TOML has nan and inf literals, and either would
    # pass a `gt=0` or reach the simulator as a rate. Every float key also has
    # a finite range (comments at each): the simulator multiplies and divides
    # them, so 1e308 or 5e-324 would overflow to inf or divide by almost zero.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    @field_validator("*")
    @classmethod
    def _no_negative_zero(cls, v: Any) -> Any:
        # TOML's -0.0 passes ge=0 and would print as "-0" in reports.
        return 0.0 if isinstance(v, float) and v == 0 else v

    @field_validator("*")
    @classmethod
    def _int32(cls, v: Any, info: ValidationInfo) -> Any:
        # TOML integers are 64-bit and Python's unbounded, but every integer key
        # ends in an AWS API field of type integer (ASG MaxSize, the scalable
        # target's MaxCapacity, container Cpu/Memory, the warm pool's sizes):
        # 32-bit in the botocore models. The template would deploy and fail.
        # Every integer key has a lower bound of 0 or more, so only the top is checked.
        if type(v) is int and v > INT32_MAX and info.field_name not in NOT_INT32_KEYS:
            raise RuleError(
                f"is larger than {INT32_MAX:,}, the largest value AWS's APIs take here "
                "(a 32-bit integer)",
                f"lower it to {INT32_MAX:,} or less (the value you mean is likely far smaller)",
            )
        return v
