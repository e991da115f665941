"""The step paths a spec may deploy beside target tracking, one module each.

The fast path (:mod:`~ecs_gpu.design.paths.fast_path`: a 10-second alarm adds
tasks at once), the fast scale-in (:mod:`~ecs_gpu.design.paths.fast_scale_in`),
and scale to zero's wake and sleep (:mod:`~ecs_gpu.design.paths.wake`,
:mod:`~ecs_gpu.design.paths.sleep`); :mod:`~ecs_gpu.design.paths.step_shape` tells
which path a deployed StepScaling policy is. Each module holds its alarm's and
policy's numbers and how a deployed one differs from them.
"""
