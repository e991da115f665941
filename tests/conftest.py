"""Shared fixtures: a real moto server on 127.0.0.1, reached through AWS_ENDPOINT_URL.

AWS-facing code under test builds its clients the ordinary way (boto3
session, region and credentials from the environment); the only thing the
tests change is the standard ``AWS_ENDPOINT_URL``, exactly as a user pointing
the tool at a local endpoint would.
"""

from __future__ import annotations

import os
import socket
import urllib.request
from collections.abc import Iterator

import pytest

os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """Start moto in server mode on 127.0.0.1 for the whole session; yield its URL."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture
def aws(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A clean moto account for one test, reachable through AWS_ENDPOINT_URL.

    Yields the endpoint URL. State is reset before the test, so tests never
    see each other's resources.
    """
    req = urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST")
    urllib.request.urlopen(req, timeout=10).close()
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    yield moto_server
