"""CloudFormation's limits on a template, and the minified body deploy sends.

Beside synth, below deploy: ``synth`` writes a template that fits only
minified as minified JSON, ``validate`` reports what ``deploy`` would
refuse, and ``aws.deploy`` sends the same body; all three read the limits
here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# CreateChangeSet's TemplateBody limit (CloudFormation quotas page).
MAX_TEMPLATE_BODY_BYTES = 51_200
# TemplateURL's limit: "max size: 1 MB" (botocore's CreateChangeSet.TemplateURL
# doc); read as 1,000,000 bytes, the smaller of the two meanings of MB.
MAX_TEMPLATE_URL_BYTES = 1_000_000


def minified(template: Mapping[str, Any]) -> str:
    """The template as the minified JSON deploy sends (inline or staged in S3)."""
    return json.dumps(template, separators=(",", ":"))


def template_size_problem(body: str, *, bucket: bool = False) -> str | None:
    """Why CreateChangeSet would refuse ``body`` (minified JSON), or None.

    Without ``bucket`` the limit is TemplateBody's; with it, TemplateURL's.
    ``validate`` reports the same sentence (over TemplateBody's limit as a
    warning, over TemplateURL's as a finding).
    """
    size = len(body.encode("utf-8"))
    if size > MAX_TEMPLATE_URL_BYTES:
        return (
            f"the synthesized template is {size:,} bytes even minified; CloudFormation "
            f"accepts at most {MAX_TEMPLATE_URL_BYTES:,} bytes even from S3 (TemplateURL). "
            "Fix: shorten the spec's [service] environment/command."
        )
    if bucket or size <= MAX_TEMPLATE_BODY_BYTES:
        return None
    return (
        f"the synthesized template is {size:,} bytes even minified; CloudFormation "
        f"accepts at most {MAX_TEMPLATE_BODY_BYTES:,} bytes inline (TemplateBody), and "
        "ecs-gpu does not create an S3 bucket behind your back. Fix: name a bucket of "
        "yours in the stack's Region with --template-bucket BUCKET (deploy and diff stage "
        "the template there and delete it afterwards), or leave out a feature the service "
        "does not need ([capacity.warm_pool], [alerts] email, [scaling] gpu_guard each "
        "add 1-5 KB)."
    )
