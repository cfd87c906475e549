"""The YAML reader's inline path for plain scalars reads every document as its general path does.

``_YamlReader._scalar_event`` handles most events without the general ``_node`` / ``_add`` pair;
these tests read the same events both ways (a reader whose inline path is switched off) and
demand the same values, key lines and errors: one reading of YAML, whichever path a scalar takes.
"""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from configctl.desired import syntax
from configctl.errors import InvalidInput

pytestmark = pytest.mark.unit


class _GeneralOnly(syntax._YamlReader):
    def _scalar_event(self, event: yaml.ScalarEvent) -> None:
        self._node(event)


def _read(reader: type[syntax._YamlReader], text: str) -> object:
    try:
        return ("ok", _lines(reader("f").read(yaml.parse(text, Loader=syntax._Loader))))
    except InvalidInput as exc:
        return ("error", str(exc))


def _lines(value: object) -> object:
    """The value with every mapping's key lines beside it (equality of LinedMaps ignores them)."""
    if isinstance(value, syntax.LinedMap):
        return {k: (_lines(v), value.lines.get(k)) for k, v in value.items()} | {"@line": value.line}
    if isinstance(value, list):
        return [_lines(v) for v in value]
    return value


DOCUMENTS = [
    "topics: {a: {retention.ms: 1, cleanup.policy: [compact, delete]}}",
    "base: &b {x: 1}\ntopics:\n  a: {<<: *b, y: 2}\n  b: {<<: [*b], x: 3}\n",
    "a: 1\na: 2\n",
    "k: &v 10\nj: *v\n",
    "&k key: 1\n",
    "? complex\n: 1\n",
    "{a: 1, <<: {a: 2, b: 3}}",
    "[1, 2.5, .inf, -.inf, .nan, 0x10, 010, 1_000, 1:2, yes, true, ~, null, '', 2001-12-14]",
    "a: !!str 1\nb: !!int 2\nc: !custom 3\n",
    "x: 1\n---\ny: 2\n",
    "plain\n",
    "x: " + "9" * 150,
    "<<: 1\n",
    "a: {<<: 5}\n",
    "l: [[[[1]]]]\n" + "m: " + "[" * 60 + "]" * 60 + "\n",
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_both_paths_read_the_same(text: str) -> None:
    assert _read(syntax._YamlReader, text) == _read(_GeneralOnly, text)


_scalars = st.one_of(
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
    st.sampled_from(["0x1f", "1:2", "yes", "off", "~", "1e5", "<<", "010"]),
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_documents, st.booleans())
def test_both_paths_read_the_same_on_generated_documents(document: object, flow: bool) -> None:
    text = yaml.safe_dump(document, default_flow_style=flow)
    assert _read(syntax._YamlReader, text) == _read(_GeneralOnly, text)
