"""``python -m ecs_gpu``: the same as the ``ecs-gpu`` command."""

from ecs_gpu.cli import main

main()
