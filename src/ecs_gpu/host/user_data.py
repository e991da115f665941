"""The launch template's user data: a ``#cloud-config`` that writes ecs.config,
the agent config, the scripts and units, then enables the units; and the
readers that decode it back (tests, doctor).
"""

from __future__ import annotations

import base64
import binascii
import gzip
from collections.abc import Mapping
from typing import Any, Final

import yaml

from ecs_gpu.contracts import gpu_metric
from ecs_gpu.host.agent import agent_config_json, ecs_config
from ecs_gpu.host.deflate import gzip_bytes
from ecs_gpu.host.layout import ECS_CONFIG_PATH, SETUP_SCRIPT_PATH, SYSTEMD_DIR, WARM_SCRIPT_PATH
from ecs_gpu.host.scripts import setup_script, units, warm_pool_script
from ecs_gpu.spec import Spec

# cloud-init's write_files encoding for gzip then base64 (its schema's
# "gz+b64"): the scripts and units travel compressed, which keeps the launch
# template, and so the whole template, under CloudFormation's TemplateBody
# limit (docs/host.md "Size").
GZ_B64: Final = "gz+b64"


def cloud_config_document(spec: Spec, *, spot: bool = False) -> dict[str, Any]:
    """The cloud-config as data (what :func:`cloud_config` serializes)."""

    def file(
        path: str, content: str, permissions: str | None = None, *, packed: bool = True
    ) -> dict[str, str]:
        # cloud-init's defaults (its schema): owner root:root, permissions
        # 0644. Left out rather than repeated: every byte counts toward the
        # template's size limit.
        entry = (
            {"path": path} if permissions is None else {"path": path, "permissions": permissions}
        )
        if packed:
            return {**entry, "encoding": GZ_B64, "content": gz_b64(content)}
        return {**entry, "content": content}

    files = [
        # write_files runs in cloud-init's init stage, long before ecs.service:
        # on the ECS AMIs that unit is ordered After=cloud-final.service
        # (aws/amazon-ecs-agent@dd4d139 packaging/amazon-linux-ami-integrated/
        # ecs.service), so the agent reads ECS_CLUSTER from this file at its
        # first start. The same ordering means nothing here may wait.
        # Plain: a few lines that name the cluster, readable in the console's
        # user data view, and compression saves nothing on them.
        file(ECS_CONFIG_PATH, ecs_config(spec, spot=spot), packed=False),
        # Plain but compact: the GPU-metric contract test reads it from the
        # template (tests/infra/test_single_source.py).
        file(gpu_metric.AGENT_CONFIG_PATH, agent_config_json(spec), packed=False),
        file(SETUP_SCRIPT_PATH, setup_script(spec), "0755"),
    ]
    if spec.capacity.warm_pool is not None:
        files.append(file(WARM_SCRIPT_PATH, warm_pool_script(spec), "0755"))
    unit_files = units(spec)
    files += [file(f"{SYSTEMD_DIR}/{name}", text) for name, text in unit_files.items()]
    return {
        "write_files": files,
        # Exec form, no shell: the scripts are the only shell and are linted.
        # enable: the units run at every boot (a warm start is a second boot,
        # and cloud-init's runcmd runs once). --now --no-block: start them on
        # this first boot but only enqueue the job, so cloud-final, and the
        # ecs.service ordered after it, go on at once.
        "runcmd": [
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", "--no-block", *unit_files],
        ],
    }


def gz_b64(text: str) -> str:
    """``text`` as cloud-init's ``gz+b64`` write_files content.

    Compressed by :mod:`ecs_gpu.host.deflate`, not :mod:`gzip`: the same files give
    the same bytes at every synth on every machine, since a changed user
    data is a new launch template version, and so an instance refresh.
    """
    return base64.b64encode(gzip_bytes(text.encode())).decode()


def file_content(entry: Mapping[str, Any]) -> str:
    """The text cloud-init writes for one ``write_files`` entry, decoded per its encoding.

    Raises ValueError for an encoding this module never writes or content
    that does not decode.
    """
    content = str(entry.get("content", ""))
    encoding = entry.get("encoding", "text/plain")
    if encoding == "text/plain":
        return content
    if encoding != GZ_B64:
        raise ValueError(f"write_files encoding {encoding!r} is not one ecs-gpu writes")
    try:
        return gzip.decompress(base64.b64decode(content, validate=True)).decode()
    except (binascii.Error, OSError, EOFError, UnicodeDecodeError) as e:
        raise ValueError(f"write_files content is not {GZ_B64}: {e}") from None


def written_files(user_data: str) -> dict[str, str]:
    """Path -> decoded text of every file a ``#cloud-config`` user data writes."""
    doc = yaml.safe_load(user_data)
    return {str(f["path"]): file_content(f) for f in doc.get("write_files", [])}


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks so the user data reads like the files."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def cloud_config(spec: Spec, *, spot: bool = False) -> str:
    """The full user data: ``#cloud-config`` followed by YAML (``spot``: the Spot group's)."""
    body = yaml.dump(
        cloud_config_document(spec, spot=spot), Dumper=_Dumper, sort_keys=False, width=10_000
    )
    return "#cloud-config\n" + body
