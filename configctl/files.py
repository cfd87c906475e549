"""Reading the operator's files and replacing ours atomically, with one-line errors.

Every file configctl reads (properties, desired state) fails the same way when it is missing
or unreadable, and every file it writes for others to read (exports, saved plans, server
state) is written beside its target and renamed over it, so a reader sees the old file or the
new one, never half of one.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from configctl.errors import InvalidInput

READ_LIMIT = 64 * 1024 * 1024
"""The most configctl reads of any one input file: far above a real desired state or properties
file, far below what would exhaust memory (``/dev/zero`` is refused, not read for ever)."""


def read_bytes(path: str | os.PathLike[str], what: str = "", *, limit: int = READ_LIMIT) -> bytes:
    """The file's bytes, or :class:`InvalidInput` naming the file (``what`` says what it is).

    Regular files and pipes (``<(...)``) are read, at most ``limit`` bytes; directories and
    devices are refused before a byte is read.
    """
    name = os.fspath(path)
    label = f"{what} {name}".strip()
    try:
        with open(name, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise InvalidInput(f"{label}: is a directory")
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                raise InvalidInput(f"{label}: not a regular file")
            return read_limited(handle, label, limit)
    except FileNotFoundError:
        raise InvalidInput(f"{label}: no such file") from None
    except IsADirectoryError:
        raise InvalidInput(f"{label}: is a directory") from None
    except PermissionError:
        raise InvalidInput(f"{label}: permission denied") from None
    except OSError as exc:
        raise InvalidInput(f"{label}: cannot read ({exc.strerror or exc})") from None


def read_limited(handle: BinaryIO, label: str, limit: int = READ_LIMIT) -> bytes:
    """At most ``limit`` bytes of an open stream (stdin too); more is an :class:`InvalidInput`."""
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise InvalidInput(f"{label}: larger than {limit:,} bytes; refusing to read it")
    return data


def read_stdin(label: str = "<stdin>", *, limit: int = READ_LIMIT) -> bytes:
    """Standard input, as :func:`read_bytes` reads a file: a device (``< /dev/zero``) is refused unread.

    A terminal is read (an operator may paste a file), as are pipes, sockets and regular files.
    """
    stream = sys.stdin.buffer
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):  # no descriptor (an in-memory stream): nothing to check
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise InvalidInput(f"{label}: is a directory")
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and not stream.isatty():
        raise InvalidInput(f"{label}: not a regular file")
    return read_limited(stream, label, limit)


def replace_atomically(path: Path, text: str, *, private: bool = False) -> None:
    """Replace ``path`` with ``text``, atomically (see :func:`write_atomically`)."""
    write_atomically(path, (text,), private=private)


def write_atomically(path: Path, chunks: Iterable[str], *, private: bool = False, fsync: bool = True) -> int:
    """Stream ``chunks`` to a temporary file beside ``path``, then rename it over ``path``.

    A reader sees the old file or the new one, never half of one, and a crash leaves the old one
    intact. ``private`` keeps the file readable by its owner only (it holds hashed or encrypted
    secrets); otherwise it gets the permissions the umask allows. ``fsync`` makes the new content
    durable before the rename. Returns the number of characters written.
    """
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None
    written = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            buffer: list[str] = []
            for chunk in chunks:
                buffer.append(chunk)
                if len(buffer) >= 4096:
                    text = "".join(buffer)
                    handle.write(text)
                    written += len(text)
                    buffer.clear()
            text = "".join(buffer)
            handle.write(text)
            written += len(text)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        if not private:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException as exc:
        Path(temp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    return written
