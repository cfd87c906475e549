"""--add-config / --delete-config / --add-config-file parsing, as kafka-configs.sh 3.9 does it."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from configctl.configparse import (
    added_configs,
    load_properties_file,
    parse_add_config,
    parse_delete_config,
    validate_config_key,
)
from configctl.errors import InvalidInput
from configctl.values import java_trim

pytestmark = pytest.mark.unit


# -- --add-config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("retention.ms=86400000", {"retention.ms": "86400000"}),
        ("a=1,b=2", {"a": "1", "b": "2"}),
        # brackets group a list; every bracket is then removed
        ("cleanup.policy=[compact,delete]", {"cleanup.policy": "compact,delete"}),
        (
            "cleanup.policy=[compact,delete],retention.ms=1000",
            {"cleanup.policy": "compact,delete", "retention.ms": "1000"},
        ),
        ("a=[x],b=[y,z],c=w", {"a": "x", "b": "y,z", "c": "w"}),
        ("a=[]", {"a": ""}),
        # empty values, including the last one (Kafka splits with limit -1)
        ("k3=", {"k3": ""}),
        ("ssl.endpoint.identification.algorithm=", {"ssl.endpoint.identification.algorithm": ""}),
        ("a=,b=2", {"a": "", "b": "2"}),
        ("a=1,b=", {"a": "1", "b": ""}),
        ("k=v,k2=[a,b],k3=", {"k": "v", "k2": "a,b", "k3": ""}),
        # spaces around '=' and ',' are dropped; spaces inside values are kept
        ("a = 1 , b= 2 ,c =3", {"a": "1", "b": "2", "c": "3"}),
        ("  a=1  ", {"a": "1"}),
        ("a=\t1\t", {"a": "1"}),
        ("a=hello world", {"a": "hello world"}),
        ("a=[ x , y ]", {"a": "x , y"}),
        ("a = [x,y] , b = z", {"a": "x,y", "b": "z"}),
        # '=' inside brackets belongs to the value
        ("a=[x=1]", {"a": "x=1"}),
        (
            "SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
            {"SCRAM-SHA-256": "iterations=8192,password=alice-secret"},
        ),
        (
            "SCRAM-SHA-256=[password=alice-secret],SCRAM-SHA-512=[password=alice-secret]",
            {"SCRAM-SHA-256": "password=alice-secret", "SCRAM-SHA-512": "password=alice-secret"},
        ),
        (
            "listener.name.internal.ssl.endpoint.identification.algorithm=",
            {"listener.name.internal.ssl.endpoint.identification.algorithm": ""},
        ),
        # brackets may wrap part of a value; they are still all removed (Kafka's replaceAll)
        ("a=x[y,z]w", {"a": "xy,zw"}),
        ("a=[x]y", {"a": "xy"}),
        # other punctuation is just value text
        ("a=x:y;z/w", {"a": "x:y;z/w"}),
        ("a=caf\u00e9", {"a": "caf\u00e9"}),
        # a trailing comma is ignored, as Java's split ignores trailing empty strings
        ("a=1,", {"a": "1"}),
        ("a=1,,", {"a": "1"}),
        # Java's trim removes control characters too, but not Unicode spaces
        ("a=\x01v\x01", {"a": "v"}),
        ("a=\u00a0v\u00a0", {"a": "\u00a0v\u00a0"}),
        (
            "producer_byte_rate=1024,consumer_byte_rate=2048",
            {"producer_byte_rate": "1024", "consumer_byte_rate": "2048"},
        ),
    ],
)
def test_parse_add_config(text, expected):
    result = parse_add_config(text)
    assert result == expected
    assert list(result) == list(expected)  # order of the command line is kept


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--add-config is empty"),
        ("   ", "--add-config is empty"),
        ("a", "entry 1 of --add-config is not key=value"),
        ("a=1,b", "entry 2 of --add-config \\(after 'a'\\) is not key=value"),
        ("a=1=2", "entry 1 of --add-config is not key=value; a value holding ',' or '=' must be written in"),
        ("a=1,,b=2", "entry 2 of --add-config \\(after 'a'\\) is not key=value"),
        (",a=1", "entry 1 of --add-config is not key=value"),
        ("a=1, ", "entry 2 of --add-config \\(after 'a'\\) is not key=value"),
        ("a=x,y", "entry 2 of --add-config \\(after 'a'\\) is not key=value"),
        ("=1", "entry 1 of --add-config has an empty config name"),
        (" = 1", "has an empty config name"),
        ("=", "has an empty config name"),
        (",", "holds no key=value entries"),
        ("a=1,a=2", "sets 'a' more than once"),
        ("a=1, a =2", "sets 'a' more than once"),
        ("a=[x,y", "unbalanced brackets.*never closed"),
        ("a=x]", "unbalanced brackets.*without '\\['"),
        ("a=x],b=[y", "unbalanced brackets"),
        ("a=[[x]]", "nested brackets"),
        ("a=[x,[y]]", "nested brackets"),
        ("my key=1", "invalid character in config name 'my key'"),
        ("a/b=1", "invalid character in config name 'a/b'"),
        ("[a]=1", "invalid character in config name '\\[a\\]'"),
        ("caf\u00e9=1", "invalid character in config name"),
    ],
)
def test_parse_add_config_errors(text, message):
    """One line naming the entry or key at fault (and never the value: it may be a secret)."""
    with pytest.raises(InvalidInput, match=message) as info:
        parse_add_config(text)
    assert "\n" not in str(info.value)


_keys = st.from_regex(r"\A[a-zA-Z0-9._-]{1,30}\Z")
# Values without brackets and without characters Java's trim would eat at either end.
_values = st.text(st.characters(exclude_characters="[]", exclude_categories=("Cs",)), max_size=20).filter(
    lambda v: java_trim(v) == v
)
_spaces = st.sampled_from(["", " ", "  ", "\t"])


@given(st.dictionaries(_keys, _values, min_size=1, max_size=6), st.data())
def test_parse_add_config_reads_what_an_operator_writes(config, data):
    parts = []
    for key, value in config.items():
        shown = f"[{value}]" if ("," in value or "=" in value) else value
        before, after = data.draw(_spaces), data.draw(_spaces)
        parts.append(f"{before}{key}{data.draw(_spaces)}={data.draw(_spaces)}{shown}{after}")
    text = ",".join(parts)
    assert parse_add_config(text) == config


@given(st.text(max_size=40))
def test_parse_add_config_only_raises_invalid_input(text):
    try:
        result = parse_add_config(text)
    except InvalidInput:
        return
    for key, value in result.items():
        validate_config_key(key)
        assert "[" not in value and "]" not in value


# -- --delete-config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("retention.ms", ["retention.ms"]),
        ("a,b", ["a", "b"]),
        (" a , b ", ["a", "b"]),
        ("b,a,c", ["b", "a", "c"]),
        ("a,,b,", ["a", "b"]),  # empty pieces are skipped (joptsimple's tokenizer)
        ("SCRAM-SHA-256", ["SCRAM-SHA-256"]),
    ],
)
def test_parse_delete_config(text, expected):
    assert parse_delete_config(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--delete-config is empty"),
        (" , ,", "--delete-config is empty"),
        ("a,b,a", "names a more than once"),
        ("a, a", "names a more than once"),
        ("a=1", "invalid character in config name 'a=1'"),
        ("a b", "invalid character"),
    ],
)
def test_parse_delete_config_errors(text, message):
    with pytest.raises(InvalidInput, match=message):
        parse_delete_config(text)


# -- properties files -----------------------------------------------------------------------------


def _write(tmp_path, content, name="add.properties"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("a=1\n", {"a": "1"}),
        ("a=1", {"a": "1"}),  # no final newline
        ("", {}),
        # the three separators, and whitespace around them
        ("a=1\nb:2\nc 3\nd = 4\ne\t:\t5\n", {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}),
        # comments and blank lines
        ("# comment\n! also a comment\n\n   \na=1\n  # indented comment\n", {"a": "1"}),
        ("a=1 # not a comment\n", {"a": "1 # not a comment"}),
        # trailing spaces in values are kept, leading ones dropped
        ("a=  x  \n", {"a": "x  "}),
        # empty value and key without value
        ("a=\nb\n", {"a": "", "b": ""}),
        # line continuations: the next line's leading whitespace is dropped
        ("list=a,\\\n     b,\\\n     c\n", {"list": "a,b,c"}),
        ("a=x\\\n", {"a": "x"}),
        # escapes
        ("a=tab\\there\\nnl\n", {"a": "tab\there\nnl"}),
        ("a\\=b=c\n", {"a=b": "c"}),
        ("a\\:b=c\\=d\n", {"a:b": "c=d"}),
        ("path=C:\\\\dir\\\\file\n", {"path": "C:\\dir\\file"}),
        ("a\\ b=c\n", {"a b": "c"}),
        ("a=\\#x\n", {"a": "#x"}),
        # unicode: \u escapes (surrogate pairs too) and literal UTF-8
        ("a=caf\\u00e9 \\uD83D\\uDD11\n", {"a": "caf\u00e9 \U0001f511"}),
        ("a=caf\u00e9 \U0001f511\n", {"a": "caf\u00e9 \U0001f511"}),
        ("\u00e9t\u00e9=summer\n", {"\u00e9t\u00e9": "summer"}),
        # CRLF and lone CR line endings
        ("a=1\r\nb=2\r\n", {"a": "1", "b": "2"}),
        ("a=1\rb=2\r", {"a": "1", "b": "2"}),
        # the last of a repeated key wins, as in java.util.Properties
        ("a=1\na=2\n", {"a": "2"}),
        # a UTF-8 byte order mark is skipped
        ("\ufeffa=1\n", {"a": "1"}),
    ],
)
def test_load_properties_file(tmp_path, content, expected):
    assert load_properties_file(_write(tmp_path, content)) == expected


def test_load_properties_file_accepts_str_path(tmp_path):
    path = _write(tmp_path, "retention.ms=1000\n")
    assert load_properties_file(str(path)) == {"retention.ms": "1000"}


def test_load_properties_file_missing(tmp_path):
    path = tmp_path / "nope.properties"
    with pytest.raises(InvalidInput, match=f"properties file {path}: no such file"):
        load_properties_file(path)


def test_load_properties_file_directory(tmp_path):
    with pytest.raises(InvalidInput, match="is a directory"):
        load_properties_file(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_load_properties_file_unreadable(tmp_path):
    path = _write(tmp_path, "a=1\n")
    path.chmod(0)
    with pytest.raises(InvalidInput, match="permission denied"):
        load_properties_file(path)


def test_load_properties_file_not_utf8(tmp_path):
    path = _write(tmp_path, b"a=caf\xe9\n")  # Latin-1
    with pytest.raises(InvalidInput, match=f"properties file {path} is not UTF-8") as info:
        load_properties_file(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("content", ["a=\\u00zz\n", "a=\\u12\n"])
def test_load_properties_file_bad_unicode_escape(tmp_path, content):
    path = _write(tmp_path, content)
    with pytest.raises(InvalidInput, match=f"properties file {path} is malformed"):
        load_properties_file(path)


# -- merging --------------------------------------------------------------------------------------


def test_add_config_and_add_config_file_are_exclusive_as_in_kafka(tmp_path):
    """Kafka 3.9 ConfigCommand: "Only one of --add-config or --add-config-file must be specified"."""
    path = _write(tmp_path, "retention.ms=1000\n")
    with pytest.raises(InvalidInput, match="not both"):
        added_configs("segment.ms=5", str(path))
    assert added_configs(None, str(path)) == {"retention.ms": "1000"}
    assert added_configs("segment.ms=5", None) == {"segment.ms": "5"}
    assert added_configs(None, None) == {}


def test_added_configs_checks_file_keys(tmp_path):
    with pytest.raises(InvalidInput, match="invalid character in config name 'bad key'"):
        added_configs(None, str(_write(tmp_path, "bad\\ key=1\n")))


def test_java_trim():
    assert java_trim("\x00\x1f a b \x20") == "a b"
    assert java_trim("\u2003x\u2003") == "\u2003x\u2003"


SECRET = "hunter2-s3cret"


@pytest.mark.parametrize(
    "text",
    [
        f"SCRAM-SHA-256=[iterations=8192,password={SECRET}",  # unbalanced bracket in a SCRAM spec
        f"SCRAM-SHA-256=[password={SECRET}]]",  # a ']' inside a password
        f"SCRAM-SHA-256=[password=[{SECRET}]]",
        f"password.encoder.secret=[{SECRET}",
        f"listener.name.x.plain.sasl.jaas.config=a password={SECRET},b",  # a ',' outside [...]
        f"ssl.keystore.password={SECRET}=x",
        f"SCRAM-SHA-512=password={SECRET},iterations=4096",
        f"a=1,{SECRET}",
    ],
)
def test_no_add_config_error_echoes_a_value(text):
    """Issue 13: 10 of 33 bad inputs holding a secret printed it; none may."""
    with pytest.raises(InvalidInput) as caught:
        parse_add_config(text)
    assert SECRET not in str(caught.value)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


def test_echoed_names_are_cut_short():
    with pytest.raises(InvalidInput) as caught:
        parse_add_config("x" * 100_000 + " y=1")
    assert len(str(caught.value)) < 300
