"""Where things live on a GPU instance (host/layout.py): each path is the one the user data
writes, the units run, the scripts call and the host agent ships, on every spec shape."""

from __future__ import annotations

from ecs_gpu import host
from ecs_gpu.host import layout
from ecs_gpu.spec import Spec

from .conftest import _write_files


def _unit(files: dict[str, dict[str, object]], name: str) -> str:
    return str(files[f"{layout.SYSTEMD_DIR}/{name}"]["content"])


def test_each_unit_runs_its_script_and_appends_to_the_setup_log(spec: Spec) -> None:
    files = _write_files(host.cloud_config(spec))
    scripts = {layout.SETUP_UNIT: layout.SETUP_SCRIPT_PATH}
    if spec.capacity.warm_pool is not None:
        scripts[layout.WARM_UNIT] = layout.WARM_SCRIPT_PATH
    else:
        assert f"{layout.SYSTEMD_DIR}/{layout.WARM_UNIT}" not in files
        assert layout.WARM_SCRIPT_PATH not in files
    for unit, script in scripts.items():
        assert script in files and files[script]["permissions"] == "0755"
        text = _unit(files, unit).splitlines()
        assert f"ExecStart={script}" in text
        assert f"StandardOutput=append:{layout.HOST_SETUP_LOG}" in text
        assert f"StandardError=append:{layout.HOST_SETUP_LOG}" in text


def test_the_setup_log_is_shipped_by_the_host_agent(spec: Spec) -> None:
    shipped = host.agent_config(spec)["logs"]["logs_collected"]["files"]["collect_list"]
    paths = [f["file_path"] for f in shipped]
    assert layout.HOST_SETUP_LOG in paths and layout.AGENT_LOG in paths


def test_ecs_config_is_written_and_nothing_lands_where_fetch_config_writes(spec: Spec) -> None:
    files = _write_files(host.cloud_config(spec))
    assert layout.ECS_CONFIG_PATH in files
    assert not any(p.startswith(layout.AGENT_OWNED_DIR) for p in files)


def test_the_setup_script_calls_the_agent_and_tools_where_they_are(spec: Spec) -> None:
    script = host.setup_script(spec)
    for path in (layout.AGENT_CTL, layout.NVIDIA_SMI, layout.AGENT_LOG):
        assert path in script, path
    assert f"dnf install -y {layout.AGENT_PACKAGE}" in script
    if spec.capacity.warm_pool is not None:
        # The warm-pool script reads the instance's identity from the metadata service.
        assert f"readonly IMDS={layout.IMDS_URL}" in host.warm_pool_script(spec).replace("'", "")
