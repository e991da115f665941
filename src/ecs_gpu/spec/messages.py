"""How a spec message reads: one line naming file, key, value, what is wrong and the fix.

:class:`RuleError` is a section validator's complaint with its own fix;
:class:`Problem` is a cross-field rule's finding (``spec.rules``). Both end
up in the same one-line form.
"""

from __future__ import annotations

from dataclasses import dataclass


class RuleError(ValueError):
    """A validator's complaint that carries its own fix, shown after "Fix:"."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(what)
        self.fix = fix


# Longest value echoed back in a message; a whole mistyped section is noise.
_MAX_SHOWN = 80


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule: the key to change, its value, what is wrong, and the fix."""

    key: str
    value: object
    what: str
    fix: str

    def format(self, path: str) -> str:
        """The one-line form every spec message has: FILE: KEY = VALUE: what. Fix: fix."""
        return f"{path}: {self.key} = {self.value!r}: {self.what}. Fix: {self.fix}."


def shorten(text: str) -> str:
    """A string as a message shows it: whole up to _MAX_SHOWN characters."""
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."
