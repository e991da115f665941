"""A boto3 client for botocore's Stubber: it never reaches an endpoint.

The Stubber answers every call with an AWS-shaped response the test adds
(checked against botocore's output shapes); the endpoint is one nothing
listens on, so a call the test did not stub fails rather than reaching AWS.
"""

from __future__ import annotations

from typing import Any

import boto3


def offline_client(service: str) -> Any:
    """A ``service`` client in us-east-1 with dummy keys, for ``Stubber(client)``."""
    return boto3.client(
        service,  # type: ignore[call-overload]
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="y",
        endpoint_url="http://127.0.0.1:1",  # never reached: the Stubber answers
    )


def modify_change(
    logical_id: str,
    resource_type: str,
    prop: str,
    *,
    evaluation: str = "Static",
    source: str = "DirectModification",
    causing_entity: str | None = None,
) -> dict[str, Any]:
    """One DescribeChangeSet ``Changes`` entry: an in-place Modify of one property, shaped
    as botocore's CloudFormation model has it."""
    detail: dict[str, Any] = {
        "Target": {"Attribute": "Properties", "Name": prop, "RequiresRecreation": "Never"},
        "Evaluation": evaluation,
        "ChangeSource": source,
    }
    if causing_entity is not None:
        detail["CausingEntity"] = causing_entity
    return {
        "Type": "Resource",
        "ResourceChange": {
            "Action": "Modify",
            "LogicalResourceId": logical_id,
            "ResourceType": resource_type,
            "Replacement": "False",
            "Scope": ["Properties"],
            "Details": [detail],
        },
    }
