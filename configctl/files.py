"""Reading the operator's files and replacing ours atomically, with one-line errors.

Every file configctl reads (properties, desired state, profiles, password and key files,
certificates) is read here: looked at before it is opened (a named pipe would block for ever),
read up to a limit, and failing the same way, in one line, when it is missing, unreadable or not
a file at all. Every file it writes for others to read (exports, saved plans, server state) is
written beside its target and renamed over it, so a reader sees the old file or the new one,
never half of one.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from configctl.errors import InvalidInput

READ_LIMIT = 64 * 1024 * 1024
"""The most configctl reads of any one input file: far above a real desired state or properties
file, far below what would exhaust memory (``/dev/zero`` is refused, not read for ever)."""


def read_bytes(path: str | os.PathLike[str], what: str = "", *, limit: int = READ_LIMIT) -> bytes:
    """The file's bytes, or :class:`InvalidInput` naming the file (``what`` says what it is).

    Every path configctl reads goes through here (or :func:`open_checked`, for a reader that
    streams), so every one is checked the same way *before* it is opened (:func:`check_readable`):
    opening a named pipe (FIFO) with no writer blocks for ever, and a listener blocked there
    ignores SIGTERM. Regular files are read, at most ``limit`` bytes; so is a pipe the shell
    already holds open (``<(...)``, ``/dev/fd/N``), which ends when its writer does. Directories,
    devices, sockets and named pipes are refused unread.
    """
    label = f"{what} {os.fspath(path)}".strip()
    with open_checked(path, what) as handle:
        try:
            return read_limited(handle, label, limit)
        except OSError as exc:
            raise _refusal(exc, label) from None


def open_checked(path: str | os.PathLike[str], what: str = "") -> BinaryIO:
    """``path`` open for reading (binary), checked as :func:`read_bytes` checks it, for a reader
    that streams a file too large to hold (an applied log's segment).

    Looked at before it is opened (:func:`check_readable`), opened without blocking, and looked
    at again through the open descriptor, so a file swapped for a named pipe in between is
    refused too; every refusal is one :class:`InvalidInput` line naming the file.
    """
    name = os.fspath(path)
    label = f"{what} {name}".strip()
    try:
        expected = check_readable(name, label)
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _refusal(exc, label) from None
    try:
        _same_kind(os.fstat(fd).st_mode, expected, label)  # swapped since the check: refused
        os.set_blocking(fd, True)
        return open(fd, "rb")
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):
            raise _refusal(exc, label) from None
        raise


def _refusal(exc: OSError, label: str) -> InvalidInput:
    """An operating system's refusal to look at or open a file, as the one line the operator reads."""
    if isinstance(exc, FileNotFoundError):
        return InvalidInput(f"{label}: no such file")
    if isinstance(exc, IsADirectoryError):
        return InvalidInput(f"{label}: is a directory")
    if isinstance(exc, PermissionError):
        return InvalidInput(f"{label}: permission denied")
    return InvalidInput(f"{label}: cannot read ({exc.strerror or exc})")


def read_text(path: str | os.PathLike[str], what: str = "", *, limit: int = READ_LIMIT) -> str:
    """:func:`read_bytes` decoded as UTF-8; text that is not UTF-8 is a one-line :class:`InvalidInput`."""
    data = read_bytes(path, what, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{f'{what} {os.fspath(path)}'.strip()}: not UTF-8 text") from None


def read_json(path: str | os.PathLike[str], what: str = "", *, limit: int = READ_LIMIT) -> Any:
    """A JSON file's value, read by :func:`read_text`; a file that is not JSON is one :class:`InvalidInput` line.

    Also a file nested deeper than the decoder follows (``[[[[...]]]]``): :mod:`json` recurses
    per level, and its ``RecursionError`` would otherwise be a thousand-line traceback.
    """
    text = read_text(path, what, limit=limit)
    label = f"{what} {os.fspath(path)}".strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{label}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise InvalidInput(f"{label}: not valid JSON (nesting too deep)") from None


def check_readable(path: str | os.PathLike[str], label: str = "") -> int:
    """What ``path`` is (its ``st_mode`` file type), refusing what must not be opened for reading.

    Looked at with ``stat`` alone, never opened: a named pipe would block the opener until some
    writer came. Returns the file type (``stat.S_IFREG`` or ``stat.S_IFIFO`` for a shell's pipe).
    """
    name = os.fspath(path)
    label = label or name
    try:
        mode = os.stat(name).st_mode
    except OSError as exc:
        raise _refusal(exc, label) from None
    if stat.S_ISDIR(mode):
        raise InvalidInput(f"{label}: is a directory")
    if stat.S_ISREG(mode):
        return stat.S_IFREG
    if stat.S_ISFIFO(mode) and _is_open_pipe(name):
        return stat.S_IFIFO
    raise InvalidInput(f"{label}: not a regular file ({kind_of(mode)}); refusing to read it")


def _is_open_pipe(name: str) -> bool:
    """True for ``/dev/fd/N`` (or ``/proc/.../fd/N``) naming an anonymous pipe this process holds.

    That is what the shell's ``<(...)`` hands over: its writer already runs, so reading it cannot
    wait for one to appear, unlike a named pipe in the file system.
    """
    link = name
    for _ in range(8):  # /dev/stdin -> /proc/self/fd/0 -> pipe:[N]
        try:
            target = os.readlink(link)
        except OSError:
            return False
        if target.startswith("pipe:["):
            return True
        link = os.path.join(os.path.dirname(link), target)
    return False


def _same_kind(mode: int, expected: int, label: str) -> None:
    """Refuse a file that is no longer what :func:`check_readable` saw (replaced in between)."""
    if stat.S_IFMT(mode) != expected:
        raise InvalidInput(f"{label}: not a regular file ({kind_of(mode)}); refusing to read it")


def kind_of(mode: int) -> str:
    """A file type in words, for the one-line refusal."""
    kinds = (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISREG, "a file"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((words for test, words in kinds if test(mode)), "a special file")


def check_directory(path: str | os.PathLike[str], label: str = "") -> bool:
    """Whether the directory ``path`` exists (False: nothing is there), refusing anything else in
    one line: a named pipe or a plain file given where a directory is read (``--history-archive``)
    would otherwise read as an empty directory, and a typo would silently shorten what is read."""
    name = os.fspath(path)
    label = label or name
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _refusal(exc, label) from None
    if not stat.S_ISDIR(mode):
        raise InvalidInput(f"{label}: not a directory ({kind_of(mode)})")
    return True


def private_directory(path: Path, label: str) -> None:
    """Make ``path`` (owner-only, parents too) or accept it as it is: a directory of ours that
    nobody else can write to. Files we replace there are renamed into place; a directory another
    user (or group) can write to lets them plant what we would then read as ours, or swap a file
    between our check and our rename, so it is refused in one line, as is one owned by another user.
    """
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:
        pass  # something that is not a directory: said below
    except OSError as exc:
        raise InvalidInput(f"{label} {path}: cannot create it ({exc.strerror or exc})") from None
    try:
        found = os.stat(path)
    except OSError as exc:
        raise _refusal(exc, f"{label} {path}") from None
    if not stat.S_ISDIR(found.st_mode):
        raise InvalidInput(f"{label} {path}: not a directory ({kind_of(found.st_mode)})")
    if found.st_uid != os.geteuid():
        raise InvalidInput(
            f"{label} {path}: owned by uid {found.st_uid}, not by this user (uid {os.geteuid()})"
        )
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise InvalidInput(
            f"{label} {path}: others can write to it (mode {stat.S_IMODE(found.st_mode):o}); "
            f"make it owner-only (chmod go-w {path})"
        )


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
            if not private:  # through the descriptor: the name could be another file by now
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(handle.fileno(), 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException as exc:
        Path(temp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    return written
