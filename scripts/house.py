#!/usr/bin/env python3
"""The house rules of docs/architecture.md, measured from the code's own files.

Each rule is computed from the source (AST and text), printed as one line with
its measure and its bound, and the script exits 1 when any rule is broken, so
scripts/test.sh (the README's test command) keeps them. ``--json`` prints the
same as one JSON object. Run from anywhere: ``python scripts/house.py [ROOT]``.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "ecs_gpu"
MAX_TOP_LEVEL_MODULES = 8
MIN_LAYERS = 5
MAX_MODULE_LINES = 800
MAX_CLI_MODULE_LINES = 400
MAX_FUNCTION_LINES = 100
MAX_COMPLEXITY = 25
MAX_TABLE_CELL = 400
# A module's docstring says what it owns and why in a few lines; the long why
# belongs in docs/ or beside the code it explains.
MAX_MODULE_DOCSTRING_LINES = 15
MIN_MIRRORED = 0.85
MAX_TEST_FILE_LINES = 800
MAX_LOOSE_TEST_HELPERS = 3
# The modules a user or the wheel starts from: the console script, the
# package, `python -m ecs_gpu` and the CDK construct.
ENTRY_POINTS = ("ecs_gpu", "ecs_gpu.__main__", "ecs_gpu.cli", "ecs_gpu.infra.service")
# A doctor or preflight check id: a link's prefix and three digits.
CHECK_ID = re.compile(r"\b(?:ALM|ASG|CAP|ECS|GPU|HOST|LT|MET|PLC|PRE|SCL|STK|SVC|TD|TSK)\d{3}\b")
# What reads as the project's development history rather than what is.
HISTORY = re.compile(
    r"\bissues? ?#?\d+\b"
    r"|\bissue [\"“']"
    r"|\b(?:the|this|that|its|an|each) issue(?:'s)?\b"
    r"|\b(?:this|last|earlier|previous|that|next|a later|the first|the second) stop\b"
    r"|\bstops? \d+\b"
    r"|\bbefore this (?:stop|change)\b",
    re.IGNORECASE,
)
# The product's text: what a user or the next maintainer reads.
PRODUCT_TEXT = ("src", "docs", "benchmarks", "examples", "README.md")
TEXT_SUFFIXES = (".py", ".md", ".toml", ".json", ".sh", ".tf")


@dataclass
class Rule:
    name: str
    measure: str
    ok: bool
    offenders: list[str] = field(default_factory=list)


def _modules(src: Path) -> dict[str, Path]:
    """Every module under src/ecs_gpu by dotted name (a package by its own name)."""
    out = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _complexity(fn: ast.AST) -> int:
    """McCabe: 1 + each if, for, while, except, assert, comprehension and its ifs,
    match case, conditional expression and boolean operator (nested functions apart)."""
    n = 1
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        branches = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.Assert)
        if isinstance(node, (*branches, ast.IfExp, ast.match_case)):
            n += 1
        elif isinstance(node, ast.comprehension):
            n += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            n += len(node.values) - 1
        todo.extend(ast.iter_child_nodes(node))
    return n


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The ecs_gpu modules ``name`` imports, anywhere in its file."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    out: set[str] = set()
    for dotted in found:
        parts = dotted.split(".")
        # `import a.b.c` runs a and a.b too.
        out.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return {m for m in out if m in modules}


def _reachable(modules: dict[str, Path]) -> set[str]:
    seen: set[str] = set()
    todo = [m for m in ENTRY_POINTS if m in modules]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parent = m.rpartition(".")[0]
        if parent:
            todo.append(parent)
        todo.extend(_imports(m, modules[m], modules) - seen)
    return seen


def _product_files(root: Path) -> Iterator[Path]:
    for top in PRODUCT_TEXT:
        base = root / top
        if base.is_file():
            yield base
        elif base.is_dir():
            for path in sorted(base.rglob("*")):
                if (
                    path.is_file()
                    and path.suffix in TEXT_SUFFIXES
                    and "__pycache__" not in str(path)
                ):
                    yield path


def _table_cells(text: str) -> Iterator[str]:
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if in_code or not line.lstrip().startswith("|"):
            continue
        # A pipe inside backticks or escaped does not end a cell.
        body = re.sub(r"`[^`]*`", lambda m: "x" * len(m.group(0)), line.replace("\\|", "xx"))
        bounds = [i for i, ch in enumerate(body) if ch == "|"]
        for a, b in itertools.pairwise(bounds):
            yield line[a + 1 : b].strip()


def _design_derivations(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the functions in ecs_gpu.design that work a value out of a Spec."""
    out: dict[str, set[str]] = {}
    for name, path in modules.items():
        if not name.startswith(f"{PACKAGE}.design.") or name.endswith(".design"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and fn.args.args:
                ann = fn.args.args[0].annotation
                if isinstance(ann, ast.Name) and ann.id == "Spec":
                    out.setdefault(name, set()).add(fn.name)
    return out


def _derivation_calls(name: str, path: Path, derivations: dict[str, set[str]]) -> list[str]:
    """Calls in ``name`` of a design derivation, by module alias or imported name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}  # local name -> module
    direct: dict[str, str] = {}  # local name -> module.function
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in derivations:
                    aliases[a.asname or a.name] = full
                elif a.name in derivations.get(node.module, ()):
                    direct[a.asname or a.name] = full
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in direct:
            found.append(f"{name}:{node.lineno} {direct[f.id]}")
        elif (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id in aliases
            and f.attr in derivations[aliases[f.value.id]]
        ):
            found.append(f"{name}:{node.lineno} {aliases[f.value.id]}.{f.attr}")
    return found


class House:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.src = root / "src"
        self.modules = _modules(self.src)

    def rules(self) -> list[Rule]:
        checks: list[Callable[[], Rule]] = [
            self.top_level,
            self.layers,
            self.module_lines,
            self.docstrings,
            self.functions,
            self.reachable,
            self.check_ids,
            self.design_once,
            self.history,
            self.table_cells,
            self.mirrored,
            self.test_files,
        ]
        return [c() for c in checks]

    def top_level(self) -> Rule:
        top = sorted(p.name for p in (self.src / PACKAGE).glob("*.py"))
        return Rule(
            "modules directly in src/ecs_gpu",
            f"{len(top)} (at most {MAX_TOP_LEVEL_MODULES}): {', '.join(top)}",
            len(top) <= MAX_TOP_LEVEL_MODULES,
        )

    def layers(self) -> Rule:
        config = tomllib.loads((self.root / "pyproject.toml").read_text(encoding="utf-8"))
        contracts = config.get("tool", {}).get("importlinter", {}).get("contracts", [])
        sizes = [len(c.get("layers", [])) for c in contracts if c.get("type") == "layers"]
        best = max(sizes, default=0)
        return Rule(
            "import-linter layers contract",
            f"{best} layers (at least {MIN_LAYERS})",
            best >= MIN_LAYERS,
        )

    def module_lines(self) -> Rule:
        bad = []
        for name, path in self.modules.items():
            n = len(path.read_text(encoding="utf-8").splitlines())
            limit = MAX_CLI_MODULE_LINES if name.startswith(f"{PACKAGE}.cli") else MAX_MODULE_LINES
            if n > limit:
                bad.append(f"{path.relative_to(self.root)}: {n} lines (at most {limit})")
        return Rule(
            "module length",
            f"{len(bad)} modules over {MAX_MODULE_LINES} lines (cli: {MAX_CLI_MODULE_LINES})",
            not bad,
            bad,
        )

    def docstrings(self) -> Rule:
        bad = []
        for path in self.modules.values():
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=True)
            n = len(doc.splitlines()) if doc else 0
            if n > MAX_MODULE_DOCSTRING_LINES:
                bad.append(f"{path.relative_to(self.root)}: {n} lines")
        return Rule(
            "module docstrings",
            f"{len(bad)} over {MAX_MODULE_DOCSTRING_LINES} lines",
            not bad,
            bad,
        )

    def functions(self) -> Rule:
        bad = []
        longest = worst = 0
        for path in self.modules.values():
            for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
                lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
                cc = _complexity(fn)
                longest, worst = max(longest, lines), max(worst, cc)
                if lines > MAX_FUNCTION_LINES or cc > MAX_COMPLEXITY:
                    where = f"{path.relative_to(self.root)}:{fn.lineno}"
                    bad.append(f"{where} {fn.name}: {lines} lines, complexity {cc}")
        return Rule(
            "function size",
            f"longest {longest} lines (at most {MAX_FUNCTION_LINES}), most complex {worst} "
            f"(at most {MAX_COMPLEXITY})",
            not bad,
            bad,
        )

    def reachable(self) -> Rule:
        seen = _reachable(self.modules)
        bad = sorted(set(self.modules) - seen)
        return Rule(
            "reachable from the entry points",
            f"{len(seen)} of {len(self.modules)} modules ({', '.join(ENTRY_POINTS)})",
            not bad,
            bad,
        )

    def check_ids(self) -> Rule:
        bad = []
        home = self.src / PACKAGE / "checks"
        for path in self.modules.values():
            if path.is_relative_to(home):
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for m in CHECK_ID.finditer(line):
                    bad.append(f"{path.relative_to(self.root)}:{i} {m.group(0)}")
        return Rule(
            "check ids only in ecs_gpu/checks",
            f"{len(bad)} mentions elsewhere in src",
            not bad,
            bad,
        )

    def design_once(self) -> Rule:
        derivations = _design_derivations(self.modules)
        bad = []
        for name, path in self.modules.items():
            if name == f"{PACKAGE}.design" or name.startswith(f"{PACKAGE}.design."):
                continue
            bad.extend(_derivation_calls(name, path, derivations))
        count = sum(map(len, derivations.values()))
        return Rule(
            "the spec resolved once (Design.of)",
            f"{len(bad)} calls of the {count} design derivations outside ecs_gpu/design",
            not bad,
            bad,
        )

    def history(self) -> Rule:
        bad = []
        for path in _product_files(self.root):
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for m in HISTORY.finditer(line):
                    bad.append(f"{path.relative_to(self.root)}:{i} {m.group(0)!r}")
        return Rule(
            "no issue numbers or stops in the product's text",
            f"{len(bad)} mentions in {', '.join(PRODUCT_TEXT)}",
            not bad,
            bad,
        )

    def table_cells(self) -> Rule:
        bad = []
        longest = 0
        for path in _product_files(self.root):
            if path.suffix != ".md":
                continue
            for cell in _table_cells(path.read_text(encoding="utf-8")):
                longest = max(longest, len(cell))
                if len(cell) > MAX_TABLE_CELL:
                    bad.append(f"{path.relative_to(self.root)}: {len(cell)} chars: {cell[:60]}...")
        return Rule(
            "Markdown table cells",
            f"{len(bad)} over {MAX_TABLE_CELL} characters (longest {longest})",
            not bad,
            bad,
        )

    def mirrored(self) -> Rule:
        tests = self.root / "tests"
        missing = []
        counted = 0
        for path in self.modules.values():
            if path.name in ("__init__.py", "__main__.py"):
                continue
            counted += 1
            rel = path.relative_to(self.src / PACKAGE)
            folder = tests.joinpath(*rel.parts[:-1])
            if not any(folder.glob(f"test_{path.stem}*.py")):
                missing.append(
                    f"{path.relative_to(self.root)} (no {folder.relative_to(self.root)}"
                    f"/test_{path.stem}*.py)"
                )
        share = 1 - len(missing) / counted if counted else 1.0
        return Rule(
            "tests mirror src",
            f"{share:.0%} of {counted} modules have tests/<same folder>/test_<module>*.py "
            f"(at least {MIN_MIRRORED:.0%})",
            share >= MIN_MIRRORED,
            missing,
        )

    def test_files(self) -> Rule:
        tests = self.root / "tests"
        long = []
        for path in sorted(tests.rglob("*.py")):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > MAX_TEST_FILE_LINES:
                long.append(f"{path.relative_to(self.root)}: {n} lines")
        loose = sorted(
            p.name
            for p in tests.glob("*.py")
            if not p.name.startswith("test_") and p.name not in ("conftest.py", "__init__.py")
        )
        ok = not long and len(loose) <= MAX_LOOSE_TEST_HELPERS
        return Rule(
            "test files",
            f"{len(long)} over {MAX_TEST_FILE_LINES} lines; {len(loose)} helper modules loose at "
            f"tests/ (at most {MAX_LOOSE_TEST_HELPERS}: {', '.join(loose) or 'none'})",
            ok,
            long + ([f"loose helpers: {', '.join(loose)}"] if len(loose) > 3 else []),
        )


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    rules = House(root).rules()
    if as_json:
        print(json.dumps([r.__dict__ for r in rules], indent=2))
    else:
        for r in rules:
            print(f"{'ok  ' if r.ok else 'FAIL'} {r.name}: {r.measure}")
            for line in r.offenders[:50] if not r.ok else []:
                print(f"       {line}")
            if not r.ok and len(r.offenders) > 50:
                print(f"       ... and {len(r.offenders) - 50} more")
    return 0 if all(r.ok for r in rules) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
