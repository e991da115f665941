"""Preflight's checks: whether an account and Region can run a spec, before anything is paid.

Pure functions over what :mod:`ecs_gpu.aws.preflight` read, in doctor's finding
shape and run by the same runner: :mod:`~ecs_gpu.checks.preflight.needs` (what the
spec asks of the account), :mod:`~ecs_gpu.checks.preflight.account` (the registry
of checks: quotas, the Region's offering, the AMI, secrets, the image, the
service-linked role, the certificate) and :mod:`~ecs_gpu.checks.preflight.network`
(Availability Zones, the reservation, the subnets and their way out).
"""
