"""Facts that AWS, the host, the template, the simulator and the checks share.

One module per contract, each holding only facts: the GPU metric
(:mod:`~ecs_gpu.contracts.gpu_metric`) and the concurrency metric
(:mod:`~ecs_gpu.contracts.demand_metric`) with their namespaces, names,
dimensions, periods, queries and IAM conditions; the scaling signals and what a
``[scaling]`` section deploys (:mod:`~ecs_gpu.contracts.signals`); physical names
(:mod:`~ecs_gpu.contracts.naming`); Application Auto Scaling's cron
(:mod:`~ecs_gpu.contracts.schedule`); EC2's vCPU quotas
(:mod:`~ecs_gpu.contracts.quotas`); the GPU AMI's parameter and the choice of AMI
(:mod:`~ecs_gpu.contracts.ami`). Nothing here imports a spec: every layer above
reads the same facts, so a consumer cannot drift from a producer.
"""
