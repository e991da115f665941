"""The snapshot format: what the collector writes and doctor reads (docs/doctor.md).

A snapshot is a JSON object. ``_collection`` (typed below with pydantic)
says what was collected and what could not be; every other key is a kind of
AWS object whose items are exactly what the AWS API returns. Items are
checked against botocore's own output shape of the call that returns them
(:data:`KIND_SOURCES`), so a wrong type in any known field or a number no
AWS field holds is refused with its JSON path
(``container_instances[3].ec2InstanceId``), never discovered by a check.
A field the installed botocore does not know is kept unchecked: AWS adds
response fields, and a snapshot from a newer botocore must still load.

Pure: reading botocore's bundled service models is the only I/O besides the
file itself; nothing here calls AWS.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import botocore.session
from botocore.model import ListShape, MapShape, Shape, StructureShape
from pydantic import AfterValidator, Field, JsonValue, ValidationError

from ecs_gpu.checks.kinds import (
    COLLECTION_KEY as COLLECTION_KEY,
)
from ecs_gpu.checks.kinds import (
    KIND_SOURCES as KIND_SOURCES,
)
from ecs_gpu.checks.kinds import (
    KIND_TABLE as KIND_TABLE,
)
from ecs_gpu.checks.kinds import (
    KINDS as KINDS,
)
from ecs_gpu.checks.kinds import (
    OBJECT_KINDS as OBJECT_KINDS,
)
from ecs_gpu.checks.kinds import (
    SNAPSHOT_VERSION as SNAPSHOT_VERSION,
)
from ecs_gpu.checks.kinds import (
    Kind as Kind,
)
from ecs_gpu.checks.kinds import (
    KindSource as KindSource,
)
from ecs_gpu.checks.kinds import (
    ScheduleTarget as ScheduleTarget,
)
from ecs_gpu.checks.kinds import (  # re-exported: the format's public names stay here
    Snapshot as Snapshot,
)
from ecs_gpu.checks.kinds import (
    SpotTarget as SpotTarget,
)
from ecs_gpu.checks.kinds import (
    TargetNames as TargetNames,
)
from ecs_gpu.checks.kinds import (
    WarmPoolTarget as WarmPoolTarget,
)
from ecs_gpu.checks.kinds import (
    _Model as _Model,
)
from ecs_gpu.checks.kinds import (
    permissions as permissions,
)
from ecs_gpu.errors import BadInputError
from ecs_gpu.inputs import read_bytes

# A file this large is not a snapshot of one service (1,000 instances make a
# few tens of MiB); reading it would only exhaust memory.
MAX_BYTES: Final = 512 * 1024 * 1024
# AWS output shapes nest about 12 deep; anything far deeper is not a snapshot,
# and stays well inside Python's recursion limit while it is checked.
MAX_DEPTH: Final = 64
# Problems listed in one error; the rest are counted.
MAX_PROBLEMS: Final = 10
# Smithy's integer and long (botocore shapes "integer" and "long").
_INT_RANGE: Final = {"integer": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}

_FIX: Final = "pass a file written by `ecs-gpu doctor --save-snapshot`"


# --- JSON reading: every failure becomes a value with a path, or one message ----------


class _Unreadable:
    """A JSON number Python cannot hold faithfully; refused where it sits, with its path."""

    def __init__(self, text: str, why: str) -> None:
        self.text = text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"
        self.why = why


def _parse_int(text: str) -> int | _Unreadable:
    try:
        return int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return _Unreadable(text, "has too many digits to be read")


def _parse_float(text: str) -> float | _Unreadable:
    value = float(text)
    if math.isinf(value):
        return _Unreadable(text, "is too large for a floating-point number")
    return value


def _parse_constant(name: str) -> _Unreadable:
    # json.loads accepts NaN and Infinity, which JSON itself does not.
    return _Unreadable(name, "is not a number JSON allows")


class _Duplicate:
    """Marks, inside the object that holds it, a key JSON gave twice (a dict key no JSON has)."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys


def _object(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    # json.loads keeps the last of two equal keys, silently hiding the first
    # (a second "services" would replace the collected one): mark it, so the
    # whole file is refused with the key's JSON path.
    obj: dict[Any, Any] = {}
    twice: list[str] = []
    for k, v in pairs:
        if k in obj and k not in twice:
            twice.append(k)
        obj[k] = v
    if twice:
        obj[_Duplicate] = _Duplicate(twice)
    return obj


def _duplicate_keys(data: Any) -> list[str]:
    """The JSON path of every key given twice in its object, found without recursion."""
    out: list[str] = []
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            mark = value.pop(_Duplicate, None)
            if isinstance(mark, _Duplicate):
                out += [_key(path, k) for k in mark.keys]
            stack.extend((v, _key(path, str(k))) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(value))))
    return out


def _decode(data: bytes, source: str) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise BadInputError(
            f"{source}: not UTF-8 text: byte {e.start} (line {line}) is "
            f"0x{data[e.start]:02x}. Fix: {_FIX} (JSON is UTF-8)."
        ) from None
    try:
        parsed = json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except json.JSONDecodeError as e:
        raise BadInputError(f"{source}: not a JSON snapshot ({e}). Fix: {_FIX}.") from None
    except RecursionError:
        raise BadInputError(
            f"{source}: JSON nested too deeply to read (a snapshot nests about "
            f"12 levels, at most {MAX_DEPTH}). Fix: {_FIX}."
        ) from None
    twice = _duplicate_keys(parsed)
    if twice:
        raise _refuse(
            source,
            [f"{path} appears twice in its object; JSON keeps only the last" for path in twice],
            "keep one of each key (merge the two values into one), e.g. one services list "
            "holding every service",
        )
    return parsed


def _key(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][\w-]*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _too_deep(data: Any) -> str | None:
    """The JSON path of the first value deeper than MAX_DEPTH, found without recursion."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            return path
        if isinstance(value, dict):
            stack.extend((v, _key(path, str(k)), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))
    return None


# --- _collection: typed -----------------------------------------------------------------


def _iso_time(value: str) -> str:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("not an ISO-8601 time such as 2026-11-29T17:00:00+00:00") from None
    return value


IsoTime = Annotated[str, AfterValidator(_iso_time)]


class DeniedCall(_Model):
    call: str
    permission: str
    code: str
    kinds: list[Kind]


class FailedCall(_Model):
    call: str
    message: str
    kinds: list[Kind]


class MetricWindow(_Model):
    start: IsoTime
    end: IsoTime


class Collection(_Model):
    """``_collection``: what was asked for and what AWS would not or could not answer."""

    version: Literal[1]
    tool: str
    region: str | None = None
    collected_at: IsoTime
    target: TargetNames
    probe_hosts: bool = False
    denied: list[DeniedCall] = Field(default_factory=list)
    errors: list[FailedCall] = Field(default_factory=list)
    alarm_names: list[str] | None = None
    metric_queries: list[dict[str, JsonValue]] | None = None
    metric_window: MetricWindow | None = None
    # What doctor assumed for a snapshot of raw AWS output (raw.py), one line each.
    assumed: list[str] = Field(default_factory=list)


_JSON_VALUE_TAGS: Final = frozenset({"dict", "list", "str", "int", "float", "bool"})


def _loc(loc: tuple[int | str, ...], base: str) -> str:
    path = base
    for part in loc:
        path = f"{path}[{part}]" if isinstance(part, int) else _key(path, part)
    return path


def _pydantic_problems(e: ValidationError, base: str) -> list[str]:
    out = []
    for err in e.errors(include_url=False):
        # JsonValue names its branch ("dict", "list") in loc: not part of the JSON path.
        loc = tuple(p for p in err["loc"] if p not in _JSON_VALUE_TAGS)
        path, value = _loc(loc, base), err.get("input")
        if isinstance(value, _Unreadable):
            out.append(f"{path} = {value.text} {value.why}")
        elif err["type"] == "missing":
            out.append(f"{path} is missing")
        else:
            out.append(f"{path}: {err['msg'][:1].lower()}{err['msg'][1:]} (got {_show(value)})")
    return out


# --- AWS items: botocore's output shapes ------------------------------------------------


@functools.cache
def _session() -> botocore.session.Session:
    return botocore.session.get_session()


@functools.cache
def item_shape(kind: str) -> Shape:
    """botocore's shape of one item of ``kind`` (the output itself for OBJECT_KINDS)."""
    service, operation, members = KIND_SOURCES[kind]
    model = _session().get_service_model(service).operation_model(operation)
    shape: Shape | None = model.output_shape
    assert shape is not None
    for name in members:
        assert isinstance(shape, StructureShape)
        shape = shape.members[name]
        while isinstance(shape, ListShape):
            shape = shape.member
    return shape


def _show(value: Any) -> str:
    if isinstance(value, _Unreadable):
        return value.text
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | _Unreadable):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "an object" if isinstance(value, dict) else "a list"


_WANTS: Final = {
    "structure": "an object",
    "list": "a list",
    "map": "an object",
    "string": "a string",
    "blob": "a string",
    "boolean": "a boolean",
    "integer": "a whole number",
    "long": "a whole number",
    "float": "a number",
    "double": "a number",
    "timestamp": "an ISO-8601 time",
}


def _unreadable_problems(value: Any, path: str) -> Iterator[str]:
    """Every number Python cannot hold inside ``value`` (a field with no botocore shape)."""
    if isinstance(value, _Unreadable):
        yield f"{path} = {value.text} {value.why}"
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _unreadable_problems(v, _key(path, str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _unreadable_problems(v, f"{path}[{i}]")


def shape_problems(value: Any, shape: Shape, path: str) -> Iterator[str]:
    """Every way ``value`` differs from what botocore parses for ``shape``, with its path."""
    t = shape.type_name
    if isinstance(value, _Unreadable):
        yield f"{path} = {value.text} {value.why}"
        return
    wrong = f"{path} is {_json_type(value)} {_show(value)}; the field holds {_WANTS.get(t, t)}"
    if isinstance(shape, StructureShape | ListShape | MapShape):
        yield from _container_problems(value, shape, path, wrong)
    else:
        yield from _scalar_problems(value, t, path, wrong)


def _container_problems(
    value: Any, shape: StructureShape | ListShape | MapShape, path: str, wrong: str
) -> Iterator[str]:
    """A structure's, list's or map's problems: ``wrong`` for another JSON type, else
    each member's."""
    if isinstance(shape, StructureShape):
        if not isinstance(value, dict):
            yield wrong
            return
        for k, v in value.items():
            if k in shape.members:
                yield from shape_problems(v, shape.members[k], _key(path, k))
            else:
                # AWS adds response fields all the time: a field this botocore does
                # not know (a newer botocore or API wrote the file) is kept unchecked.
                # No check reads it; only a number JSON cannot hold is still refused.
                yield from _unreadable_problems(v, _key(path, k))
    elif isinstance(shape, ListShape):
        if not isinstance(value, list):
            yield wrong
            return
        for i, v in enumerate(value):
            yield from shape_problems(v, shape.member, f"{path}[{i}]")
    else:
        if not isinstance(value, dict):
            yield wrong
            return
        for k, v in value.items():
            yield from shape_problems(v, shape.value, _key(path, k))


def _scalar_problems(value: Any, t: str, path: str, wrong: str) -> Iterator[str]:
    """A scalar of botocore type ``t``: ``wrong`` for another JSON type, else whether an
    integer is in its range and a time string reads as ISO-8601."""
    if t in ("string", "blob"):
        if not isinstance(value, str):
            yield wrong
    elif t == "boolean":
        if not isinstance(value, bool):
            yield wrong
    elif t in _INT_RANGE:
        low, high = _INT_RANGE[t]
        if not isinstance(value, int) or isinstance(value, bool):
            yield wrong
        elif not low <= value <= high:
            yield f"{path} = {_show(value)} is outside the {t} range {low}..{high}"
    elif t in ("float", "double"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            yield wrong
    elif t == "timestamp":
        if isinstance(value, str):
            try:
                _iso_time(value)
            except ValueError as e:
                yield f"{path} = {_show(value)} is {e}"
        elif not isinstance(value, int | float) or isinstance(value, bool):
            yield wrong


def _kind_problems(kind: str, value: Any) -> Iterator[str]:
    shape = item_shape(kind)
    if kind in OBJECT_KINDS:
        if not isinstance(value, dict):
            yield f"{kind} is {_json_type(value)}; it holds an object: {OBJECT_KINDS[kind]}"
            return
        for key, output in value.items():
            yield from shape_problems(output, shape, _key(kind, key))
        return
    if not isinstance(value, list):
        yield f"{kind} is {_json_type(value)}; it holds a list of items"
        return
    for i, item in enumerate(value):
        yield from shape_problems(item, shape, f"{kind}[{i}]")


# --- the whole snapshot -------------------------------------------------------------------


def _refuse(source: str, problems: list[str], fix: str) -> BadInputError:
    shown = problems[:MAX_PROBLEMS]
    more = len(problems) - len(shown)
    lines = "\n".join(f"  - {p}" for p in shown) + (f"\n  - ... and {more} more" if more else "")
    noun = "problem" if len(problems) == 1 else "problems"
    return BadInputError(f"{source}: {len(problems)} {noun} in the snapshot:\n{lines}\nFix: {fix}.")


def validate(
    data: Any,
    source: str,
    *,
    cluster: str | None = None,
    service: str | None = None,
    now: datetime | None = None,
) -> Snapshot:
    """``data`` (parsed JSON) as a snapshot, or BadInputError naming each JSON path.

    Without ``_collection`` it is a snapshot of raw AWS output (raw.py):
    a kind may hold its call's whole output, and the target is inferred from
    the one cluster and service (``cluster``/``service`` choose among several;
    ``now`` is the collection time assumed, the current time by default).
    """
    from ecs_gpu.checks import raw

    if not isinstance(data, dict):
        raise BadInputError(
            f"{source}: a snapshot is a JSON object keyed by kind, got {_json_type(data)} "
            f"({_show(data)}). Fix: {_FIX}."
        )
    deep = _too_deep(data)
    if deep is not None:
        raise BadInputError(
            f"{source}: {deep} is nested more than {MAX_DEPTH} levels deep; no AWS "
            f"object is. Fix: {_FIX}."
        )
    unknown = sorted(k for k in data if k != COLLECTION_KEY and k not in KINDS)
    if unknown:
        raise BadInputError(
            f"{source}: unknown snapshot keys {', '.join(map(str, unknown))}. Fix: use only "
            f"{', '.join(KINDS)} (docs/doctor.md)."
        )
    problems: list[str] = []
    is_raw = COLLECTION_KEY not in data
    if is_raw:
        data, problems = raw.unwrap(data)
    else:
        meta = data[COLLECTION_KEY]
        if not isinstance(meta, dict):
            raise BadInputError(
                f"{source}: {COLLECTION_KEY} is {_json_type(meta)}, not an object; every "
                "snapshot ecs-gpu writes says what was collected (version, target, denied "
                f"calls) there. Fix: {_FIX}, or leave {COLLECTION_KEY} out for a snapshot of "
                "raw AWS output (docs/doctor.md)."
            )
        version = meta.get("version")
        if version != SNAPSHOT_VERSION or isinstance(version, bool):
            raise BadInputError(
                f"{source}: key {COLLECTION_KEY}.version is {_show(version)}; this ecs-gpu reads "
                f"version {SNAPSHOT_VERSION}. Fix: collect it again with this version."
            )
        try:
            Collection.model_validate(meta)
        except ValidationError as e:
            problems += _pydantic_problems(e, COLLECTION_KEY)
    for kind in KINDS:
        if kind in data:
            problems += _kind_problems(kind, data[kind])
    if problems:
        raise _refuse(
            source,
            problems,
            "correct these values (docs/doctor.md, 'Snapshot format'), or collect the "
            "snapshot again with `ecs-gpu doctor --save-snapshot`",
        )
    if is_raw:
        when = now if now is not None else datetime.now(UTC)
        return raw.infer_collection(data, source, when, cluster=cluster, service=service)
    _check_choice(data[COLLECTION_KEY], source, cluster=cluster, service=service)
    checked: Snapshot = data
    return checked


def _check_choice(
    meta: dict[str, Any], source: str, *, cluster: str | None, service: str | None
) -> None:
    """--cluster/--service with a collected snapshot: only the target it already names."""
    target = meta.get("target") or {}
    for flag, key, given in (("--cluster", "cluster", cluster), ("--service", "service", service)):
        if given is not None and given != target.get(key):
            raise BadInputError(
                f"{source}: {flag} {given}, but the snapshot was collected for {key} "
                f"{target.get(key)} ({COLLECTION_KEY}.target.{key}). Fix: drop {flag}; it "
                f"chooses a target only in a snapshot of raw AWS output (no {COLLECTION_KEY})."
            )


def parse(data: bytes, source: str, **choice: Any) -> Snapshot:
    """A snapshot from the bytes of a file; ``source`` names it in every error.

    ``choice``: :func:`validate`'s cluster, service and now.
    """
    return validate(_decode(data, source), source, **choice)


def load(path: Path | str, **choice: Any) -> Snapshot:
    """Read and validate a snapshot file; anything that is not one is bad input (exit 2)."""
    p = Path(path)
    data = read_bytes(p, option="--from-snapshot", kind="snapshot", limit=MAX_BYTES, fix=_FIX)
    return parse(data, str(p), **choice)


def _json_default(obj: object) -> str:
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def to_json_safe(obj: Any) -> Any:
    """The object as it round-trips through JSON (datetimes become ISO strings)."""
    return json.loads(json.dumps(obj, default=_json_default))


def dumps(snapshot: Snapshot) -> str:
    """The snapshot as the file --save-snapshot writes (sorted keys, one trailing newline)."""
    return json.dumps(snapshot, indent=2, sort_keys=True, default=_json_default) + "\n"
