"""The examples, validated once per process (tests/support/examples.py), for every test here."""

from support.examples import example, reports, specs, templates, validate_stages

__all__ = ["example", "reports", "specs", "templates", "validate_stages"]
