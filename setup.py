"""Build hook: ship src/ecs_gpu/data/ecs_gpu-node.pth at the wheel's root (also editable).

Python runs a site-packages ``.pth`` line that starts with ``import`` at
start-up; this one makes jsii use the Node that pip installed even when a
user's app imports aws_cdk before ecs_gpu (src/ecs_gpu/node.py). Everything
else about the build is in pyproject.toml.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "ecs_gpu-node.pth"


class BuildPyWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(
            os.path.join("src", "ecs_gpu", "data", PTH), os.path.join(self.build_lib, PTH)
        )

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


class EditableWheelWithPth(editable_wheel):
    """``pip install -e .`` gets the .pth too.

    An editable wheel carries none of build_py's output (its own .pth points
    at src/ instead); what it writes into the unpacked wheel's root lands in
    site-packages. Setuptools writes the namespace packages' .pth files there in
    ``_install_namespaces``, so ours goes beside them. Python reads .pth files
    in name order: setuptools' ``__editable__.*.pth`` (which makes ecs_gpu
    importable) runs first. tests/test_node.py makes a real editable install
    and checks the file arrives and works.
    """

    def _install_namespaces(self, installation_dir: str, pth_prefix: str) -> None:
        super()._install_namespaces(installation_dir, pth_prefix)
        self.copy_file(
            os.path.join("src", "ecs_gpu", "data", PTH), os.path.join(installation_dir, PTH)
        )


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
