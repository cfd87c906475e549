"""configctl.files, the one home for reading a path: looked at before it is opened, never a hang.

Each reading call runs on a worker thread with a deadline, so a regression that blocks on a
named pipe fails the test instead of hanging the suite.
"""

from __future__ import annotations

import ast
import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path

import pytest

from configctl.errors import InvalidInput
from configctl.files import check_readable, read_bytes, read_text

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "configctl"
DEADLINE = 10.0


def within_deadline(call, *args, **kwargs):
    """``call(*args)`` on a daemon thread; failing the test (not hanging it) past the deadline."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(call, *args, **kwargs).result(timeout=DEADLINE)
    except concurrent.futures.TimeoutError:
        _unblock_fifos()
        pytest.fail(f"{call.__name__} blocked for {DEADLINE:g}s")
    finally:
        pool.shutdown(wait=False)


_FIFOS: list[Path] = []


def _unblock_fifos() -> None:
    """Open every test FIFO for writing once, so a blocked reader (a regression) can finish."""
    for fifo in _FIFOS:
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    _FIFOS.append(path)
    yield path
    _FIFOS.remove(path)


def test_a_named_pipe_is_refused_before_it_is_opened(fifo):
    with pytest.raises(
        InvalidInput,
        match=r"^key file .*pipe: not a regular file \(a named pipe \(FIFO\)\); refusing to read it$",
    ):
        within_deadline(read_bytes, fifo, "key file")
    with pytest.raises(InvalidInput, match="named pipe"):
        within_deadline(read_text, fifo, "profile file")
    with pytest.raises(InvalidInput, match="named pipe"):
        within_deadline(check_readable, fifo)


def test_a_symlink_to_a_named_pipe_is_refused_too(fifo, tmp_path):
    link = tmp_path / "innocent.toml"
    link.symlink_to(fifo)
    with pytest.raises(InvalidInput, match="named pipe"):
        within_deadline(read_bytes, link, "profile file")


@pytest.mark.parametrize(
    ("path", "words"),
    [("/dev/null", "character device"), ("/dev/zero", "character device"), ("/", "is a directory")],
)
def test_devices_and_directories_are_refused_unread(path, words):
    with pytest.raises(InvalidInput, match=words):
        within_deadline(read_bytes, path, "file")


def test_missing_and_unreadable_files_are_one_line(tmp_path):
    with pytest.raises(InvalidInput, match=r"missing: no such file$"):
        check_readable(tmp_path / "missing", "missing")
    with pytest.raises(InvalidInput, match=r"no such file$"):
        read_bytes(tmp_path / "missing", "file")
    bad = tmp_path / "latin1"
    bad.write_bytes(b"caf\xe9")
    with pytest.raises(InvalidInput, match=r"latin1: not UTF-8 text$"):
        read_text(bad, "file")


def test_regular_files_are_read_whole_up_to_the_limit(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path) == b"x" * 100
    assert read_text(path) == "x" * 100
    with pytest.raises(InvalidInput, match="larger than 99 bytes"):
        read_bytes(path, limit=99)


def test_a_pipe_the_shell_already_holds_open_is_read():
    """``<(...)``: an anonymous pipe whose writer runs; reading it waits only for that writer."""
    code = "import sys; from configctl.files import read_bytes; sys.stdout.write(read_bytes(sys.argv[1]).decode())"
    result = subprocess.run(
        ["bash", "-c", 'exec "$@" <(printf hello)', "bash", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=DEADLINE, cwd=PACKAGE.parent,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello"


# Reads of files that are not the operator's: the package's own data and the test Kafka's logs.
_NOT_OPERATOR_INPUT = {
    "catalogue.py",  # the packaged config catalogue
    "audit/package.py",  # packaged schemas, copied into the audit's zip
    "localkafka.py",  # the test broker's own VERSION file and logs
}


def test_every_path_read_goes_through_configctl_files():
    """No ``open(..., 'r')``, ``Path.read_text()`` or ``Path.read_bytes()`` outside the one home."""
    offenders = []
    for source in sorted(PACKAGE.rglob("*.py")):
        relative = source.relative_to(PACKAGE).as_posix()
        if relative == "files.py" or relative in _NOT_OPERATOR_INPUT:
            continue
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _reads_a_path(node):
                offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, f"read a path through configctl.files.read_bytes/read_text: {offenders}"


def _reads_a_path(call: ast.Call) -> bool:
    function = call.func
    if isinstance(function, ast.Attribute) and function.attr in ("read_text", "read_bytes"):
        return not call.args or not isinstance(function.value, ast.Name) or function.value.id != "files"
    if isinstance(function, ast.Name) and function.id == "open":
        mode = (
            call.args[1]
            if len(call.args) > 1
            else next((k.value for k in call.keywords if k.arg == "mode"), None)
        )
        text = mode.value if isinstance(mode, ast.Constant) else "r"
        return isinstance(text, str) and "r" in text and "+" not in text
    return False


def test_a_json_file_that_is_not_json_or_nested_too_deep_is_one_line(tmp_path):
    from configctl.files import read_json

    path = tmp_path / "f.json"
    path.write_text('{"a": [1, 2]}')
    assert read_json(path) == {"a": [1, 2]}
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidInput, match=r"^state .*f.json: not valid JSON \(nesting too deep\)$"):
        read_json(path, "state")
    path.write_text("{")
    with pytest.raises(InvalidInput, match=r": not valid JSON \(Expecting property name .*, line 1\)$"):
        read_json(path, "state")
