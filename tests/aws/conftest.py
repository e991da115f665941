"""Fixtures for the aws/ tests: the operate tests' clients on moto and the stubbed
CloudFormation client, shared, not copied."""

from operate.conftest import clients, template
from operate.test_operate_events import cfn

__all__ = ["cfn", "clients", "template"]
