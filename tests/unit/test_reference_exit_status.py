"""The exit-status table of docs/reference/exit-status.md is the one configctl/errors.py defines.

Every code the code can exit with is documented, and the table documents no code the code
does not have: a new error class (or a removed one) cannot land without its documentation.
"""

from __future__ import annotations

import re
from pathlib import Path

from configctl import errors

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "exit-status.md"
_ROW = re.compile(r"^\|\s*(\d+)\s*\|(.*)\|\s*$")


def _documented() -> dict[int, str]:
    """The table's rows: code -> the rest of the row."""
    rows = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match:
            code = int(match.group(1))
            assert code not in rows, f"exit status {code} is in {PAGE.name} twice"
            rows[code] = match.group(2)
    return rows


def _error_classes() -> list[type[errors.ConfigctlError]]:
    found, todo = [], [errors.ConfigctlError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__ == errors.__name__]


def _defined() -> set[int]:
    return set(errors.EXIT_CODES) | {cls.exit_code for cls in _error_classes()}


def test_every_code_is_documented_and_nothing_else() -> None:
    documented = set(_documented())
    defined = _defined()
    assert defined - documented == set(), (
        f"exit status(es) {sorted(defined - documented)} missing from {PAGE}"
    )
    assert documented - defined == set(), (
        f"{PAGE} documents exit status(es) {sorted(documented - defined)} the code lacks"
    )


def test_every_error_class_has_a_code_in_exit_codes() -> None:
    for cls in _error_classes():
        assert cls.exit_code in errors.EXIT_CODES, (
            f"{cls.__name__} exits {cls.exit_code}, which EXIT_CODES lacks"
        )


def test_each_row_names_its_error_class() -> None:
    rows = _documented()
    for cls in _error_classes():
        if cls is errors.ConfigctlError:
            continue
        assert f"`{cls.__name__}`" in rows[cls.exit_code], (
            f"the row of {cls.exit_code} does not name {cls.__name__}"
        )
