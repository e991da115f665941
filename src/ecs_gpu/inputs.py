"""Reading a user's file: the one reader behind SPEC, ``--trace`` and ``--from-snapshot``.

A path a user names may be anything: a named pipe nobody writes to (a plain
``open`` waits forever), ``/dev/zero`` (reading it to the end exhausts
memory), a folder, a file far too large to be what it claims, or text in
another encoding. Each is refused at once with exit 2, naming the option and
the path: the file is opened without blocking, checked to be a regular file
of at most ``limit`` bytes, and only then read.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

from ecs_gpu.errors import BadInputError


def _size_text(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n:,} bytes"


def _not_regular(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"  # pragma: no cover - POSIX has no other kind


def read_bytes(path: str | Path, *, option: str, kind: str, limit: int, fix: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    ``option`` names where the path came from (``SPEC``, ``--trace``) and
    ``kind`` what it should be ("spec", "trace"); ``fix`` ends the message
    of a file that is too large. Every refusal is a :class:`BadInputError`.
    """
    where = f"{option} {path}"
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of
        # waiting (POSIX; Windows has no FIFOs in the file system).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise BadInputError(f"{where}: no such {kind} file. Fix: check the path.") from None
    except IsADirectoryError:
        raise _refuse_kind(where, kind, "a folder") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise BadInputError(
            f"{where}: cannot read the {kind}: {why}. Fix: check the path and its permissions."
        ) from None
    try:
        info = os.fstat(fd)
        what = _not_regular(info.st_mode)
        if what is not None:
            raise _refuse_kind(where, kind, what)
        if info.st_size > limit:
            raise _too_large(where, kind, limit, fix)
        # Back to blocking reads: a regular file never blocks, and O_NONBLOCK
        # would only matter on the odd file system that honours it.
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # the file object owns it now
            data = fh.read(limit + 1)  # a file that grew (or /proc) cannot exceed it either
    except OSError as e:
        raise BadInputError(
            f"{where}: cannot read the {kind}: {e.strerror or e}. Fix: check the file."
        ) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:
        raise _too_large(where, kind, limit, fix)
    return data


def read_text(path: str | Path, *, option: str, kind: str, limit: int, fix: str) -> str:
    """:func:`read_bytes` decoded as UTF-8, without a leading byte-order mark.

    Editors on Windows save UTF-8 with a BOM; it is no part of the text. A
    byte that is not UTF-8 is refused with its offset in the file and its line.
    """
    data = read_bytes(path, option=option, kind=kind, limit=limit, fix=fix)
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = skip + e.start
        line = data.count(b"\n", 0, at) + 1
        raise BadInputError(
            f"{option} {path}: not UTF-8 text: byte {at} (line {line}) is 0x{data[at]:02x}. "
            f"Fix: save the {kind} as UTF-8 text."
        ) from None


def _refuse_kind(where: str, kind: str, what: str) -> BadInputError:
    return BadInputError(
        f"{where}: is {what}, not a {kind} file. Fix: pass the path of a regular file that "
        f"holds the {kind} (save a stream to a file first)."
    )


def _too_large(where: str, kind: str, limit: int, fix: str) -> BadInputError:
    return BadInputError(
        f"{where}: larger than {_size_text(limit)}, too large to be a {kind}. Fix: {fix}."
    )
