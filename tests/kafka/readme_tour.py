"""The README's short tour as a script: its commands, typed as shown, and the output it promises.

The tour is a ``console`` block: a line ``$ COMMAND`` (continued by a trailing ``\\``) is typed
into one shell, and the lines after it, up to the next command, are what it prints. The rest is
for people, and this module says exactly how it is read:

- a command's trailing comment is bash's (ignored); an output line's comment (two spaces, then
  ``#``) is the README's annotation, not output; ``# exit N`` there is the exit status promised;
- ``...`` in an output line stands for anything (a line of only ``...``: any lines);
- what differs on every machine is the same for the comparison: your home directory (shown as
  ``/home/you``), ports, times, your user and host names (``you@laptop``), and the table
  borders and column widths that follow from them;
- a command ending with ``&`` runs in the background, as typed; what it promises to print is
  waited for (a person waits for it too) before the next command;
- a command whose output shows ``error:`` must fail (with the status annotated, if any), every
  other one must succeed.

Every output line shown must come out (in any order: brokers answer as they apply); a command
may print more (a progress line).
Run as a script (``python tests/kafka/readme_tour.py``) it types the tour into a shell in a
scratch home directory and prints what each command really printed, to write the README from.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"

_ANNOTATION = re.compile(r"\s{2,}#.*$")
_EXIT = re.compile(r"#.*\bexit (\d+)")
_NORMALIZE = [
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?( UTC|Z)?"), "<time>"),
    (re.compile(r"\b(127\.0\.0\.1|localhost):\d+"), r"\1:<port>"),
    (re.compile(r"\b[\w.-]+@[\w.-]+\b"), "<who>"),
    (re.compile(r"\bpid \d+"), "pid <n>"),
    (re.compile(r"[─━│┃╇╈┡┩┏┓┗┛┳┻╋┣┫╸╺╹╻•]"), " "),
    (re.compile(r"\s+"), " "),
]


@dataclass
class Step:
    """One command of the tour and what it promises."""

    command: str
    expected: list[str] = field(default_factory=list)
    exit_status: int | None = None

    @property
    def background(self) -> bool:
        return self.command.rstrip().endswith("&")

    @property
    def must_fail(self) -> bool:
        return any(line.lstrip().startswith("error:") for line in self.expected)


def tour_block(text: str | None = None) -> str:
    """The console block of the README's "A short tour" section."""
    text = README.read_text(encoding="utf-8") if text is None else text
    section = text.split("## A short tour", 1)[1].split("\n## ", 1)[0]
    return section.split("```console\n", 1)[1].split("\n```", 1)[0]


def steps(block: str) -> list[Step]:
    """The tour's steps, in order."""
    found: list[Step] = []
    lines = block.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith("$ "):
            command = line[2:]
            while command.rstrip().endswith("\\") and index < len(lines):
                command = command.rstrip() + "\n" + lines[index]  # bash reads the backslash too
                index += 1
            found.append(Step(command))
            continue
        if not found:
            continue
        status = _EXIT.search(line)
        if status is not None:
            found[-1].exit_status = int(status.group(1))
        shown = _ANNOTATION.sub("", line).rstrip()
        if shown.strip():
            found[-1].expected.append(shown)
    return found


def normalized(line: str, home: str | None = None) -> str:
    if home:
        line = line.replace(home, "/home/you")
    for pattern, replacement in _NORMALIZE:
        line = pattern.sub(replacement, line)
    return line.strip()


def _pattern(expected: str) -> re.Pattern[str]:
    parts = [re.escape(part.strip()) for part in normalized(expected).split("...")]
    return re.compile("^" + r"\s*.*\s*".join(parts) + "$")


def missing(expected: list[str], actual: str, home: str) -> list[str]:
    """The expected lines that ``actual`` does not print (each matched to a line of its own; in any
    order: the brokers answer ``--wait`` in the order they apply; ``...`` alone: any lines)."""
    lines = [normalized(line, home) for line in actual.splitlines()]
    free = [line for line in lines if line]
    absent = []
    for want in expected:
        if want.strip() == "..." or not normalized(want):  # any lines; a table's rule
            continue
        pattern = _pattern(want)
        hit = next((i for i, line in enumerate(free) if pattern.match(line)), None)
        if hit is None:
            absent.append(want)
        else:
            del free[hit]
    return absent


class Shell:
    """One bash, typed into command by command, in ``home`` (its HOME and working directory)."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.steps_dir = home.parent / "tour-steps"
        self.steps_dir.mkdir(exist_ok=True)
        self.process = subprocess.Popen(
            ["bash", "--norc", "--noprofile"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=home,
            env={**env, "HOME": str(home)},
        )
        self.count = 0

    def type(self, step: Step, timeout: float) -> tuple[int | None, str]:
        """Type ``step``; its exit status (None for a background one) and output so far."""
        self.count += 1
        script = self.steps_dir / f"step-{self.count}.sh"
        out = self.steps_dir / f"step-{self.count}.out"
        script.write_text(step.command + "\n", encoding="utf-8")
        marker = f"__step_{self.count}_done__"
        if step.background:  # the job starts in this shell (so %1 names it), its output to a file
            line = f"{{ . {script} ; }} > {out} 2>&1; echo {marker} 0\n"
        else:
            line = f"{{ . {script} ; }} > {out} 2>&1; echo {marker} $?\n"
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        status: int | None = None
        while True:
            answer = self.process.stdout.readline()
            if not answer:
                raise AssertionError(f"the shell ended while typing: {step.command}")
            if answer.startswith(marker):
                status = int(answer.split()[1])
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"{step.command!r} did not finish in {timeout:g} s")
        if step.background:
            return None, self._await(step, out, deadline)
        return status, out.read_text(encoding="utf-8", errors="replace")

    def _await(self, step: Step, out: Path, deadline: float) -> str:
        """What a background command printed once all it promises is there (or the time is up)."""
        while True:
            text = out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""
            if not missing(step.expected, text, str(self.home)) or time.monotonic() > deadline:
                return text
            time.sleep(0.2)

    def close(self) -> None:
        """End every job this shell started (the tour ends with its own kills; a failure may not)."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            try:
                self.process.stdin.write("kill $(jobs -p) 2>/dev/null; wait; exit\n")
                self.process.stdin.flush()
                self.process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()


def record(home: Path) -> int:
    """Type the tour and print what each command printed (to write the README from)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFIGCTL_")}
    env["PATH"] = f"{REPO_ROOT / '.venv' / 'bin'}:{env['PATH']}"
    env["PYTHONPATH"] = str(REPO_ROOT)
    home.mkdir(parents=True, exist_ok=True)
    for name in ("examples", ".venv"):
        if not (home / name).exists():
            (home / name).symlink_to(REPO_ROOT / name)
    shell = Shell(home, env)
    try:
        for step in steps(tour_block()):
            status, text = shell.type(step, timeout=300)
            print(f"$ {step.command}   [exit {status}]")
            print(text.replace(str(home), "/home/you").rstrip())
    finally:
        shell.close()
    return 0


if __name__ == "__main__":
    sys.exit(record(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/readme-tour/home")))
