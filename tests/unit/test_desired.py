"""Desired-state files (see docs/reference/desired-state-files.md): reading, checking and writing them, without ZooKeeper."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import REPO_ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from configctl import catalogue, values
from configctl.desired import document as desired
from configctl.desired import syntax
from configctl.entities import DEFAULT, TYPE_ORDER, ZOOKEEPER_TYPES, Entity, EntityType
from configctl.errors import InvalidInput, ValidationFailed

pytestmark = pytest.mark.unit

TOPIC = EntityType.TOPICS
USERS = EntityType.USERS


def parse(text: str, **kwargs) -> desired.DesiredState:
    return desired.parse(textwrap.dedent(text), source="f.yaml", **kwargs)


def problems(text: str, **kwargs) -> list[str]:
    with pytest.raises(ValidationFailed) as caught:
        parse(text, **kwargs)
    return caught.value.problems


def error(text: str, **kwargs) -> str:
    with pytest.raises(InvalidInput) as caught:
        parse(text, **kwargs)
    return str(caught.value)


# -- the format --------------------------------------------------------------------------------


def test_contract_example_reads_as_stored_strings():
    state = parse(
        """
        topics:
          orders: {retention.ms: 86400000, cleanup.policy: [compact, delete]}
        brokers:
          <default>: {log.retention.ms: 3600000}
        users:
          User:alice:
            producer_byte_rate: 1048576
            clients:
              app1: {consumer_byte_rate: 2048}
        """
    )
    assert dict(state.configs) == {
        Entity.of(TOPIC, "orders"): {"retention.ms": "86400000", "cleanup.policy": "compact,delete"},
        Entity.of(EntityType.BROKERS, DEFAULT): {"log.retention.ms": "3600000"},
        Entity.of(USERS, "User:alice"): {"producer_byte_rate": "1048576"},
        Entity.of(USERS, "User:alice", "app1"): {"consumer_byte_rate": "2048"},
    }
    assert state.types == {TOPIC, EntityType.BROKERS, USERS}


def test_clients_under_a_user_is_not_a_config_key_and_defaults_nest():
    state = parse(
        """
        users:
          <default>:
            producer_byte_rate: 2048
            clients:
              <default>: {producer_byte_rate: 1024}
        """
    )
    assert dict(state.configs) == {
        Entity.of(USERS, DEFAULT): {"producer_byte_rate": "2048"},
        Entity.of(USERS, DEFAULT, DEFAULT): {"producer_byte_rate": "1024"},
    }


def test_a_user_entry_with_only_clients_does_not_list_the_user():
    # so a file that manages client quotas never wipes the user's own overrides (SCRAM credentials)
    state = parse("users: {User:a: {clients: {app: {consumer_byte_rate: 1}}}, User:b: {}}")
    assert dict(state.configs) == {
        Entity.of(USERS, "User:a", "app"): {"consumer_byte_rate": "1"},
        Entity.of(USERS, "User:b"): {},
    }


def test_user_is_listed_before_its_clients():
    state = parse("users: {User:bob: {clients: {c1: {}}, producer_byte_rate: 1}}")
    assert list(state.configs) == [Entity.of(USERS, "User:bob"), Entity.of(USERS, "User:bob", "c1")]


@pytest.mark.parametrize("body", ["{}", "", "null"])
def test_empty_or_null_entity_means_no_overrides(body):
    state = parse(f"topics:\n  orders: {body}\n")
    assert dict(state.configs) == {Entity.of(TOPIC, "orders"): {}}


def test_an_empty_section_still_names_its_type_for_prune():
    state = parse("topics: {}\nusers:\n")
    assert state.configs == {}
    assert state.types == {TOPIC, USERS}


def test_empty_file_lists_nothing():
    assert parse("").configs == {} and parse("# only a comment\n").types == frozenset()


@pytest.mark.parametrize(
    ("key", "written", "stored"),
    [
        ("retention.ms", "86400000", "86400000"),
        ("retention.ms", "-1", "-1"),
        ("retention.ms", "'007'", "007"),
        ("preallocate", "true", "true"),
        ("preallocate", "False", "false"),
        ("min.cleanable.dirty.ratio", "0.5", "0.5"),
        ("min.cleanable.dirty.ratio", "1.0", "1.0"),
        ("cleanup.policy", "[]", ""),
        ("cleanup.policy", '""', ""),
    ],
)
def test_scalars_become_kafkas_strings(key, written, stored):
    state = desired.parse(f"topics: {{t: {{{key}: {written}}}}}", source="f")
    assert state.configs[Entity.of(TOPIC, "t")] == {key: stored}


@pytest.mark.parametrize(
    "written", ["1:2", "0x10", "010", "0o17", "1_000", "yes", "off", "2024-01-01", "1e3"]
)
def test_yaml_1_1_surprises_stay_as_written(written):
    # YAML 1.1 would read these as 62, 16, 8, 15, 1000, true, false, a date and (1e3) a string anyway.
    assert syntax.parse_yaml(f"k: {written}", "f") == {"k": written}


@pytest.mark.parametrize(
    ("written", "value"), [("~", None), ("null", None), ("", None), (".inf", float("inf"))]
)
def test_null_and_special_floats(written, value):
    assert syntax.parse_yaml(f"k: {written}", "f") == {"k": value}


def test_list_items_that_look_like_base60_numbers_keep_their_text():
    state = parse("topics: {t: {leader.replication.throttled.replicas: [0:1, 1:2, 12:30]}}")
    assert state.configs[Entity.of(TOPIC, "t")] == {"leader.replication.throttled.replicas": "0:1,1:2,12:30"}


def test_names_and_keys_are_the_text_as_written():
    state = parse("topics: {'true': {}, '1e5': {}, null: {}}\nbrokers: {1: {}, <default>: {}}")
    names = {e.name for e in state.configs}
    assert names == {"true", "1e5", "null", "1", DEFAULT}


def test_merge_keys_share_settings_and_explicit_keys_win():
    state = parse(
        """
        topics:
          a: &base {retention.ms: 1000, cleanup.policy: [compact]}
          b:
            <<: *base
            retention.ms: 2000
        """
    )
    assert state.configs[Entity.of(TOPIC, "b")] == {"retention.ms": "2000", "cleanup.policy": "compact"}


def test_json_is_accepted_and_keeps_number_text():
    state = desired.parse(
        json.dumps({"topics": {"t": {"retention.ms": 5, "cleanup.policy": ["delete"], "preallocate": True}}}),
        source="f.json",
        is_json=True,
    )
    assert state.configs[Entity.of(TOPIC, "t")] == {
        "retention.ms": "5",
        "cleanup.policy": "delete",
        "preallocate": "true",
    }


def test_parse_bytes_picks_json_by_name_and_reads_utf8_bom():
    raw = "\ufeff" + json.dumps({"topics": {"t": {"retention.ms": 5}}})
    assert len(desired.parse_bytes(raw.encode(), "x.json")) == 1
    with pytest.raises(InvalidInput, match=r"x.yaml: not UTF-8"):
        desired.parse_bytes(b"\xff\xfe", "x.yaml")


# -- mistakes: one line, naming file, line, entity and key --------------------------------------


def test_duplicate_keys_are_refused_with_both_lines():
    message = error("topics:\n  a: {retention.ms: 1}\n  a: {retention.ms: 2}\n")
    assert message == "f.yaml:3: duplicate key 'a' (first given at line 2)"
    message = error("topics:\n  a:\n    retention.ms: 1\n    retention.ms: 2\n")
    assert message.startswith("f.yaml:4: duplicate key 'retention.ms'")


def test_duplicate_keys_in_json_are_refused():
    with pytest.raises(InvalidInput, match=r"duplicate key 'retention\.ms'"):
        desired.parse(
            '{"topics": {"a": {"retention.ms": 1, "retention.ms": 2}}}', source="f.json", is_json=True
        )


def test_yaml_syntax_error_names_file_and_line():
    message = error("topics:\n  a: {retention.ms: 1\n")
    assert message.startswith("f.yaml:3: invalid YAML:") and "\n" not in message


def test_json_syntax_error_names_file_and_line():
    with pytest.raises(InvalidInput, match=r"^f.json:2: invalid JSON"):
        desired.parse('{"topics":\n {"a": }}', source="f.json", is_json=True)


@pytest.mark.parametrize("text", ["- a\n- b\n", "just text\n", "5\n"])
def test_document_must_be_a_mapping(text):
    assert "is a mapping of entity types" in error(text)


def test_every_problem_in_the_file_is_reported_at_once_in_file_order():
    found = problems(
        """
        topics:
          orders: {retention.ms: abc, cleanup.policy: [compact, nope]}
          "bad name!": {}
          ok:
            retention.bytes: null
            segment.ms: {a: 1}
        topic: {}
        brokers:
          x1: {}
          <default>: [1, 2]
        users:
          User:bob:
            clients: [1, 2]
          <default>: {SCRAM-SHA-256: password=x}
        """
    )
    assert found == [
        "f.yaml:3: topics/orders: retention.ms: 'abc' is not a valid long: expected a whole number",
        "f.yaml:3: topics/orders: cleanup.policy: item 'nope' is not one of compact, delete",
        "f.yaml:4: topics/bad name!: topic name 'bad name!' is invalid: only ASCII letters, digits, "
        "'.', '_' and '-' are allowed",
        "f.yaml:6: topics/ok: retention.bytes: has no value (write '' for an empty value)",
        "f.yaml:7: topics/ok: segment.ms: a mapping is not a config value (use a string, number, "
        "boolean or list)",
        "f.yaml:8: unknown entity type 'topic' (did you mean 'topics'?)",
        "f.yaml:10: brokers/x1: broker name 'x1' must be a non-negative integer broker id or <default>",
        "f.yaml:11: brokers/<default>: expected a mapping of config keys to values, not a list",
        "f.yaml:14: users/User:bob: clients must map client ids to configs, not a list",
        "f.yaml:15: users/<default>: SCRAM-SHA-256 can only be set for a named user (users/<user>), "
        "not at users/<default>",
    ]


def test_unknown_type_lists_the_known_ones():
    assert problems("queues: {}")[0] == (
        "f.yaml:1: unknown entity type 'queues' "
        "(expected one of: topics, clients, users, brokers, ips, groups, client-metrics)"
    )


def test_unknown_key_gets_a_suggestion_and_its_line():
    found = problems("topics:\n  t:\n    retention.ms: 1\n    retension.ms: 2\n")
    assert found == ["f.yaml:4: topics/t: unknown topic config 'retension.ms' (did you mean 'retention.ms'?)"]


def test_cross_field_rules_run_on_each_topic():
    found = problems("topics: {t: {min.compaction.lag.ms: 10, max.compaction.lag.ms: 5}}")
    assert len(found) == 1 and "min.compaction.lag.ms (10) must not be greater" in found[0]


def test_repeated_bad_values_are_reported_for_every_topic():
    # Per-key checks are memoized per (key, value); each topic must still get its own problem.
    found = problems("topics: {a: {retention.ms: x}, b: {retention.ms: x}}")
    assert [p.split(": ")[1] for p in found] == ["topics/a", "topics/b"]


def test_custom_broker_keys_need_allow_custom():
    text = "brokers: {'1': {my.plugin.setting: 5}}"
    assert "use --allow-custom-config" in problems(text)[0]
    assert parse(text, allow_custom=True).configs[Entity.of(EntityType.BROKERS, "1")] == {
        "my.plugin.setting": "5"
    }


def test_scram_may_be_a_password_spec_or_a_stored_credential():
    state = parse("users: {User:a: {SCRAM-SHA-256: [iterations=8192, password=s3cret]}}")
    assert state.configs[Entity.of(USERS, "User:a")] == {"SCRAM-SHA-256": "iterations=8192,password=s3cret"}
    bad = problems("users: {User:a: {SCRAM-SHA-512: 'iterations=10,password=x'}}")
    assert bad == [
        "f.yaml:1: users/User:a: SCRAM-SHA-512 iterations 10 is outside the allowed range 4096..16384"
    ]
    assert "not a stored SCRAM credential" in problems("users: {User:a: {SCRAM-SHA-256: salt=nonsense}}")[0]


def test_secrets_never_appear_in_messages():
    found = problems("users: {User:a: {SCRAM-SHA-256: 'iterations=x,password=hunter2'}}")
    assert found and all("hunter2" not in p for p in found)


def test_very_many_problems_make_one_bounded_line():
    text = "topics:\n" + "".join(f"  t{i}: {{retention.ms: x}}\n" for i in range(150))
    with pytest.raises(ValidationFailed) as caught:
        desired.parse(text, source="f")
    assert len(caught.value.problems) == 150
    assert "... and 50 more" in str(caught.value) and "\n" not in str(caught.value)


def test_load_reports_missing_file(tmp_path):
    with pytest.raises(InvalidInput, match="no such file"):
        desired.load(tmp_path / "nope.yaml")
    with pytest.raises(InvalidInput, match="is a directory"):
        desired.load(tmp_path)


# -- writing: export must read back to exactly the stored strings -------------------------------


def roundtrip(
    configs: dict[Entity, dict[str, str]], *, as_json: bool = False
) -> dict[Entity, dict[str, str]]:
    """export's writer, then the reader's value rules (validation left out: any stored string)."""
    text = syntax.dump(desired.to_document(configs.items(), TYPE_ORDER), as_json=as_json)
    document = syntax.parse_json(text, "x") if as_json else syntax.parse_yaml(text, "x")
    result = {}
    for type_name, section in document.items():
        for name, body in section.items():
            entity = Entity.of(type_name, name)
            result[entity] = {
                key: values.normalize_value(catalogue.lookup(entity.schema_type, key), value, name=key)
                for key, value in body.items()
            }
    return result


def test_export_document_reads_well():
    configs = {
        Entity.of(TOPIC, "orders"): {"retention.ms": "86400000", "cleanup.policy": "compact,delete"},
        Entity.of(USERS, "User:alice", "app1"): {"consumer_byte_rate": "2048"},
        Entity.of(EntityType.BROKERS, "10"): {"log.retention.ms": "1"},
        Entity.of(EntityType.BROKERS, "9"): {"log.retention.ms": "2"},
        Entity.of(EntityType.BROKERS, DEFAULT): {"log.retention.ms": "3"},
    }
    text = syntax.dump(desired.to_document(configs.items(), TYPE_ORDER))
    assert text == textwrap.dedent(
        """\
        topics:
          orders:
            cleanup.policy: [compact, delete]
            retention.ms: 86400000
        clients: {}
        users:
          User:alice:
            clients:
              app1:
                consumer_byte_rate: 2048
        brokers:
          <default>:
            log.retention.ms: 3
          '9':
            log.retention.ms: 2
          '10':
            log.retention.ms: 1
        ips: {}
        """
    )


def test_kafka4_families_get_a_section_only_when_they_hold_entries():
    """An empty groups or client-metrics section would make a ZooKeeper cluster's export one it
    refuses to plan; a KRaft cluster's groups with overrides are exported as any family is."""
    group = Entity.of(EntityType.GROUPS, "payments")
    document = desired.to_document([(group, {"consumer.session.timeout.ms": "50000"})], TYPE_ORDER)
    assert list(document) == ["topics", "clients", "users", "brokers", "ips", "groups"]
    assert document["groups"] == {"payments": {"consumer.session.timeout.ms": 50000}}
    assert list(desired.to_document([], TYPE_ORDER)) == ["topics", "clients", "users", "brokers", "ips"]


@pytest.mark.parametrize(
    "value",
    ["007", "1.50", "+5", "-0", "1e3", "True", "yes", "", " 5", "a, b", "1:2", "NaN", "Infinity", "1.0E9"],
)
def test_odd_stored_values_round_trip_exactly(value):
    configs = {Entity.of(TOPIC, "t"): {"retention.ms": value, "cleanup.policy": value}}
    assert roundtrip(configs) == configs
    assert roundtrip(configs, as_json=True) == configs


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    values=st.dictionaries(
        st.sampled_from(
            ["retention.ms", "cleanup.policy", "min.cleanable.dirty.ratio", "preallocate", "x.y"]
        ),
        st.one_of(
            _text,
            st.integers().map(str),
            st.floats(allow_nan=False).map(str),
            st.sampled_from(["true", "false"]),
        ),
        max_size=5,
    )
)
def test_any_stored_config_round_trips(values):
    # export writes what is stored; reading it back must give the same strings, whatever they are.
    entity = Entity.of(TOPIC, "t")
    configs = {entity: values} if values else {}
    assert roundtrip(configs) == configs


def test_x_keys_hold_anchors_and_are_ignored():
    state = parse(
        """
        x-defaults: &d {retention.ms: 5}
        topics: {a: {<<: *d}}
        """
    )
    assert dict(state.configs) == {Entity.of(TOPIC, "a"): {"retention.ms": "5"}}
    assert state.types == {TOPIC}


def test_the_example_in_examples_is_valid():
    example = Path(__file__).resolve().parents[2] / "examples" / "desired-state.yaml"
    state = desired.load(example)
    assert len(state) == 15 and state.types == set(ZOOKEEPER_TYPES)
    assert state.configs[Entity.of(TOPIC, "payments")]["cleanup.policy"] == "compact"


# -- hostile files: bounded work, one-line errors ------------------------------------------------


def alias_bomb(levels: int, *, fan: int = 9, used: bool = False) -> str:
    """Each level a list of ``fan`` aliases to the level below: ``fan ** levels`` leaves from a few bytes."""
    lines = ["x-bomb:", "  a0: &a0 [" + ",".join(["x"] * fan) + "]"]
    for level in range(1, levels + 1):
        lines.append(f"  a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * fan) + "]")
    lines.append(
        f"topics: {{t: {{cleanup.policy: *a{levels}}}}}" if used else "topics: {t: {retention.ms: 1}}"
    )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("used", [False, True], ids=["under-an-ignored-key", "used-by-a-topic"])
def test_alias_bombs_are_refused_with_the_line_that_crosses_the_budget(used):
    text = alias_bomb(7, used=used)
    assert len(text) < 450  # 9**7 = 4.8 million leaves: minutes and gigabytes when expanded
    message = error(text)
    # the aliases of lines 3-5 reach 8,289 nodes; the first alias to a3 (7,381 more) crosses the budget
    assert message.startswith("f.yaml:6: ") and "aliases reach more than" in message
    assert "\n" not in message


def test_anchors_shared_by_thousands_of_entities_are_fine():
    profile = ", ".join(f"k{i}: v" for i in range(5))
    merged = "".join(f"  m{i:04d}: {{<<: *d, retention.ms: {i}}}\n" for i in range(3000))
    state = parse(
        "x-defaults: &d {retention.bytes: 1, cleanup.policy: [delete], segment.ms: 2, min.insync.replicas: 2}\n"
        "topics:\n" + merged
    )
    assert len(state) == 3000
    assert state.configs[Entity.of(TOPIC, "m2999")]["retention.ms"] == "2999"
    # a bare alias as a whole entity body, 20 nodes each, for 5,000 entities
    plain = syntax.parse_yaml(
        f"x-p: &p {{{profile}, k5: [a, b, c]}}\nall:\n" + "".join(f"  e{i}: *p\n" for i in range(5000)), "f"
    )
    assert len(plain["all"]) == 5000 and plain["all"]["e4999"]["k5"] == ["a", "b", "c"]


def test_an_alias_inside_its_own_anchor_is_refused():
    assert error("x-a: &a [1, *a]\n") == "f.yaml:1: invalid YAML: alias *a is used inside its own anchor"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("x-deep: " + "[" * 60 + "]" * 60 + "\n", 1),
        ("topics:\n  t:\n    k: " + "{a: " * 60 + "1" + "}" * 60 + "\n", 3),
        # the alias itself sits shallow, but what it stands for is 45 levels deep
        ("x-a: &a " + "[" * 45 + "]" * 45 + "\nx-b: [[[[[[*a]]]]]]\n", 2),
    ],
)
def test_nesting_is_limited(text, line):
    assert error(text) == f"f.yaml:{line}: the document is nested too deeply (more than 50 levels)"


def test_nesting_is_limited_in_json_too():
    with pytest.raises(InvalidInput, match="nested too deeply"):
        desired.parse('{"x-a": ' + "[" * 60 + "]" * 60 + "}", source="f.json", is_json=True)


def test_nested_merge_keys_are_flattened_as_yaml_says():
    state = parse(
        """
        x-base: &base {retention.ms: 1, segment.ms: 2}
        x-compacted: &compacted {<<: *base, cleanup.policy: [compact]}
        topics:
          t: {<<: *compacted, segment.ms: 3}
        """
    )
    assert state.configs[Entity.of(TOPIC, "t")] == {
        "retention.ms": "1",
        "segment.ms": "3",
        "cleanup.policy": "compact",
    }


def test_other_yaml_mistakes_keep_their_line():
    assert error("a: *nope\n") == "f.yaml:1: invalid YAML: found undefined alias 'nope'"
    assert error("a: &x 1\nb: &x 2\n").startswith("f.yaml:2: invalid YAML: found duplicate anchor 'x'")
    assert error("a: 1\n---\nb: 2\n") == (
        "f.yaml:2: invalid YAML: expected a single document in the stream but found another document"
    )
    assert error("[a]: 1\n") == "f.yaml:1: a key must be a plain name"
    assert error("a: !!binary aGk=\n") == "f.yaml:1: unsupported YAML tag 'tag:yaml.org,2002:binary'"


HUGE = "9" * 5000


@pytest.mark.parametrize("is_json", [False, True], ids=["yaml", "json"])
def test_a_number_of_thousands_of_digits_is_read_as_its_text(is_json):
    # as every bare number is: its decimal text, which validation then judges (out of range here)
    text = (
        json.dumps({"topics": {"t": {"retention.ms": 0}}}).replace("0}", HUGE + "}")
        if is_json
        else f"topics: {{t: {{retention.ms: {HUGE}}}}}\n"
    )
    with pytest.raises(ValidationFailed) as caught:
        desired.parse(text, source="f.json" if is_json else "f.yaml", is_json=is_json)
    (problem,) = caught.value.problems
    assert "topics/t: retention.ms:" in problem and "out of range for a long" in problem
    assert syntax.parse_yaml(f"k: -{HUGE}\n", "f") == {"k": "-" + HUGE}
    assert syntax.parse_yaml(f"k: +{HUGE}\n", "f") == {"k": HUGE}


def test_a_stored_value_of_thousands_of_digits_exports_and_reads_back():
    configs = {Entity.of(TOPIC, "t"): {"retention.ms": HUGE, "cleanup.policy": HUGE}}
    assert roundtrip(configs) == configs
    assert roundtrip(configs, as_json=True) == configs


# -- hostile input through the command line (the file is read before ZooKeeper is reached) -------

NO_ZOOKEEPER = ("--zookeeper", "127.0.0.1:1", "--zk-timeout", "1")


def test_thirty_thousand_nested_brackets_are_one_line_not_a_crash(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("x-a: " + "[" * 30000 + "]" * 30000 + "\n")
    result = run_cli(*NO_ZOOKEEPER, "plan", "-f", str(deep))
    # Our promise, whichever layer stops it first (our 50-level limit, or the YAML scanner's own
    # when it looks ahead): exit 1, one line naming the file and line, saying it is the nesting.
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {deep}:1: ") and result.stderr.count("\n") == 1
    assert "nest" in result.stderr.lower() and "Traceback" not in result.stderr


def test_an_alias_bomb_is_one_line_through_the_cli(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb(7))
    result = run_cli(*NO_ZOOKEEPER, "plan", "-f", str(bomb))
    assert result.returncode == 1 and result.stderr.startswith(f"error: {bomb}:6: aliases reach more than")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("args", [("plan", "-f", "-"), ("apply", "--yes", "-f", "-")])
def test_a_device_on_stdin_is_refused_before_reading_it(args):
    with open("/dev/zero", "rb") as zero:
        completed = subprocess.run(
            [sys.executable, "-m", "configctl", *NO_ZOOKEEPER, *args],
            stdin=zero,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO_ROOT,
            check=False,
        )
    assert (completed.returncode, completed.stderr) == (1, "error: <stdin>: not a regular file\n")


@pytest.mark.parametrize("option", ["-f", "--plan"])
def test_a_device_as_a_file_is_refused(tmp_path, option):
    ok = tmp_path / "ok.yaml"
    ok.write_text("topics: {}\n")
    args = ["-f", "/dev/zero"] if option == "-f" else ["-f", str(ok), "--plan", "/dev/zero"]
    result = run_cli(*NO_ZOOKEEPER, "apply", "--yes", *args)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "/dev/zero: not a regular file" in result.stderr


def test_a_pipe_on_stdin_is_read():
    result = run_cli(*NO_ZOOKEEPER, "plan", "-f", "-", input="topics:\n  t: {retention.ms: soon}\n")
    assert result.returncode == 1 and "<stdin>:2: topics/t: retention.ms: 'soon'" in result.stderr


def test_the_secrets_marker_is_read_and_checked():
    assert parse("x-configctl-secrets: omitted\ntopics: {}\n").secrets_omitted
    assert not parse("topics: {}\n").secrets_omitted
    assert problems("x-configctl-secrets: yes\n") == [
        "f.yaml:1: x-configctl-secrets: expected 'omitted' (written by export --no-secrets), not 'yes'"
    ]


def test_export_without_secrets_leaves_sensitive_keys_out_and_says_so():
    configs = {
        Entity.of(USERS, "alice"): {"SCRAM-SHA-256": "salt=x,stored_key=y", "producer_byte_rate": "1"},
        Entity.of(USERS, "bob"): {"SCRAM-SHA-512": "salt=x"},
        Entity.of(EntityType.BROKERS, "1"): {"ssl.key.password": "encrypted", "log.cleaner.threads": "2"},
    }
    document = desired.to_document(configs.items(), TYPE_ORDER, include_secrets=False)
    assert next(iter(document.items())) == ("x-configctl-secrets", "omitted")
    assert document["users"] == {"alice": {"producer_byte_rate": 1}}
    assert document["brokers"] == {"1": {"log.cleaner.threads": 2}}
    assert desired.parse(syntax.dump(document), source="f").secrets_omitted
