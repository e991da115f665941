"""Pure judgements over AWS-shaped data: doctor's, preflight's and verify's.

Nothing here calls AWS: :mod:`ecs_gpu.aws` reads the objects (a snapshot of raw
API items for doctor and preflight, the series and activities for verify) and
these modules decide what they mean and say so, tested without moto. The
snapshot format is :mod:`~ecs_gpu.checks.kinds` and
:mod:`~ecs_gpu.checks.snapshot` (with :mod:`~ecs_gpu.checks.raw` for raw ``aws``
CLI output); a check's shape and its runner are :mod:`~ecs_gpu.checks.model` and
:mod:`~ecs_gpu.checks.runner`; :mod:`~ecs_gpu.checks.target` is what doctor
collects for. Doctor's links are :mod:`ecs_gpu.checks.doctor`, preflight's checks
:mod:`ecs_gpu.checks.preflight`, verify's verdicts :mod:`ecs_gpu.checks.verify`, and
what a change set or a stack's events mean :mod:`~ecs_gpu.checks.stack_events`.
Check ids, titles and remedies live only here.
"""
