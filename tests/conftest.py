"""Shared fixtures: a real moto server on 127.0.0.1, reached through AWS_ENDPOINT_URL.

AWS-facing code under test builds its clients the ordinary way (boto3
session, region and credentials from the environment); the only thing the
tests change is the standard ``AWS_ENDPOINT_URL``, exactly as a user pointing
the tool at a local endpoint would.
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings

# No example may fail for being slow: Hypothesis's 200-ms deadline is a timed
# test, and these machines are shared (a loaded CI host failed test_fast_path
# on it). Setting HYPOTHESIS_PROFILE alone loads nothing; the profile must be.
settings.register_profile("ecs-gpu", deadline=None, print_blob=True)
settings.load_profile("ecs-gpu")


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


# --- an endpoint that is not AWS --------------------------------------------------------

JUNK = bytes(range(256)) * 4  # bytes 0x80-0xff: no UTF-8 text, so no JSON or XML either
CAPTIVE_PORTAL = (
    b"<!DOCTYPE html><html><head><title>Hotel Wi-Fi</title></head>"
    b"<body>Please accept the terms to go online.</body></html>"
)


def http_200(body: bytes, content_type: str) -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class FakeEndpoint:
    """A server on 127.0.0.1 that AWS_ENDPOINT_URL points at, answering like no AWS API.

    ``answer``: the raw HTTP response sent to each request; None accepts the
    connection and never answers (a black hole). It serves at most
    ``max_requests`` connections, then closes its socket (later connections
    are refused), and stops for good when the test ends.
    """

    def __init__(self, answer: bytes | None, max_requests: int) -> None:
        self.answer = answer
        self.max_requests = max_requests
        self.requests = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        # accept() wakes up this often to see whether the test has ended.
        self._sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set() and self.requests < self.max_requests:
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self.requests += 1
            if self.answer is None:
                self._held.append(conn)  # read nothing, answer nothing
                continue
            with conn:
                conn.settimeout(5)
                _read_request(conn)
                conn.sendall(self.answer)
        if self.requests >= self.max_requests:
            self._sock.close()  # served enough: later connections are refused

    def close(self) -> None:
        """Stop serving; ``requests`` then also counts connections still queued.

        The kernel completes a connection before accept() sees it, so a client
        may have connected (and given up) while the thread was not scheduled:
        counting the queue makes ``requests`` exact, whatever the machine's speed.
        """
        self._stop.set()
        self._thread.join(timeout=5)
        if self._sock.fileno() != -1:
            self._sock.setblocking(False)
            while True:
                try:
                    conn, _ = self._sock.accept()
                except (BlockingIOError, OSError):
                    break
                self.requests += 1
                conn.close()
            self._sock.close()
        for conn in self._held:
            conn.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@pytest.fixture
def fake_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeEndpoint]]:
    """Start a :class:`FakeEndpoint` and point AWS_ENDPOINT_URL (and test credentials) at it."""
    started: list[FakeEndpoint] = []

    def start(answer: bytes | None, max_requests: int = 20) -> FakeEndpoint:
        server = FakeEndpoint(answer, max_requests)
        started.append(server)
        for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_MAX_ATTEMPTS"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        return server

    yield start
    for server in started:
        server.close()
