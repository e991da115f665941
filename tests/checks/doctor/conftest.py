"""Every doctor check test: each finding it renders quotes only commands the AWS CLI accepts."""

import pytest


@pytest.fixture(autouse=True)
def every_fix_runs_as_quoted(fixes_quote_runnable_commands: None) -> None:
    """The check of tests/support/doctor_fixtures.py, on for every test here."""
