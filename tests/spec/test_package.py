"""The spec package's public face (spec/__init__.py) and its rule registry (spec/rules/)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import ecs_gpu.spec
import ecs_gpu.spec.rules
from ecs_gpu.spec.rules import NOTES, RULES


def test_every_exported_name_resolves() -> None:
    for name in ecs_gpu.spec.__all__:
        assert hasattr(ecs_gpu.spec, name), name


def test_every_rule_function_is_registered() -> None:
    # RULES and NOTES list the rules by hand (in report order): a rule written
    # in a concept module and left out of both would never run.
    registered = {f.__qualname__ + "@" + f.__module__ for f in (*RULES, *NOTES)}
    found = set()
    for info in pkgutil.iter_modules(ecs_gpu.spec.rules.__path__):
        module = importlib.import_module(f"ecs_gpu.spec.rules.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and fn.__annotations__.get("return") == (
                "Iterator[Problem]"
            ):
                found.add(f"{name}@{module.__name__}")
    assert found == registered
    assert len(RULES) + len(NOTES) == len(registered)
