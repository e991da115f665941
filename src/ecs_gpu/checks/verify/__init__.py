"""What ``verify`` judges and says: pure verdicts over AWS-shaped data.

The calls live in :mod:`ecs_gpu.aws` (``verify``, ``verify_scaling``,
``verify_step_paths``, ``verify_decision``, ``verify_scale_in``,
``verify_wake``); they read the service, its policies, alarms, activities
and series, and hand them to the modules here, which decide and word the
result. The CLI renders.
"""
