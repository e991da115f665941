"""The concurrency metric contract and its sidecar, run for real.

The sidecar script is linted with shellcheck and executed with bash against
real vLLM ``/metrics`` lines (tests/data/vllm-metrics.txt, source beside it)
served over HTTP; the ``aws`` it calls is a stand-in that records its
arguments, which are then checked against botocore's PutMetricData model.
The run loop (the container's command) runs on a fake clock: stand-in
``date`` and ``sleep`` first on its PATH (tests/support/sidecar_clock.py), so its tests count
scrapes and datapoints exactly and wait on events, never on real seconds.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import boto3
import pytest
from botocore.stub import Stubber

from ecs_gpu.contracts import demand_metric
from ecs_gpu.spec.sections.service import METRICS_PRESETS
from support.sidecar_clock import SAFETY_S, T0, FakeClock, container, executable, kill, tool

SAMPLE = Path(__file__).parents[1] / "data" / "vllm-metrics.txt"
VLLM = METRICS_PRESETS["vllm"]


@pytest.fixture(params=["source", "embedded"])
def script(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """The script as written, and as the task definition carries it."""
    path = tmp_path / "demand-sidecar.sh"
    text = (
        demand_metric.sidecar_script()
        if request.param == "source"
        else demand_metric.embedded_script()
    )
    path.write_text(text)
    return path


def _run(
    script: Path, mode: str, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("bash"), str(script), mode],
        input=stdin,
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _sum(script: Path, series: tuple[str, ...], text: str) -> tuple[int, int]:
    result = _run(script, "sum", {"SERIES": " ".join(series)}, text)
    assert result.returncode == 0, result.stderr
    total, samples, *_ = result.stdout.split()
    return int(total), int(samples)


def test_script_passes_shellcheck(script: Path) -> None:
    result = subprocess.run(
        [tool("shellcheck"), "--severity=style", "--shell=bash", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_sum_of_vllm_preset_on_real_output(script: Path) -> None:
    # 8.0 running; the excerpt has no waiting line. In thousandths.
    assert _sum(script, VLLM, SAMPLE.read_text()) == (8000, 1)


def test_sum_adds_every_label_set(script: Path) -> None:
    # request_success_total: stop 1 + length 131 + abort 0.
    assert _sum(script, ("vllm:request_success_total",), SAMPLE.read_text()) == (132000, 3)


def test_names_match_whole_not_prefix(script: Path) -> None:
    # Only _bucket/_count lines exist for the histogram; none is the bare name.
    assert _sum(script, ("vllm:time_to_first_token_seconds",), SAMPLE.read_text()) == (0, 0)
    text = (
        'vllm:num_requests_waiting{engine="0"} 2.0\n'
        'vllm:num_requests_waiting_by_reason{reason="capacity"} 9.0\n'
    )
    assert _sum(script, VLLM, text) == (2000, 1)


def test_labels_with_spaces_and_braces_crlf_and_fractions(script: Path) -> None:
    text = (
        "# HELP vllm:num_requests_running x\r\n"
        'vllm:num_requests_running{model_name="a b} {c"} 3.25\r\n'
        "vllm:num_requests_waiting 1\r\n"
        'vllm:num_requests_waiting{engine="1"} 0.0005 1700000000\n'
    )
    # 3.250 + 1.000 + 0.000 (below a thousandth): fixed point, no float drift.
    assert _sum(script, VLLM, text) == (4250, 3)


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-1.0", "1e99", "0x10"])
def test_unreadable_value_fails_rather_than_publish_a_wrong_number(
    script: Path, value: str
) -> None:
    result = _run(script, "sum", {"SERIES": VLLM[0]}, f"{VLLM[0]} {value}\n")
    assert result.returncode == 1
    assert value in result.stderr


def test_exponent_values_as_python_prometheus_client_writes_them(script: Path) -> None:
    # prometheus_client's floatToGoString (vLLM, SGLang) writes a value of a
    # million or more in Go's form, and repr() a tiny one with a negative exponent.
    text = (
        f'{VLLM[0]}{{i="0"}} 8.128902e+06\n'
        f'{VLLM[0]}{{i="1"}} 1.2345675e+06\n'
        f'{VLLM[0]}{{i="2"}} 1.5e-03\n'
        f'{VLLM[0]}{{i="3"}} 3.0\n'
    )
    assert _sum(script, (VLLM[0],), text) == (8128902000 + 1234567500 + 1 + 3000, 4)


def _estimates(
    script: Path, drain_s: int, scrapes: list[tuple[float, float, float, int]]
) -> list[float]:
    """The sidecar's estimate after each scrape (running, waiting, completed, dt s)."""
    lines = "".join(
        f"{round(r * 1000)} {round(q * 1000)} {round(c * 1000)} {dt}\n" for r, q, c, dt in scrapes
    )
    result = _run(script, "estimate", {"DRAIN_S": str(drain_s)}, lines)
    assert result.returncode == 0, result.stderr
    return [int(v) / 1000 for v in result.stdout.split()]


def test_estimate_is_little_s_law_in_steady_state(script: Path) -> None:
    # 11 running, 1.4 completions a second, nothing waiting: W = 11 / 1.4 s and
    # arrivals = completions, so the estimate is the running count.
    scrapes = [(11.0, 0.0, 100.0 + 14 * i, 10) for i in range(8)]
    got = _estimates(script, 120, scrapes)
    assert got[0] == 11.0  # first scrape: no rate yet, the in-flight sum
    assert got[1:] == pytest.approx([11.0] * 7, abs=0.01)


def test_estimate_sizes_for_the_arrivals_not_the_backlog(script: Path) -> None:
    # Overload: the server runs 11 at capacity (1.4 done/s) while 4.2 arrive a
    # second, so 28 more wait each 10 s. In flight reads 11 + waiting (39,
    # 67, ...: the backlog counted as standing load); the estimate reads the
    # arrival rate x W (33) plus the backlog drained over DRAIN_S.
    scrapes = [(11.0, 0.0, 100.0, 10)] + [(11.0, 28.0 * i, 100.0 + 14 * i, 10) for i in range(1, 5)]
    got = _estimates(script, 120, scrapes)
    w = 11 / 1.4
    for i, value in enumerate(got[1:], start=1):
        assert value == pytest.approx(w * (4.2 + 28.0 * i / 120), abs=0.01)
    assert got[4] < 11.0 + 28 * 4  # far below in flight (123)


def test_estimate_falls_back_to_in_flight_without_completions_or_after_a_reset(
    script: Path,
) -> None:
    # No completion in the window: W unknown, so the in-flight sum; a counter
    # that went down (the server restarted) starts the window again.
    scrapes = [
        (3.0, 1.0, 50.0, 10),
        (3.0, 2.0, 50.0, 10),
        (3.0, 2.0, 60.0, 10),
        (2.0, 0.0, 5.0, 10),
    ]
    got = _estimates(script, 120, scrapes)
    assert got[0] == 4.0 and got[1] == 5.0
    assert got[2] > 0 and got[2] != 5.0
    assert got[3] == 2.0


# --- one publish, end to end over HTTP --------------------------------------------------


class _Server(ThreadingHTTPServer):
    """The test server on 127.0.0.1: the paths it was asked, in order, and the
    gate that holds "/stall"'s answer until the test is over."""

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.paths: list[str] = []
        self.release = threading.Event()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> None:
        # shutdown() waits for serve_forever to see it: 0.5 s a test by default.
        threading.Thread(target=self.serve_forever, args=(0.01,), daemon=True).start()

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server = cast(_Server, self.server)
        server.paths.append(self.path)
        if self.path == "/stall":  # the answer stops mid-body until the test is over
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'vllm:num_requests_running{engine="0"} 3.0\n')
            self.wfile.write(b'vllm:num_requests_running{engine="1"} 1')
            self.wfile.flush()
            server.release.wait(SAFETY_S)
            with contextlib.suppress(OSError):  # the sidecar has hung up by now
                self.wfile.write(b"2.0\n")
            return
        if self.path == "/idle-tgi":  # TGI before its first request: no gauge yet
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/wrong":
            self.send_response(404)
            self.end_headers()
            return
        # "/up-then-down" answers its first GET, then fails like a crashed server.
        up_once = self.path == "/up-then-down" and server.paths.count(self.path) == 1
        if self.path == "/overload":
            body = _overload(server.paths.count(self.path) - 1).encode()
        elif self.path == "/metrics" or up_once:
            body = SAMPLE.read_bytes()
        else:  # a server still loading its model
            self.send_response(503)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _overload(n: int) -> str:
    """The n-th scrape (from 0) of test_estimate_sizes_for_the_arrivals_not_the_backlog's
    overload: 11 running at 1.4 completions a second, 28 more waiting each 10 s."""
    return (
        "vllm:num_requests_running 11\n"
        f"vllm:num_requests_waiting {28 * n}\n"
        f"vllm:request_success_total {100 + 14 * n}\n"
    )


@pytest.fixture
def http() -> Iterator[_Server]:
    httpd = _Server()
    httpd.start()
    yield httpd
    httpd.stop()


@pytest.fixture
def server(http: _Server) -> int:
    """The test server's port."""
    return http.port


def _stand_in_aws(tmp_path: Path, record: str, command: str) -> Path:
    """An `aws` in tmp_path/bin running ``command`` ({record}: the record file's path)."""
    path = tmp_path / record
    executable(tmp_path, "aws", command.format(record=path))
    return path


@pytest.fixture
def fake_aws(tmp_path: Path) -> Path:
    """An `aws` that records one argument per line."""
    return _stand_in_aws(tmp_path, "aws-args", 'printf "%s\\n" "$@" > "{record}"')


def _env(
    port: int, path: str, record: Path, starting_max_s: int = 600, **estimate: Any
) -> dict[str, str]:
    env = demand_metric.sidecar_environment(
        metrics_port=port,
        metrics_path=path,
        series=VLLM,
        cluster_name="llm",
        service_name="llm",
        starting_max_s=starting_max_s,
        **estimate,
    )
    # What CloudFormation hands ECS: the Sub body resolved in us-east-1.
    script = demand_metric.resolve_sub(env[demand_metric.SCRIPT_ENV], "us-east-1")
    return {
        **env,
        demand_metric.SCRIPT_ENV: script,
        "PATH": f"{record.parent / 'bin'}:{os.environ['PATH']}",
    }


def _cli_to_request(args: list[str]) -> dict[str, Any]:
    """What awscli's put-metric-data customization sends for these options."""
    assert args[:2] == ["cloudwatch", "put-metric-data"]
    opts = dict(zip(args[2::2], args[3::2], strict=True))
    dims = [
        dict(zip(("Name", "Value"), p.split("="), strict=True))
        for p in opts["--dimensions"].split(",")
    ]
    return {
        "Namespace": opts["--namespace"],
        "MetricData": [
            {
                "MetricName": opts["--metric-name"],
                "Dimensions": dims,
                "Value": float(Decimal(opts["--value"])),
                "Unit": opts["--unit"],
                "StorageResolution": int(opts["--storage-resolution"]),
            }
        ],
    }


def test_once_scrapes_sums_and_publishes_a_high_resolution_datapoint(
    script: Path, server: int, fake_aws: Path
) -> None:
    result = _run(script, "once", _env(server, "/metrics", fake_aws))
    assert result.returncode == 0, result.stderr
    request = _cli_to_request(fake_aws.read_text().splitlines())
    assert request == {
        "Namespace": demand_metric.NAMESPACE,
        "MetricData": [
            {
                "MetricName": demand_metric.METRIC_NAME,
                "Dimensions": demand_metric.dimensions("llm", "llm"),
                "Value": 8.0,
                "Unit": demand_metric.UNIT,
                "StorageResolution": 1,
            }
        ],
    }
    cw = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(cw) as stub:  # botocore's model must accept what the CLI sends
        stub.add_response("put_metric_data", {}, request)
        cw.put_metric_data(**request)


def test_container_command_decodes_and_runs_the_script(tmp_path: Path, server: int) -> None:
    """The container's command with the real `sleep` and `date`: its first publish
    (at once), then ECS's stop in the middle of the 10-s sleep after it."""
    record = _stand_in_aws(tmp_path, "aws-args", 'printf "%s\\n" "$@" > "{record}"; echo published')
    proc = container(_env(server, "/metrics", record))
    try:
        assert proc.stdout is not None
        # Waits for the event; the timeout is a safety net for a broken script.
        ready, _, _ = select.select([proc.stdout], [], [], SAFETY_S)
        assert ready and proc.stdout.readline() == "published\n", proc.stderr
        assert proc.poll() is None
        proc.terminate()  # ECS's stop: the trap exits at once, taking the sleep along
        _, err = proc.communicate(timeout=SAFETY_S)
    finally:
        kill(proc)
    assert proc.returncode == 0, err
    assert _cli_to_request(record.read_text().splitlines())["MetricData"][0]["Value"] == 8.0


# --- the run loop, on a fake clock ------------------------------------------------------

INTERVAL = demand_metric.PUBLISH_INTERVAL_S


@pytest.fixture
def clock(tmp_path: Path) -> FakeClock:
    return FakeClock(tmp_path)


@pytest.fixture
def aws_log(tmp_path: Path) -> Path:
    """An `aws` that appends each call's arguments, one per line, after a "--call" line."""
    return _stand_in_aws(
        tmp_path, "aws-calls", '{{ echo --call; printf "%s\\n" "$@"; }} >> "{record}"'
    )


def _calls(record: Path) -> list[list[str]]:
    if not record.exists():
        return []
    return [c.strip("\n").splitlines() for c in record.read_text().split("--call\n") if c]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _values(record: Path) -> list[float]:
    return [_cli_to_request(c)["MetricData"][0]["Value"] for c in _calls(record)]


def _logged_status(err: str, status: int) -> int:
    """How many scrapes the sidecar logged as answered with ``status``."""
    return len(re.findall(rf": HTTP/1\.[01] {status} ", err))


def test_a_starting_task_publishes_zero_until_its_server_answers(
    aws_log: Path, clock: FakeClock
) -> None:
    # Nothing listens yet (the model loads before the server binds): the
    # RUNNING task holds no request. The server comes up at 20 s, after the
    # second scrape's sleep, and answers 8.
    port = _free_port()
    servers: list[_Server] = []

    def come_up() -> None:
        servers.append(_Server(port))
        servers[0].start()

    try:
        err = clock.run(
            _env(port, "/metrics", aws_log),
            stop_at=T0 + 5 * INTERVAL,
            hook_at=T0 + 2 * INTERVAL,
            on_hook=come_up,
        )
    finally:
        for httpd in servers:
            httpd.stop()
    # Scrapes at 0 and 10 s: no answer, 0; at 20, 30 and 40 s: 8.
    assert _values(aws_log) == [0.0, 0.0, 8.0, 8.0, 8.0], err
    assert servers[0].paths == ["/metrics"] * 3
    assert clock.sleeps() == [INTERVAL] * 5


def test_a_server_that_never_answers_gets_zeros_only_until_the_start_deadline(
    aws_log: Path, clock: FakeClock
) -> None:
    # A wrong [service.metrics] port: zeros for ever would scale the service
    # in and keep the missing-metric alarm quiet.
    env = _env(_free_port(), "/metrics", aws_log, starting_max_s=30)
    err = clock.run(env, stop_at=T0 + 60)
    # Scrapes at 0, 10 and 20 s publish 0; at 30 (the deadline), 40 and 50 s nothing.
    assert _values(aws_log) == [0.0] * 3, err
    assert err.count("within 30 s of the start: check [service.metrics] port") == 3, err
    assert clock.sleeps() == [INTERVAL] * 6


def test_an_http_error_while_starting_publishes_nothing(
    http: _Server, aws_log: Path, clock: FakeClock
) -> None:
    # A wrong path (404) is a server that is up: no zero, so the series stays
    # missing and its alarm reports it.
    err = clock.run(_env(http.port, "/wrong", aws_log), stop_at=T0 + 3 * INTERVAL)
    assert http.paths == ["/wrong"] * 3
    assert _calls(aws_log) == []
    assert _logged_status(err, 404) == 3, err


def test_once_the_server_answered_a_failed_scrape_publishes_nothing(
    http: _Server, aws_log: Path, clock: FakeClock
) -> None:
    err = clock.run(_env(http.port, "/up-then-down", aws_log), stop_at=T0 + 4 * INTERVAL)
    # The first scrape published 8 requests; the three failures after it
    # publish nothing (no false zero: the missing-metric alarm reports a dead server).
    assert http.paths == ["/up-then-down"] * 4
    assert _values(aws_log) == [8.0]
    assert _logged_status(err, 503) == 3, err


def test_the_loop_keeps_its_interval_and_the_estimate_its_dt(
    tmp_path: Path, http: _Server, clock: FakeClock
) -> None:
    # An `aws` that takes 3 s: the loop sleeps the other 7, so scrapes stay
    # 10 s apart and the estimate's dt is those 10 s: the datapoints are the
    # estimate mode's for the same scrapes.
    record = tmp_path / "aws-calls"
    times = tmp_path / "aws-times"
    executable(
        tmp_path,
        "aws",
        f"{{ echo --call; printf '%s\\n' \"$@\"; }} >> '{record}'\n"
        f"cat '{clock.path}' >> '{times}'\n"
        f"echo $(($(cat '{clock.path}') + 3)) > '{clock.path}'",
    )
    env = _env(
        http.port,
        "/overload",
        record,
        waiting=VLLM[1],
        completed="vllm:request_success_total",
        drain_s=120,
    )
    clock.run(env, stop_at=T0 + 4 * INTERVAL)
    assert [int(t) for t in times.read_text().split()] == [T0 + i * INTERVAL for i in range(4)]
    assert clock.sleeps() == [INTERVAL - 3] * 4
    script = tmp_path / "demand-sidecar.sh"
    script.write_text(demand_metric.embedded_script())
    scrapes = [(11.0, 28.0 * i, 100.0 + 14 * i, INTERVAL) for i in range(4)]
    assert _values(record) == _estimates(script, 120, scrapes)
    assert _values(record)[0] == 11.0  # the first scrape: in flight


def test_a_missing_completed_counter_is_logged_once(
    server: int, aws_log: Path, clock: FakeClock
) -> None:
    env = _env(
        server, "/metrics", aws_log, waiting=VLLM[1], completed="vllm:no_such_total", drain_s=120
    )
    err = clock.run(env, stop_at=T0 + 3 * INTERVAL)
    assert _values(aws_log) == [8.0] * 3  # requests in flight
    message = "none of 'vllm:no_such_total' in /metrics: publishing requests in flight"
    assert err.count(message) == 1, err


def test_an_answer_that_stops_mid_body_publishes_nothing(
    script: Path, server: int, fake_aws: Path
) -> None:
    # Summing what arrived would publish 4 (3 + "1" of "12.0"), not 15. The
    # rest of the body never comes while the script runs (the server holds
    # it until the test is over), so the 1-s read timeout ends the scrape.
    env = {**_env(server, "/stall", fake_aws), "TIMEOUT_S": "1"}
    result = _run(script, "once", env)
    assert result.returncode == 1
    assert "no more data for 1 s" in result.stderr
    assert not fake_aws.exists()


def test_tgi_before_its_first_request_reads_zero(script: Path, server: int, fake_aws: Path) -> None:
    series = "tgi_batch_current_size tgi_queue_size"
    env = {**_env(server, "/idle-tgi", fake_aws), "SERIES": series}
    assert _run(script, "once", env).returncode == 1  # a series name that matches nothing
    assert not fake_aws.exists()
    result = _run(script, "once", {**env, "ABSENT_IS_ZERO": "1"})
    assert result.returncode == 0, result.stderr
    assert _cli_to_request(fake_aws.read_text().splitlines())["MetricData"][0]["Value"] == 0.0


def test_no_datapoint_while_the_server_is_not_ready(
    script: Path, server: int, fake_aws: Path
) -> None:
    result = _run(script, "once", _env(server, "/loading", fake_aws))
    assert result.returncode == 1
    assert "503" in result.stderr
    assert not fake_aws.exists()


def test_no_datapoint_when_nothing_listens(script: Path, fake_aws: Path, server: int) -> None:
    # A port nothing listens on: the server process has not bound yet.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    result = _run(script, "once", _env(free, "/metrics", fake_aws))
    assert result.returncode == 1
    assert not fake_aws.exists()


def test_no_datapoint_when_no_series_matches(script: Path, server: int, fake_aws: Path) -> None:
    env = {**_env(server, "/metrics", fake_aws), "SERIES": "tgi_queue_size"}
    result = _run(script, "once", env)
    assert result.returncode == 1
    assert "none of 'tgi_queue_size'" in result.stderr
    assert not fake_aws.exists()


def test_missing_environment_exits_2(script: Path) -> None:
    result = _run(script, "run", {})
    assert result.returncode == 2
    assert "METRICS_PORT" in result.stderr


_PLAIN: dict[str, Any] = {
    "metrics_port": 8000,
    "metrics_path": "/metrics",
    "series": VLLM,
    "cluster_name": "c",
    "service_name": "s",
    "starting_max_s": 600,
}


def _plain_env() -> dict[str, str]:
    """The sidecar's environment for vLLM without the estimate's variables."""
    return demand_metric.sidecar_environment(**_PLAIN)


def test_embedded_script_is_the_script_without_comments() -> None:
    embedded = demand_metric.embedded_script()
    assert len(embedded) < len(demand_metric.sidecar_script())
    assert "\n#" not in embedded and embedded.startswith("#!/usr/bin/env bash\n")
    env = _plain_env()
    body = env[demand_metric.SCRIPT_ENV]
    # A Fn::Sub body: every bash "${" written "${!" (a literal to CloudFormation)
    # but the one variable, the Region, on the line after the shebang.
    assert body.count("${") == body.count("${!") + 1 == embedded.count("${") + 1
    assert "${AWS::Region}" in body.splitlines()[1]
    first, rest = embedded.split("\n", 1)
    assert demand_metric.resolve_sub(body, "eu-west-1") == (
        f"{first}\nexport AWS_REGION=eu-west-1\n{rest}"
    )


def test_every_expansion_is_a_simple_literal_for_fn_sub() -> None:
    # CloudFormation resolves "${!x}" to "${x}"; a parser that reads a literal
    # to its first "}" (moto's does, and stops at a quote) must see each of
    # the script's expansions whole: no quote, brace, "!" or nested "${" inside.
    text = demand_metric.embedded_script()
    tokens = re.findall(r"\$\{([^}]*)\}", text)
    assert len(tokens) == text.count("${") > 40
    bad = [t for t in tokens if any(c in t for c in '"!{')]
    assert bad == []


def test_environment_covers_every_variable_the_script_requires() -> None:
    text = demand_metric.sidecar_script()
    m = re.search(r"PUBLISH_VARS=\(([^)]*)\)", text)
    assert m is not None
    required = set(m.group(1).split())
    env = _plain_env()
    assert required <= set(env)
    # The run loop also needs the start deadline; the flag has a default.
    assert {"STARTING_MAX_S", "ABSENT_IS_ZERO"} <= set(env) and "STARTING_MAX_S" in text
    assert env["INTERVAL_S"] == str(demand_metric.PUBLISH_INTERVAL_S)
    assert env["STORAGE_RESOLUTION"] == "1"
    assert env["DIMENSIONS"] == "ClusterName=c,ServiceName=s"
    # Without a drain window the estimate's variables are absent: in flight.
    assert not {"WAITING", "COMPLETED", "DRAIN_S", "WINDOW"} & set(env)


def test_the_estimate_travels_in_the_environment_and_the_task_of_the_example() -> None:
    env = demand_metric.sidecar_environment(
        **_PLAIN,
        waiting=VLLM[1],
        completed="vllm:request_success_total",
        drain_s=120,
    )
    assert env["WAITING"] == "vllm:num_requests_waiting"
    assert env["COMPLETED"] == "vllm:request_success_total"
    assert env["DRAIN_S"] == "120" and env["WINDOW"] == str(demand_metric.ESTIMATE_WINDOW)
    # Each is a variable the script reads.
    text = demand_metric.sidecar_script()
    for name in ("WAITING", "COMPLETED", "DRAIN_S", "WINDOW"):
        assert f"{name}=${{{name}:-" in text
    # The example (vLLM, defaults) deploys the estimate with the spec's window.
    from ecs_gpu.spec import load_spec

    spec = load_spec(Path(__file__).parents[2] / "examples" / "g5-vllm.toml")
    assert spec.scaling.demand_estimate == "arrival-rate"
    assert spec.scaling.backlog_drain_s == demand_metric.DEFAULT_BACKLOG_DRAIN_S == 300
    metrics = spec.service.metrics
    assert metrics is not None and metrics.completed_name == "vllm:request_success_total"


# --- the contract's numbers -------------------------------------------------------------


def test_namespace_is_custom_and_iam_condition_reads_it() -> None:
    assert not demand_metric.NAMESPACE.startswith("AWS/")
    assert demand_metric.iam_condition() == {
        "StringEquals": {"cloudwatch:namespace": demand_metric.NAMESPACE}
    }


def test_alarm_period_is_one_publish_interval() -> None:
    # A 10-s alarm period needs StorageResolution 1 (botocore PutMetricAlarm.Period);
    # the deployed alarm's period and statistic: tests/infra/test_scaling_steps.py.
    assert demand_metric.STORAGE_RESOLUTION == 1
    assert demand_metric.ALARM_PERIOD_S == demand_metric.PUBLISH_INTERVAL_S == 10


def test_dimensions_name_cluster_and_service_not_task() -> None:
    dims = demand_metric.dimensions("c", "s")
    assert [d["Name"] for d in dims] == ["ClusterName", "ServiceName"]
    assert all("Task" not in d["Name"] for d in dims)


def test_metric_data_queries_are_valid_get_metric_data_input() -> None:
    cw = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    queries = demand_metric.metric_data_queries("c", "s")
    end = datetime.now(UTC)
    params: dict[str, Any] = {
        "MetricDataQueries": queries,
        "StartTime": end - timedelta(minutes=10),
        "EndTime": end,
    }
    with Stubber(cw) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": []}, params)
        cw.get_metric_data(**params)
    assert [q["MetricStat"]["Stat"] for q in queries] == [demand_metric.STATISTIC, "Maximum"]
    assert {q["MetricStat"]["Period"] for q in queries} == {demand_metric.ALARM_PERIOD_S}
    assert all(
        q["MetricStat"]["Metric"]["Dimensions"] == demand_metric.dimensions("c", "s")
        for q in queries
    )
