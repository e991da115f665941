"""CDK constructs and the on-instance configuration they embed.

Kept import-light on purpose: importing ``ecs_gpu.infra`` must not start
jsii/Node, so pure modules such as :mod:`ecs_gpu.infra.host` stay usable by
``validate`` and ``doctor`` without CDK. Modules that need CDK import it
themselves, after :func:`ecs_gpu.node.ensure_node`.
"""
