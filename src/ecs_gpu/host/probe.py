"""The read-only host probe (probe.sh, run through SSM by doctor) and its parser.

:func:`probe_commands` is what the collector sends; the parsers below turn
what it prints into plain data.

The probe prints sections framed by ``@@ecs-gpu-probe begin NAME`` and
``@@ecs-gpu-probe end NAME rc=N``. Each parser here takes the text of one
section as the real command prints it (nvidia-smi -q -x, docker info,
systemctl is-active, docker ps, the agent's log) and returns plain values;
the doctor checks decide what they mean.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import shlex
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

from ecs_gpu.contracts import gpu_metric

# Environment variable the probe reads the host agent's config path from, so
# the path is spelled once, in gpu_metric.
PROBE_CONFIG_ENV: Final = "ECS_GPU_AGENT_CONFIG"
_PROBE_EOF: Final = "__ECS_GPU_PROBE_EOF__"


def probe_script() -> str:
    """The read-only host probe shipped with the package (host/probe.sh)."""
    return resources.files("ecs_gpu.host").joinpath("probe.sh").read_text(encoding="utf-8")


def probe_commands() -> list[str]:
    """AWS-RunShellScript ``commands``: the probe fed to bash through a heredoc.

    RunShellScript runs its lines with ``sh``, which is not bash everywhere, so
    the probe goes to bash on stdin; the agent config path comes from
    gpu_metric, never re-spelled in the script.
    """
    return [
        f"export {PROBE_CONFIG_ENV}={shlex.quote(gpu_metric.AGENT_CONFIG_PATH)}",
        f"bash -s <<'{_PROBE_EOF}'",
        *probe_script().splitlines(),
        _PROBE_EOF,
    ]


MARK: Final = "@@ecs-gpu-probe"
_BEGIN = re.compile(rf"^{MARK} begin (\w+)$")
_END = re.compile(rf"^{MARK} end (\w+) rc=(\d+)$")

# The agent's own words when it cannot run nvidia-smi (the reference module's field
# report, infrahouse/terraform-aws-ecs#173).
NVIDIA_SMI_STAT_ERROR: Final = "Cannot get file's stat"
# docker ps -a statuses of a container that keeps dying.
_EXITED = re.compile(r"^Exited \((\d+)\)")
_RESTARTING = re.compile(r"^Restarting \((\d+)\)")
# ECS names task containers ecs-<family>-<rev>-<container>-<random hex>; the
# hex changes with every restart, so strip it to group one container's runs.
_ECS_SUFFIX = re.compile(r"-[0-9a-f]{8,}$")
RESTART_LOOP_MIN: Final = 3
# nvidia-smi -q -x prints about 10 KiB per GPU (well under 1 MiB for 8 GPUs
# with MIG); the section comes from a host or a file we do not trust, so no
# more than this is ever decompressed (a gzip bomb stops here, not in memory).
MAX_NVIDIA_SMI_XML: Final = 16 * 2**20


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    rc: int | None  # None: the section never finished (probe cut short)


@dataclass(frozen=True)
class Gpu:
    index: int
    product_name: str
    uuid: str
    memory_total_mib: int | None
    memory_used_mib: int | None
    utilization_gpu_percent: int | None


@dataclass(frozen=True)
class NvidiaSmi:
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None
    gpus: tuple[Gpu, ...]


@dataclass(frozen=True)
class DockerRuntimes:
    runtimes: tuple[str, ...]
    default_runtime: str | None


@dataclass(frozen=True)
class ContainerLoop:
    name: str  # the container name without ECS's per-run suffix
    exits: int
    example: str  # one raw docker ps line


@dataclass
class ProbeReport:
    """One instance's probe, parsed. A field is None when its section is absent."""

    sections: dict[str, Section] = field(default_factory=dict)

    def section(self, name: str) -> Section | None:
        return self.sections.get(name)


class ProbeParseError(ValueError):
    """Probe output that is not what probe.sh prints."""


def split_sections(text: str) -> dict[str, Section]:
    """Sections of a probe run. A section with a begin and no end has rc None."""
    out: dict[str, Section] = {}
    current: str | None = None
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        m = _BEGIN.match(line)
        if m:
            if current is not None:
                out[current] = Section(current, "\n".join(lines), None)
            current, lines = m.group(1), []
            continue
        m = _END.match(line)
        if m and current is not None and current == m.group(1):
            if lines and lines[-1] == "":
                lines.pop()  # the newline probe.sh writes before each end marker
            out[current] = Section(current, "\n".join(lines), int(m.group(2)))
            current, lines = None, []
            continue
        if current is not None:
            lines.append(line)
    if current is not None:
        out[current] = Section(current, "\n".join(lines), None)
    return out


def parse_probe(text: str) -> ProbeReport:
    return ProbeReport(split_sections(text))


def _int_mib(text: str | None) -> int | None:
    if not text:
        return None
    m = re.match(r"\s*(\d+)\s*(MiB|%)?", text)
    return int(m.group(1)) if m else None


def parse_nvidia_smi_xml(xml_text: str) -> NvidiaSmi:
    """GPUs from ``nvidia-smi -q -x`` (schema v11 and v12 both work)."""
    # The XML comes from a host we do not fully trust: refuse entity
    # declarations (the only expansion risk ElementTree has) before parsing.
    if "<!ENTITY" in xml_text:
        raise ProbeParseError("nvidia-smi XML with entity declarations is refused")
    try:
        root = ET.fromstring(xml_text.strip())
    except ET.ParseError as e:
        raise ProbeParseError(f"nvidia-smi output is not XML: {e}") from None
    if root.tag != "nvidia_smi_log":
        raise ProbeParseError(f"nvidia-smi XML root is <{root.tag}>, expected <nvidia_smi_log>")
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        # Direct children only: MIG devices nest their own fb_memory_usage.
        util = g.findtext("utilization/gpu_util")
        gpus.append(
            Gpu(
                index=i,
                product_name=(g.findtext("product_name") or "").strip(),
                uuid=(g.findtext("uuid") or "").strip(),
                memory_total_mib=_int_mib(g.findtext("fb_memory_usage/total")),
                memory_used_mib=_int_mib(g.findtext("fb_memory_usage/used")),
                utilization_gpu_percent=_int_mib(util),
            )
        )
    attached = root.findtext("attached_gpus")
    return NvidiaSmi(
        driver_version=(root.findtext("driver_version") or "").strip() or None,
        cuda_version=(root.findtext("cuda_version") or "").strip() or None,
        attached_gpus=int(attached) if attached and attached.strip().isdigit() else None,
        gpus=tuple(gpus),
    )


def gunzip_bounded(data: bytes, limit: int) -> bytes:
    """Every gzip member of ``data``, decompressed; ProbeParseError past ``limit`` bytes.

    Incremental (zlib's max_length), so at most ``limit`` + 1 bytes are ever held,
    however far the data would expand.
    """
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        chunk = rest
        while chunk and not d.eof:
            # max_length >= 1 here (0 would mean unlimited).
            out += d.decompress(chunk, limit + 1 - len(out))
            if len(out) > limit:
                raise ProbeParseError(
                    f"the nvidia_smi section decompresses to more than {limit // 2**20} MiB "
                    "(nvidia-smi -q -x prints well under 1 MiB): not the probe's output"
                )
            chunk = d.unconsumed_tail
        if not d.eof:
            raise ProbeParseError("the nvidia_smi section is cut short (gzip data ends early)")
        # gzip(1) writes one member; cat of several is still one valid stream.
        rest = d.unused_data
    return bytes(out)


def decode_nvidia_smi_section(text: str) -> str:
    """The XML of the ``nvidia_smi`` section (the probe gzip+base64-encodes it)."""
    lines = text.strip().splitlines()
    if not lines:
        raise ProbeParseError("the nvidia_smi section is empty")
    head, body = lines[0].strip(), "\n".join(lines[1:]).strip()
    if head == "encoding: gzip+base64":
        try:
            raw = gunzip_bounded(base64.b64decode(body, validate=False), MAX_NVIDIA_SMI_XML)
            return raw.decode("utf-8")
        except (binascii.Error, zlib.error, UnicodeDecodeError) as e:
            raise ProbeParseError(f"the nvidia_smi section does not decode: {e}") from None
    if head == "encoding: plain":
        return body
    return text


def parse_docker_info(text: str) -> DockerRuntimes:
    """``Runtimes:`` and ``Default Runtime:`` lines of ``docker info``."""
    runtimes: tuple[str, ...] = ()
    default = None
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        if key.strip().lower() == "runtimes":
            runtimes = tuple(value.split())
        elif key.strip().lower() == "default runtime":
            default = value.strip() or None
    return DockerRuntimes(runtimes, default)


def parse_is_active(text: str) -> str:
    """The state ``systemctl is-active`` printed (active, inactive, failed, ...)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "unknown"


def parse_agent_config(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProbeParseError(f"the agent config is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ProbeParseError("the agent config is not a JSON object")
    return data


def restart_loops(text: str, minimum: int = RESTART_LOOP_MIN) -> list[ContainerLoop]:
    """Containers that exited or are restarting ``minimum`` or more times.

    Input is ``docker ps -a --format '{{.Status}} :: {{.Names}}'``.
    """
    counts: dict[str, list[str]] = {}
    for line in text.splitlines():
        status, sep, name = line.partition(" :: ")
        if not sep:
            continue
        status = status.strip()
        m = _EXITED.match(status)
        dying = (m is not None and m.group(1) != "0") or _RESTARTING.match(status) is not None
        if dying:
            base = _ECS_SUFFIX.sub("", name.strip())
            counts.setdefault(base, []).append(line.strip())
    return [
        ContainerLoop(name, len(lines), lines[0])
        for name, lines in sorted(counts.items())
        if len(lines) >= minimum
    ]


def parse_ecs_config(text: str) -> dict[str, dict[str, str]]:
    """``KEY=value`` lines per file (the probe prints ``# <path>`` before each)."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# /"):
            path = line[2:]
            if path.endswith(" (absent)"):
                current = None
                continue
            current = out.setdefault(path, {})
            continue
        if current is None or not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if sep:
            current[key.strip()] = value.strip().strip('"')
    return out


def log_lines_matching(text: str, *needles: str) -> list[str]:
    """Log lines that contain every needle (case-sensitive, as the agent writes)."""
    return [line.strip() for line in text.splitlines() if all(n in line for n in needles)]
