"""Reading the operator's files and replacing ours atomically, with one-line errors.

Every file configctl reads (properties, desired state) fails the same way when it is missing
or unreadable, and every file it writes for others to read (exports, saved plans, server
state) is written beside its target and renamed over it, so a reader sees the old file or the
new one, never half of one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from configctl.errors import InvalidInput


def read_bytes(path: str | os.PathLike[str], what: str = "") -> bytes:
    """The file's bytes, or :class:`InvalidInput` naming the file (``what`` says what it is)."""
    name = os.fspath(path)
    label = f"{what} {name}".strip()
    try:
        return Path(name).read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"{label}: no such file") from None
    except IsADirectoryError:
        raise InvalidInput(f"{label}: is a directory") from None
    except PermissionError:
        raise InvalidInput(f"{label}: permission denied") from None
    except OSError as exc:
        raise InvalidInput(f"{label}: cannot read ({exc.strerror or exc})") from None


def replace_atomically(path: Path, text: str, *, private: bool = False) -> None:
    """Write ``text`` to a temporary file beside ``path`` (fsynced), then rename it over ``path``.

    ``private`` keeps the file readable by its owner only (it holds hashed or encrypted secrets);
    otherwise the file gets the usual permissions the umask allows.
    """
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if not private:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None
