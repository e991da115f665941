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
