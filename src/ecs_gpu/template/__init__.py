"""A spec becomes a standalone CloudFormation template, and the template is checked.

:mod:`~ecs_gpu.template.synth` runs the CDK app (the ``GpuService`` construct of
:mod:`ecs_gpu.infra`) and writes the template; :mod:`~ecs_gpu.template.validate`
runs the spec's rules, the CloudWatch agent's schema, CDK's warnings, cfn-lint and
cdk-nag over it; :mod:`~ecs_gpu.template.limits` holds CloudFormation's template
size limits, which synth, validate and deploy read.
"""
