"""Fixtures for the aws/ tests: the operate tests' clients on moto and the stubbed
CloudFormation client, shared, not copied."""

from cli.conftest import clients, iam_enforced, template
from cli.test_events import cfn

__all__ = ["cfn", "clients", "iam_enforced", "template"]
