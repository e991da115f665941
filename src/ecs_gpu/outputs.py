"""Where commands write files: one set of rules for every output option.

- ``-`` means standard output, for every ``--json``-style option (a file
  name would otherwise be created literally as ``./-``).
- An output path is checked before any work (a typo in a path costs no
  synth or simulation), and may be neither an input of the same command
  nor another output of it (:func:`check_distinct`): writing the summary
  over the trace it read destroys the input.
- Files are written to a temporary sibling and renamed into place
  (:func:`write_with`), so Ctrl-C or a full disk never leaves a half-written
  JSON, CSV or PNG that a later tool would read as complete.
- A write that fails, to a file or to standard output (a full disk), is
  exit 2 naming the option and the OS error.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from ecs_gpu.errors import BadInputError

STDOUT = "-"


def _std_fd(path: Path | str) -> int | None:
    """1 or 2 when ``path`` names this process's standard output or error by name
    (``/dev/stdout``, ``/dev/fd/2``, ``/proc/self/fd/1``), else None.

    Such a path is the stream, whatever it is redirected to: resolved to the file
    behind ``>> build.json`` and renamed over, it would replace that file (and
    what the shell had appended to it) instead of writing to it.
    """
    hop = str(path)
    # The name as given, then each link it goes through (out.json -> /dev/stdout).
    for _ in range(40):
        for fd, name in ((1, "stdout"), (2, "stderr")):
            names = {f"/dev/{name}", f"/dev/fd/{fd}", f"/proc/self/fd/{fd}"}
            if hop in names or hop == f"/proc/{os.getpid()}/fd/{fd}":
                return fd
        try:
            link = os.readlink(hop)
        except (OSError, ValueError):
            return None
        hop = os.path.normpath(os.path.join(os.path.dirname(hop), link))
    return None


def is_stdout(path: Path | str | None) -> bool:
    """True when an output option was given as ``-`` or names standard output."""
    return path is not None and (str(path) == STDOUT or _std_fd(path) == 1)


def _is_special(path: Path) -> bool:
    """True for an existing output that is not a regular file or folder (a device, a pipe)."""
    return path.exists() and not path.is_file() and not path.is_dir()


def _target(path: Path, option: str) -> Path:
    """The file a write to ``path`` lands in: a symbolic link's target, so the link stays.

    A link to a device or pipe is kept as given (written in place). A loop of
    links is bad input naming ``option``.
    """
    if path.is_symlink() and not _is_special(path):
        try:
            return path.resolve()
        except (RuntimeError, OSError):  # Python 3.11's "Symlink loop from ..."
            raise BadInputError(
                f"{option} {path}: is a loop of symbolic links. Fix: remove the link or "
                "choose another path."
            ) from None
    return path


def check_output(path: Path, option: str = "output", suffix: str | None = None) -> None:
    """Refuse an output path that cannot be written, naming ``option``."""
    if is_stdout(path) or _std_fd(path) == 2:
        if suffix is not None and suffix != ".json":
            raise BadInputError(
                f"{option} {path}: writes a {suffix[1:].upper()} file, which a terminal "
                f"cannot show. Fix: give a file name ending in {suffix}."
            )
        return
    path = _target(path, option)
    if _is_special(path):
        # /dev/null or a pipe: written in place, so its name and folder do not matter.
        if not os.access(path, os.W_OK):
            raise BadInputError(f"{option} {path}: is not writable. Fix: choose another path.")
        return
    parent = path.parent
    if path.is_dir():
        example = path / ("out" + (suffix or ""))
        raise BadInputError(f"{option} {path}: is a folder. Fix: give a file path, e.g. {example}.")
    if not parent.is_dir():
        raise BadInputError(
            f"{option} {path}: the folder {parent} does not exist. "
            "Fix: create it or choose another path."
        )
    if not os.access(parent, os.W_OK):
        raise BadInputError(
            f"{option} {path}: the folder {parent} is not writable. Fix: choose another folder."
        )
    if suffix is not None and path.suffix.lower() != suffix:
        raise BadInputError(
            f"{option} {path}: writes a {suffix[1:].upper()} file. "
            f"Fix: end the name with {suffix}, e.g. {path.with_suffix(suffix)}."
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def check_distinct(inputs: Mapping[str, Path | None], outputs: Mapping[str, Path | None]) -> None:
    """Refuse an output that is one of the inputs, or the same file as another output.

    Keys are the option names users typed (``"SPEC"``, ``"--json"``); standard
    output (``-``) may be named more than once only if it is one output.
    """
    outs = [(k, p) for k, p in outputs.items() if p is not None]
    for opt, out in outs:
        if is_stdout(out):
            continue
        for name, src in inputs.items():
            if src is not None and not is_stdout(src) and _same_file(out, src):
                raise BadInputError(
                    f"{opt} {out}: is the input {name}; writing it would destroy what this "
                    "command reads. Fix: choose another output path."
                )
    for i, (opt, out) in enumerate(outs):
        for other_opt, other in outs[i + 1 :]:
            both_stdout = is_stdout(out) and is_stdout(other)
            if both_stdout or (
                not is_stdout(out)
                and not is_stdout(other)
                and _same_file(out, other)
                and not _is_special(_target(out, opt))  # /dev/null keeps nothing to overwrite
            ):
                raise BadInputError(
                    f"{opt} and {other_opt}: both write {out}; one would overwrite the other. "
                    "Fix: give each output its own path."
                )


@contextlib.contextmanager
def _translate(path: Path, option: str) -> Iterator[None]:
    try:
        yield
    except OSError as e:
        raise BadInputError(
            f"{option} {path}: cannot write: {e.strerror or e}. Fix: choose another path."
        ) from None


def _temporary_sibling(path: Path) -> Path:
    """A new empty file beside ``path``, created with the mode a plain ``open`` would give.

    ``tempfile.mkstemp`` creates 0600 whatever the umask, and the rename then
    made every output private (a 0644 template became 0600). Created with
    0666 the umask applies, as it does to any file a tool writes; a file
    being replaced passes its own mode on when the write is done (a 0644
    output stays 0644).
    """
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name beside {path}")  # pragma: no cover


def write_with(path: Path, option: str, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` on a temporary sibling of ``path``, then rename it into place.

    ``write`` gets a path so libraries that open files themselves
    (matplotlib's savefig) write atomically too. The temporary file is removed
    on any failure, Ctrl-C included. The result has the user's umask, or the
    mode of the file it replaces, as a plain write would. A symbolic link is
    written at its target (the link stays a link); an output that is not a
    regular file (``/dev/null``, a named pipe) is written in place: renaming
    over it would replace the device with a file.
    """
    path = _target(path, option)
    with _translate(path, option):
        if _is_special(path):
            write(path)  # a device or pipe has nothing to keep whole
            return
        tmp = _temporary_sibling(path)
        try:
            write(tmp)
            if path.is_file():
                # After the write: a read-only (0444) output is still replaced.
                os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def write_text(path: Path, text: str, option: str = "output") -> None:
    """Write ``text`` to ``path`` atomically, or to standard output when ``path`` is ``-``.

    Standard output that cannot take it (a full disk, a closed pipe) is the
    user's output failing, like a file would: exit 2 naming the option and
    the OS error, not an internal error.
    """
    if is_stdout(path):
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError as e:
            _drop_stdout()
            if e.errno == errno.EPIPE:
                raise  # the reader went away (`| head`): cli.main ends quietly with 141
            raise BadInputError(
                f"{option} -: cannot write to standard output: {e.strerror or e}. Fix: free "
                f"space where standard output goes, or give {option} a file path."
            ) from None
        return
    if _std_fd(path) == 2:
        with _translate(path, option):
            sys.stderr.write(text)
            sys.stderr.flush()
        return
    write_with(path, option, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _drop_stdout() -> None:
    """Point standard output at the null device: what it still buffers cannot be written,
    and Python would try again at exit, print a second error and exit 120."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # pytest's capture has no real descriptor
        pass
