"""Shared by the host tests: the specs the host contract holds on, and the real tools.

Checked with the real tools a user's instance and CI would trust: Debian's
``cloud-init schema``, ``shellcheck``, the CloudWatch agent's own JSON schema,
and bash itself running the scripts against stand-in system commands.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecs_gpu import host
from ecs_gpu.spec import Spec, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[2]

BUILT_SPEC = """
[service]
name = "llm-4gpu"
image = "example/llm:1"
gpus_per_task = 2
cpu_units = 8192
memory_mib = 65536

[capacity]
instance_type = "g6.12xlarge"
max_instances = 3

[scaling]
max_tasks = 6
gpu_target_percent = 55.5
cpu_target_percent = 80
"""


# The built spec with a warm pool and a private ECR image: the warm-pool unit,
# its script and the registry login are rendered and checked like the rest.
ECR_IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/team/llm:1"
WARM_SPEC = (
    BUILT_SPEC.replace('image = "example/llm:1"', f'image = "{ECR_IMAGE}"')
    + "\n[capacity.warm_pool]\nmin_size = 1\n"
)

# Every example (the host contract holds on each) plus the specs built here.
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.toml"))


@pytest.fixture(params=[*EXAMPLES, "built", "warm"])
def spec(request: pytest.FixtureRequest) -> Spec:
    if request.param == "built":
        return parse_spec(BUILT_SPEC, "built.toml")
    if request.param == "warm":
        return parse_spec(WARM_SPEC, "warm.toml")
    return load_spec(ROOT / "examples" / request.param)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not installed; scripts/test.sh installs it (apt-get install {name}). "
            "These checks run the real tool and are never skipped."
        )
    return path


def _write_files(user_data: str) -> dict[str, dict[str, Any]]:
    """path -> write_files entry, its content decoded as cloud-init writes it (gz+b64)."""
    doc = yaml.safe_load(user_data)
    return {f["path"]: {**f, "content": host.file_content(f)} for f in doc["write_files"]}


def _decoded_user_data(spec: Spec) -> str:
    """The user data with every file's decoded text appended: what the rule checks read."""
    user_data = host.cloud_config(spec)
    return "\n".join([user_data, *(f["content"] for f in _write_files(user_data).values())])


@pytest.fixture(scope="session")
def specs() -> dict[str, Spec]:
    """Every example, by file name."""
    return {name: load_spec(ROOT / "examples" / name) for name in EXAMPLES}


def _shellcheck(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.sh"
    path.write_text(script)
    return subprocess.run(
        [_tool("shellcheck"), "--severity=style", "--shell=bash", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
