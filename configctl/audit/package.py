"""The zip a Spark cluster gets with ``spark-submit --py-files configctl.zip``.

The job imports pure configctl modules only, but one of them, the catalogue, reads the JSON
schemas (which keys hold secrets). In a source checkout they sit beside the package
(``schemas/``); inside a zip they must be *in* the package, as ``configctl/_schemas/*.json``,
where :func:`configctl.catalogue.schemas_dir` looks first (through importlib.resources, which
reads zips). Zipping the package directory by hand would leave them out: this builds the zip
from the running configctl, whether it is a checkout or an installed wheel.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import configctl
from configctl import catalogue

SCHEMAS_IN_ZIP = "configctl/_schemas"
_SKIPPED_DIRS = {"__pycache__", "_schemas"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


def build_zip(out: str | os.PathLike[str]) -> tuple[Path, int]:
    """Write the zip to ``out`` (replaced atomically); the path and how many files it holds."""
    package = Path(configctl.__file__).resolve().parent
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".configctl-zip-", dir=target.parent)
    os.close(handle)
    count = 0
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(package.rglob("*")):
                relative = path.relative_to(package)
                if not path.is_file() or _SKIPPED_DIRS.intersection(relative.parts[:-1]):
                    continue
                if path.suffix in _SKIPPED_SUFFIXES:
                    continue
                archive.write(path, f"configctl/{relative.as_posix()}")
                count += 1
            schemas = catalogue.schemas_dir()
            for entry in sorted(schemas.iterdir(), key=lambda e: e.name):
                if entry.name.endswith(".json"):
                    archive.writestr(f"{SCHEMAS_IN_ZIP}/{entry.name}", entry.read_bytes())
                    count += 1
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as any file the user writes (mkstemp makes it 0600)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target, count
