"""CDK constructs, one module per part of the GPU service.

Every module here imports ``aws_cdk`` at its top, and Python runs this file
before any of them, so jsii is pointed at the Node that pip installed
(:func:`ecs_gpu.node.ensure_node`) once, before the first ``aws_cdk`` import,
whichever module is imported first. What runs on an instance (no CDK) is
:mod:`ecs_gpu.host`, so ``validate``, ``aws`` and ``doctor`` never import
this package to read it.
"""

from ecs_gpu.node import ensure_node

ensure_node()
