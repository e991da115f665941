"""The examples, validated once per process (tests/support/examples.py), for every test here."""

from support.examples import example, reports, spec, specs, t, templates, validate_stages

__all__ = ["example", "reports", "spec", "specs", "t", "templates", "validate_stages"]
