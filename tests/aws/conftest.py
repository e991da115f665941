"""Fixtures for the aws/ tests: the operate tests' clients on moto, the stubbed
CloudFormation client and the two AMIs in moto's EC2, shared, not copied."""

from cli.conftest import clients, iam_enforced, template
from cli.test_ami import images
from cli.test_events import cfn

__all__ = ["cfn", "clients", "iam_enforced", "images", "template"]
