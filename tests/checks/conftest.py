"""Doctor's fixtures for the tests of checks that read a snapshot (support/doctor_fixtures)."""

from support.doctor_fixtures import fixes_quote_runnable_commands, healthy

__all__ = ["fixes_quote_runnable_commands", "healthy"]
