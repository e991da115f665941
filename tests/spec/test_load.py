"""Loading a spec: the valid baselines, files, the CLI, and a fuzz test that nothing but a Spec or a
SpecError/BadInputError naming the file ever escapes (spec/load.py)."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_gpu.errors import EXIT_BAD_INPUT, BadInputError, SpecError
from ecs_gpu.spec import (
    Spec,
    load_spec,
    parse_spec,
)

from .specdata import (
    _FIELD_TYPES,
    CONC,
    FULL,
    MINIMAL,
    PATH,
    SECTIONS,
    TABLES,
    dumps,
    problems,
    with_,
)


def test_full_spec_is_valid() -> None:
    spec = parse_spec(dumps(FULL), PATH)
    assert spec.capacity.reserved_instances == 2
    assert spec.load_balancer is not None and spec.load_balancer.scheme == "internal"
    assert spec.tasks_per_instance == 1


def test_minimal_spec_takes_the_documented_defaults() -> None:
    spec = parse_spec(MINIMAL, PATH)
    assert spec.service.gpus_per_task == 1
    assert spec.service.container_port == 8000
    assert spec.service.nvidia_driver_capabilities == "utility,compute"
    assert spec.service.log_retention_days == 30
    assert spec.capacity.min_instances == 0
    assert spec.capacity.target_capacity_percent == 100
    assert spec.capacity.root_volume_gib == 200
    assert spec.scaling.min_tasks == 1
    assert spec.scaling.gpu_target_percent == spec.scaling.cpu_target_percent == 70.0
    assert (spec.scaling.scale_in_cooldown_s, spec.scaling.scale_out_cooldown_s) == (300, 60)
    assert spec.network is None and spec.load_balancer is None


def test_example_spec_is_valid() -> None:
    spec = load_spec(Path(__file__).parents[2] / "examples" / "g5-vllm.toml")
    assert spec.instance.name == "g5.xlarge"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(BadInputError) as exc:
        load_spec(path)
    assert str(path) in exc.value.message and "Fix: check the path" in exc.value.message
    assert exc.value.exit_code == EXIT_BAD_INPUT


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"SPEC .*: is a folder, not a spec file") as exc:
        load_spec(tmp_path)
    assert "Fix:" in exc.value.message


def test_nul_in_path() -> None:
    with pytest.raises(BadInputError, match="Fix: check the path"):
        load_spec("spec\0.toml")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(MINIMAL.replace('"nginx"', '"ngi\xf1x"').encode("latin-1"))
    with pytest.raises(BadInputError) as exc:
        load_spec(path)
    assert exc.value.exit_code == EXIT_BAD_INPUT
    at = MINIMAL.index("ngi") + 3
    line = MINIMAL[:at].count("\n") + 1
    assert exc.value.message.startswith(
        f"SPEC {path}: not UTF-8 text: byte {at} (line {line}) is 0xf1. "
    )
    assert "Fix: save the spec as UTF-8" in exc.value.message


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(MINIMAL + "\n[scaling\n", encoding="utf-8")
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    line = exc.value.problems[0]
    assert line.startswith(f"{path}: not valid TOML") and "line 14" in line and "Fix:" in line


def test_load_spec_names_the_file_in_rule_errors(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(MINIMAL.replace("max_tasks = 2", "max_tasks = 3"), encoding="utf-8")
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    assert exc.value.problems[0].startswith(f"{path}: scaling.max_tasks = 3")


def test_cli_validate_bad_spec_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ecs_gpu import cli

    path = tmp_path / "bad.toml"
    path.write_text(with_("service", gpus_per_task=2), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "Traceback" not in out
    assert "service.gpus_per_task" in out and "Fix:" in out


FUZZ_PATH = "fuzz/spec.toml"

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
# Edge values a user could type: boundaries, TOML's unbounded integers, nan/inf, ids.
_edges = st.sampled_from(
    [
        *(0, -1, 1, 2, 100, 101, 65536, 2**63, 10**400, -(10**400), 0.0, -0.0, 1e308, 0.5),
        *(5e-324, -1e308, True, "0.0.0.0/0", "concurrency", "triton", "Hibernated"),
        *("", "-", "g5.xlarge", "g5.48xlarge", "p2.xlarge", "cr-0123456789abcdef0", "/health"),
        *("internet-facing", "subnet-0123456789abcdef9", "10.0.0.0/8", "all"),
    ]
)
_scalars = st.one_of(
    _edges,
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    _text,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=8,
)


@st.composite
def _mutated_specs(draw: st.DrawFn) -> str:
    """FULL with 1-3 random edits, mostly to real keys so most reach the rules."""
    doc: dict[str, Any] = copy.deepcopy(FULL)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        section = draw(st.sampled_from([*SECTIONS] * 3 + ["sevrice", "extra"]))
        action = draw(st.sampled_from(["set"] * 6 + ["delete", "replace-section", "drop-section"]))
        if action == "drop-section":
            doc.pop(section, None)
        elif action == "replace-section":
            doc[section] = draw(_values)
        else:
            table = doc.setdefault(section, {})
            if not isinstance(table, dict):
                continue
            known = list(SECTIONS[section].model_fields) if section in SECTIONS else ["x"]
            key = draw(
                st.one_of(st.sampled_from(known), _text)
                if draw(st.booleans())
                else st.sampled_from(known)
            )
            if action == "delete":
                table.pop(key, None)
            else:
                table[key] = draw(_values)
    return dumps(doc)


_INT_EDGES = st.sampled_from([0, -1, 1, 2, 3, 8, 64, 127, 128, 4096, 65535, 65536, 10**400])
# Floats that break arithmetic downstream (the simulator multiplies and divides them):
# overflow to inf, underflow to 0, a signed zero.
_FLOAT_EDGES = st.sampled_from([1e308, -1e308, 5e-324, -0.0, 0.0, 1e-300, 86400.5, 1e6])
_SECRET_ARNS = st.sampled_from(
    [
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbCdEf",
        "arn:aws:ssm:us-east-1:123456789012:parameter/hf-token",
    ]
)
_ENV_NAMES = st.one_of(st.sampled_from(["HF_TOKEN", "HF_HOME", "NVIDIA_VISIBLE_DEVICES"]), _text)


_TYPED: dict[str, st.SearchStrategy[Any]] = {
    "integer": st.one_of(_INT_EDGES, st.integers()),
    "number": st.one_of(
        _INT_EDGES,
        _FLOAT_EDGES,
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-5, 200),
    ),
    "boolean": st.booleans(),
    "string": st.one_of(_edges.filter(lambda v: isinstance(v, str)), _text),
    "array": st.lists(st.one_of(_edges.filter(lambda v: isinstance(v, str)), _text), max_size=3),
    "object": st.dictionaries(_ENV_NAMES, st.one_of(_SECRET_ARNS, _text), max_size=3),
}


def test_typed_fuzz_reaches_every_key() -> None:
    for table, model in TABLES.items():
        for key, field in model.model_fields.items():
            if table + "." + key not in TABLES:
                assert (table + "." + key) in _FIELD_TYPES, (table, key, field)
    assert set(_FIELD_TYPES.values()) <= set(_TYPED)


@st.composite
def _typed_mutations(draw: st.DrawFn) -> str:
    """FULL with 1-3 keys set to values of the key's own type, to reach the cross-field rules."""
    # Both baselines: the GPU signal (FULL) and concurrency (CONC), so the rules of
    # either reach their edges.
    doc: dict[str, Any] = copy.deepcopy(draw(st.sampled_from([FULL, CONC])))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        loc = draw(st.sampled_from(sorted(_FIELD_TYPES)))
        *tables, key = loc.split(".")
        cur = doc
        for t in tables:
            cur = cur.setdefault(t, {})
        cur[key] = draw(_TYPED[_FIELD_TYPES[loc]])
    return dumps(doc)


def _check_outcome(run: Callable[[], Spec], path: str) -> None:
    try:
        spec = run()
    except SpecError as e:
        assert e.path == path
        assert e.problems
        for line in e.problems:
            assert line.startswith(f"{path}: "), line
            assert "Fix: " in line, line
            assert "Fix: correct the value" not in line, line  # every rule says how
    except BadInputError as e:
        assert path in e.message
    else:
        assert isinstance(spec, Spec)
        # A valid spec is one whose service can run: at least one task fits an instance.
        assert spec.tasks_per_instance >= 1
        for line in spec.warnings(path):
            assert line.startswith(f"{path}: ") and ". Fix: " in line, line
        # Its numbers reach the simulator finite.
        from ecs_gpu.sim.params import from_spec

        for name, v in vars_of(from_spec(spec)).items():
            if isinstance(v, float):
                assert math.isfinite(v), (name, v)


def vars_of(obj: Any) -> dict[str, Any]:
    """A slotted dataclass's fields by name."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


_FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@_FUZZ
@given(_mutated_specs())
def test_fuzz_structurally_mutated_specs(text: str) -> None:
    _check_outcome(lambda: parse_spec(text, FUZZ_PATH), FUZZ_PATH)


@_FUZZ
@given(_typed_mutations())
def test_fuzz_well_typed_values(text: str) -> None:
    _check_outcome(lambda: parse_spec(text, FUZZ_PATH), FUZZ_PATH)


@_FUZZ
@given(st.text(max_size=300))
def test_fuzz_random_text(text: str) -> None:
    _check_outcome(lambda: parse_spec(text, FUZZ_PATH), FUZZ_PATH)


@_FUZZ
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "spec.toml"
    path.write_bytes(data)
    _check_outcome(lambda: load_spec(path), str(path))


@_FUZZ
@given(st.binary(max_size=200))
def test_fuzz_bytes_spliced_into_a_valid_spec(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    raw = dumps(FULL).encode()
    cut = len(data) % (len(raw) + 1)
    path = tmp_path_factory.mktemp("splice") / "spec.toml"
    path.write_bytes(raw[:cut] + data + raw[cut:])
    _check_outcome(lambda: load_spec(path), str(path))


def test_integer_too_long_to_read() -> None:
    # tomllib raises a plain ValueError (Python's int() digit limit) for this.
    found = problems(MINIMAL.replace("max_instances = 2", "max_instances = 1" + "0" * 5000))
    assert found == [
        f"{PATH}: has an integer too long to read. Fix: write numbers with fewer digits."
    ]
