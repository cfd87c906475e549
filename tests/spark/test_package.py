"""The zip spark-submit ships (`configctl audit package`): code and schemas, importable from the zip alone."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import run_cli

from configctl import catalogue
from configctl.audit.package import build_zip
from configctl.audit.schema import sensitive_name_regex

pytestmark = pytest.mark.unit

# Run with -I -S: no site-packages, no PYTHONPATH, no current directory; the zip is the only
# place configctl can come from (the standard library is all there is besides).
_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from configctl import catalogue
from configctl.audit import schema
assert catalogue.__file__.startswith(sys.argv[1]), catalogue.__file__
names, suffixes = catalogue.sensitive_names()
print(json.dumps({
    "schemas": str(catalogue.schemas_dir()),
    "names": sorted(names),
    "suffixes": list(suffixes),
    "regex": schema.sensitive_name_regex(),
}))
"""


def test_the_zip_holds_code_and_schemas_and_works_alone(tmp_path: Path) -> None:
    written, files = build_zip(tmp_path / "dist" / "configctl.zip")
    names = zipfile.ZipFile(written).namelist()
    assert files == len(names)
    for needed in (
        "configctl/audit/job.py",
        "configctl/audit/drift/missed.py",
        "configctl/audit/templates/report.html.j2",
        "configctl/snapshot.py",
        "configctl/catalogue.py",
    ):
        assert needed in names
    schemas = sorted(n for n in names if n.startswith("configctl/_schemas/"))
    assert schemas == [
        f"configctl/_schemas/{t}.json"
        for t in (
            "broker-loggers",
            "brokers",
            "client-metrics",
            "clients",
            "groups",
            "ips",
            "topics",
            "users",
        )
    ]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]

    probe = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _PROBE, str(written)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    names_here, suffixes_here = catalogue.sensitive_names()
    assert found["schemas"].startswith(str(written))  # read from inside the zip, not a checkout
    assert found["names"] == sorted(names_here) and "SCRAM-SHA-512" in found["names"]
    assert found["suffixes"] == list(suffixes_here)
    assert found["regex"] == sensitive_name_regex()


def test_package_command(tmp_path: Path) -> None:
    target = tmp_path / "out.zip"
    result = run_cli("audit", "package", "--out", str(target), "-o", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["zip"] == str(target) and summary["files"] == len(zipfile.ZipFile(target).namelist())
    result = run_cli("audit", "package", "--out", str(tmp_path / "missing-dir-is-a-file" / "x.zip"))
    assert result.returncode == 0  # parent directories are made
    (tmp_path / "blocker").write_text("a file, not a directory")
    result = run_cli("audit", "package", "--out", str(tmp_path / "blocker" / "x.zip"))
    assert (
        result.returncode == 1
        and result.stderr.startswith("error: cannot write")
        and len(result.stderr.splitlines()) == 1
    )
