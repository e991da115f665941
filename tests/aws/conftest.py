"""Fixtures for the aws/ tests: the operate tests' clients on moto, shared, not copied."""

from operate.conftest import clients, template

__all__ = ["clients", "template"]
