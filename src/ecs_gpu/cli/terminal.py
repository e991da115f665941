"""How commands write to a terminal, a pipe or a CI log: one console rule, one table rule.

- A ``COLUMNS`` (or ``LINES``) that is no usable size (``0``, ``abc``, ``5``)
  is ignored, as if unset: rich takes it literally, and a console 0 columns
  wide prints nothing at all, error messages included.
- A table never cuts a cell (:func:`print_table`): a pipe or CI log is 80
  columns wide, a cut id cannot be copied and a cut figure is a wrong figure.
- Warnings, notes and errors go to :data:`err_console` (standard error) as
  plain text (:func:`say`), so they never change what a script reads from
  standard output.
- Standard output closed early is the caller's to handle (``cli.main``: exit
  141): rich would instead go quiet for the rest of the process and exit 1,
  "problems found".
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Mapping

from rich.console import Console
from rich.table import Table
from rich.text import Text

# Narrower than this a table cannot show one resource type: a COLUMNS below it is a mistake.
MIN_COLUMNS = 20
_SIZE_VARIABLES = {"COLUMNS": MIN_COLUMNS, "LINES": 1}


def _usable(name: str, value: str) -> bool:
    return value.isdigit() and int(value) >= _SIZE_VARIABLES[name]


class _Environ(Mapping[str, str]):
    """``os.environ`` as rich reads it (live), less a size variable that is no size."""

    def __getitem__(self, key: str) -> str:
        value = os.environ[key]
        if key in _SIZE_VARIABLES and not _usable(key, value):
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return (k for k in os.environ if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or key not in os.environ:
            return False
        return key not in _SIZE_VARIABLES or _usable(key, os.environ[key])


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader went away: drop what could not be written and say so.

        rich's own handler (its documented extension point) sets ``quiet``
        for good and raises SystemExit(1).
        """
        del self._buffer[:]  # rich keeps the unwritten text and would send it next time
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def console(*, stderr: bool = False) -> Console:
    """The console every command prints through.

    No highlighting or :emoji: codes: they would change what a message says
    (an ARN's digits recoloured, ``:cd:`` in a path turned into a picture).
    """
    return _Console(stderr=stderr, highlight=False, emoji=False, _environ=_Environ())


def print_table(out: Console, table: Table) -> None:
    """Print ``table`` without cutting a cell, whatever the console's width.

    rich fits a table to the console by cutting (``AWS::ApplicationAutoScaling::S…``).
    Here columns marked ``no_wrap`` (ids, types, figures) keep their full width;
    the others share what is left and wrap between words, never below their
    longest word. When the console is narrower than that, the table is
    printed at that width, wider than the console, instead of cut (a terminal
    then wraps the long lines; a pipe keeps them whole).
    """
    # rich exposes no public accessor for a column's measured range or the
    # table's border width; these two are what its own layout uses.
    wide = out.options.update_width(10_000)
    ranges = [table._measure_column(out, wide, c) for c in table.columns]
    extra = table._extra_width
    if sum(r.maximum for r in ranges) + extra <= out.width:
        out.print(table)
        return
    # rich measures a no_wrap cell's minimum by its longest word all the same.
    widths = [
        r.maximum if c.no_wrap else r.minimum for c, r in zip(table.columns, ranges, strict=True)
    ]
    spare = out.width - extra - sum(widths)
    give = [r.maximum - w for r, w in zip(ranges, widths, strict=True)]
    if spare > 0 and sum(give) > 0:
        # Share what is left in proportion to what each column would use.
        widths = [w + spare * g // sum(give) for w, g in zip(widths, give, strict=True)]
    for column, width in zip(table.columns, widths, strict=True):
        # Column.width is the text's; the measured range includes the padding.
        column.width = max(1, width - table._get_padding_width(column._index))
    table.width = sum(widths) + extra
    out.print(table, crop=False)


# Errors print whatever COLUMNS says (console ignores a COLUMNS of 0).
err_console = console(stderr=True)


def say(label: str, style: str, message: str) -> None:
    """``label message`` on stderr, the message as plain text, never read as markup.

    Messages quote user values ("[capacity]", ARNs, a path ending in a
    backslash before "["): markup escaping misses some of them (rich's escape
    leaves "\\[" alone, and the markup then drops the backslash), a Text never does.
    """
    err_console.print(Text.assemble((label, style), " ", message), soft_wrap=True)


def print_notes(lines: list[str]) -> None:
    """Each note on stderr: it never changes standard output (a template, JSON) or the exit code."""
    for line in lines:
        say("note:", "yellow", line)
