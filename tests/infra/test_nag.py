"""The cdk-nag acknowledgements (infra/nag.py): each with its reason, each documented, and the
module importable before the construct that applies them."""

from __future__ import annotations

from pathlib import Path

from ecs_gpu.infra import nag


def test_every_acknowledgement_has_a_written_reason() -> None:
    assert nag.ACKS
    for key, a in nag.ACKS.items():
        assert a.rule.startswith("AwsSolutions-")
        assert len(a.reason.split()) >= 15, f"{key}: reason too thin"


def test_docs_list_every_acknowledgement() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "template.md").read_text("utf-8")
    for a in nag.ACKS.values():
        assert f"`{a.rule.split('[')[0]}" in doc, a.rule


def test_nag_imports_first_and_never_imports_service() -> None:
    """infra.nag <-> infra.service: service imports nag, nag never imports service."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    import ecs_gpu.infra.nag as nag

    tree = ast.parse(Path(nag.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "ecs_gpu.infra.service" not in imported
    code = (
        "import sys\n"
        "import ecs_gpu.infra.nag\n"
        "assert 'ecs_gpu.infra.service' not in sys.modules\n"
        "from ecs_gpu.infra.service import GpuService\n"
        "from ecs_gpu.template.synth import synth_template\n"
        "from ecs_gpu.spec import load_spec\n"
        "t = synth_template(load_spec('examples/g5-vllm.toml'))\n"
        "assert any(r['Type'] == 'AWS::ECS::Service' for r in t['Resources'].values())\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, cwd=root)
