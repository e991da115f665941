"""Build hook: ship src/ecs_gpu/data/ecs_gpu-node.pth at the wheel's root.

Python runs a site-packages ``.pth`` line that starts with ``import`` at
start-up; this one makes jsii use the Node that pip installed even when a
user's app imports aws_cdk before ecs_gpu (src/ecs_gpu/node.py). Everything
else about the build is in pyproject.toml.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "ecs_gpu-node.pth"


class BuildPyWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(
            os.path.join("src", "ecs_gpu", "data", PTH), os.path.join(self.build_lib, PTH)
        )

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


setup(cmdclass={"build_py": BuildPyWithPth})
