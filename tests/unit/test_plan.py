"""Plans computed from a desired state and a stored state, without ZooKeeper."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from configctl import secrets
from configctl.cli.desired import SUMMARY_AFTER_LINES, render_plan
from configctl.desired import apply as applying
from configctl.desired import document as desired
from configctl.desired import plan
from configctl.entities import DEFAULT, Entity, EntityType
from configctl.errors import Conflict, InvalidInput
from configctl.zk.configstore import Change, Stored

pytestmark = pytest.mark.unit

TOPIC = EntityType.TOPICS
ORDERS = Entity.of(TOPIC, "orders")
OLD = Entity.of(TOPIC, "old")
ALICE = Entity.of(EntityType.USERS, "User:alice")


def state(text: str, **kwargs) -> desired.DesiredState:
    return desired.parse(text, source="f.yaml", **kwargs)


def kinds(result: plan.Plan) -> dict[str, list[tuple[str, str]]]:
    return {e.entity.path: [(d.kind, d.name) for d in e.diff] for e in result.entities}


def test_add_change_delete_per_key():
    stored = [Stored(ORDERS, {"retention.ms": "1", "segment.bytes": "1073741824"}, 3)]
    result = plan.compute_plan(
        state("topics: {orders: {retention.ms: 2, cleanup.policy: [compact]}}"), stored
    )
    assert kinds(result) == {
        "topics/orders": [("add", "cleanup.policy"), ("change", "retention.ms"), ("delete", "segment.bytes")]
    }
    (only,) = result.entities
    assert only.version == 3 and only.target == {"retention.ms": "2", "cleanup.policy": "compact"}
    assert result.counts() == {"add": 1, "change": 1, "delete": 1} and result.key_changes == 3
    assert only.change() == Change(
        ORDERS, only.target, 3, previous={"retention.ms": "1", "segment.bytes": "1073741824"}
    )


def test_nothing_to_do_when_stored_matches():
    stored = [Stored(ORDERS, {"retention.ms": "2"}, 0)]
    result = plan.compute_plan(state("topics: {orders: {retention.ms: 2}}"), stored)
    assert not result.changed and result.entities == () and result.seen == {ORDERS: 0}


def test_empty_mapping_deletes_every_key_and_absent_empty_entity_is_no_change():
    stored = [Stored(ORDERS, {"retention.ms": "2", "cleanup.policy": "delete"}, 1)]
    result = plan.compute_plan(state("topics: {orders: {}, ghost: {}}"), stored)
    assert kinds(result) == {"topics/orders": [("delete", "cleanup.policy"), ("delete", "retention.ms")]}
    assert result.seen == {ORDERS: 1, Entity.of(TOPIC, "ghost"): -1}


def test_new_entity_is_created_from_version_minus_one():
    result = plan.compute_plan(state("topics: {orders: {retention.ms: 2}}"), [])
    (only,) = result.entities
    assert only.version == -1 and only.to_json()["version"] is None


def test_unlisted_entities_are_untouched_without_prune():
    stored = [Stored(ORDERS, {"retention.ms": "2"}, 0), Stored(OLD, {"retention.ms": "5"}, 4)]
    result = plan.compute_plan(state("topics: {orders: {retention.ms: 2}}"), stored)
    assert not result.changed


def test_prune_empties_unlisted_entities_of_the_files_types_only():
    stored = [
        Stored(ORDERS, {"retention.ms": "2"}, 0),
        Stored(OLD, {"retention.ms": "5"}, 4),
        Stored(Entity.of(TOPIC, "bare"), {}, 2),
        Stored(ALICE, {"producer_byte_rate": "10"}, 1),
    ]
    result = plan.compute_plan(state("topics: {orders: {retention.ms: 2}}"), stored, prune=True)
    assert kinds(result) == {"topics/old": [("delete", "retention.ms")]}
    (pruned,) = result.entities
    assert pruned.pruned and pruned.target == {} and pruned.version == 4
    # every entity of the pruned types was looked at; users were not (the file has no users section)
    assert set(result.seen) == {ORDERS, OLD, Entity.of(TOPIC, "bare")}


def test_prune_with_an_empty_section_empties_the_whole_type():
    stored = [Stored(OLD, {"retention.ms": "5"}, 0), Stored(ALICE, {"producer_byte_rate": "10"}, 0)]
    result = plan.compute_plan(state("users: {}"), stored, prune=True)
    assert kinds(result) == {"users/User%3Aalice": [("delete", "producer_byte_rate")]}


def test_entities_are_ordered_like_export():
    stored = [Stored(Entity.of(EntityType.BROKERS, "2"), {"log.retention.ms": "1"}, 0)]
    text = "brokers: {'10': {log.retention.ms: 5}, <default>: {log.retention.ms: 5}}\ntopics: {b: {retention.ms: 1}, a: {retention.ms: 1}}"
    result = plan.compute_plan(state(text), stored, prune=True)
    assert [e.entity.path for e in result.entities] == [
        "topics/a",
        "topics/b",
        "brokers/<default>",
        "brokers/2",
        "brokers/10",
    ]


def test_json_document_masks_sensitive_values():
    credential = secrets.scram_credential("SCRAM-SHA-256", "old-password", 4096)
    stored = [Stored(ALICE, {"SCRAM-SHA-256": credential}, 2)]
    result = plan.compute_plan(
        state("users: {User:alice: {SCRAM-SHA-256: password=new-password, producer_byte_rate: 5}}"), stored
    )
    document = result.to_json()
    assert document["changes"] == 2 and document["add"] == 1 and document["change"] == 1
    (entity,) = document["entities"]
    assert entity == {
        "entity_path": "users/User%3Aalice",
        "entity_type": "users",
        "entity_name": "User:alice",
        "version": 2,
        "pruned": False,
        "keys": [
            {"name": "SCRAM-SHA-256", "kind": "change", "old": "******", "new": "******"},
            {"name": "producer_byte_rate", "kind": "add", "old": None, "new": "5"},
        ],
    }
    assert "new-password" not in repr(document) and credential not in repr(document)


def test_user_client_entities_carry_the_client_id():
    result = plan.compute_plan(state("users: {<default>: {clients: {app1: {consumer_byte_rate: 1}}}}"), [])
    (entity,) = result.to_json()["entities"]
    assert entity["entity_path"] == "users/<default>/clients/app1"
    assert entity["entity_name"] == DEFAULT and entity["client_id"] == "app1"


# -- secrets: no spurious diffs -------------------------------------------------------------------


def test_scram_password_spec_matching_the_stored_credential_is_no_change():
    credential = secrets.scram_credential("SCRAM-SHA-512", "s3cret", 8192)
    stored = [Stored(ALICE, {"SCRAM-SHA-512": credential}, 0)]
    same = "users: {User:alice: {SCRAM-SHA-512: [iterations=8192, password=s3cret]}}"
    assert not plan.compute_plan(state(same), stored).changed


@pytest.mark.parametrize(
    "spec", ["[iterations=8192, password=other]", "[iterations=4096, password=s3cret]", "password=s3cret"]
)
def test_scram_with_another_password_or_iterations_gets_a_new_credential(spec):
    credential = secrets.scram_credential("SCRAM-SHA-512", "s3cret", 8192)
    stored = [Stored(ALICE, {"SCRAM-SHA-512": credential}, 0)]
    result = plan.compute_plan(state(f"users: {{User:alice: {{SCRAM-SHA-512: {spec}}}}}"), stored)
    (entity,) = result.entities
    new = entity.target["SCRAM-SHA-512"]
    assert new != credential and new.startswith("salt=")
    password, iterations = secrets.parse_scram_spec("SCRAM-SHA-512", ",".join(spec.strip("[]").split(", ")))
    assert secrets.verify_scram_password("SCRAM-SHA-512", new, password)
    assert secrets.parse_scram_credential(new).iterations == iterations


def test_stored_form_of_scram_is_compared_as_is():
    credential = secrets.scram_credential("SCRAM-SHA-256", "s3cret", 4096)
    stored = [Stored(ALICE, {"SCRAM-SHA-256": credential}, 0)]
    assert not plan.compute_plan(
        state(f"users: {{User:alice: {{SCRAM-SHA-256: '{credential}'}}}}"), stored
    ).changed


def test_plain_broker_password_is_compared_by_decrypting():
    encoder = secrets.PasswordEncoder("encoder-secret")
    broker = Entity.of(EntityType.BROKERS, "1")
    key = "listener.name.internal.ssl.key.password"
    stored = [Stored(broker, {key: encoder.encode("pw1")}, 0)]
    same = state(f"brokers: {{'1': {{{key}: pw1}}}}")
    assert not plan.compute_plan(same, stored, encoder=encoder).changed
    changed = plan.compute_plan(state(f"brokers: {{'1': {{{key}: pw2}}}}"), stored, encoder=encoder)
    (entity,) = changed.entities
    assert encoder.decode(entity.target[key]) == "pw2"
    with pytest.raises(InvalidInput, match=r"f.yaml: brokers/1: .* is given in plain text"):
        plan.compute_plan(same, stored)
    with pytest.raises(InvalidInput, match="cannot decrypt"):
        plan.compute_plan(same, stored, encoder=secrets.PasswordEncoder("wrong-secret"))


def test_encrypted_broker_password_needs_no_secret():
    encoder = secrets.PasswordEncoder("encoder-secret")
    broker = Entity.of(EntityType.BROKERS, "1")
    key = "listener.name.internal.ssl.key.password"
    value = encoder.encode("pw1")
    stored = [Stored(broker, {key: value}, 0)]
    assert not plan.compute_plan(state(f"brokers: {{'1': {{{key}: '{value}'}}}}"), stored).changed


# -- saved plans and apply order ----------------------------------------------------------------


def test_saved_plan_is_refused_when_the_file_or_the_state_moved():
    stored = [Stored(ORDERS, {"retention.ms": "1"}, 3)]
    wanted = state("topics: {orders: {retention.ms: 2}}")
    saved = plan.compute_plan(wanted, stored).saved("abc")
    assert saved["format"] == plan.PLAN_FORMAT and saved["seen"] == {"topics/orders": 3}
    plan.check_saved_plan(plan.compute_plan(wanted, stored), saved, file_digest="abc", source="p.json")
    with pytest.raises(InvalidInput, match="file changed since the plan"):
        plan.check_saved_plan(plan.compute_plan(wanted, stored), saved, file_digest="xyz", source="p.json")
    moved = [Stored(ORDERS, {"retention.ms": "1"}, 4)]
    with pytest.raises(Conflict, match=r"state moved since the plan in p.json was made: topics/orders"):
        plan.check_saved_plan(plan.compute_plan(wanted, moved), saved, file_digest="abc", source="p.json")
    with pytest.raises(InvalidInput, match="made without --prune"):
        plan.check_saved_plan(
            plan.compute_plan(wanted, stored, prune=True), saved, file_digest="abc", source="p"
        )
    with pytest.raises(InvalidInput, match="not a plan saved"):
        plan.check_saved_plan(plan.compute_plan(wanted, stored), {"x": 1}, file_digest="abc", source="p")


def test_saved_plan_notices_a_new_entity_under_prune():
    wanted = state("topics: {orders: {retention.ms: 2}}")
    saved = plan.compute_plan(wanted, [], prune=True).saved("d")
    later = plan.compute_plan(wanted, [Stored(OLD, {"retention.ms": "1"}, 0)], prune=True)
    with pytest.raises(Conflict, match="topics/old"):
        plan.check_saved_plan(later, saved, file_digest="d", source="p")


def test_new_users_are_written_before_their_clients():
    result = plan.compute_plan(
        state(
            "users: {User:a: {producer_byte_rate: 1, clients: {c: {producer_byte_rate: 2}}}, User:b: {producer_byte_rate: 4, clients: {c: {producer_byte_rate: 3}}}}"
        ),
        [Stored(Entity.of(EntityType.USERS, "User:b"), {}, 0)],
    )
    phases = applying._phases(result.changes())
    assert [[c.entity.path for c in phase] for phase in phases] == [
        ["users/User%3Aa", "users/User%3Ab", "users/User%3Ab/clients/c"],
        ["users/User%3Aa/clients/c"],
    ]
    assert applying._phases([]) == [[]]


def test_looks_encrypted():
    assert plan.looks_encrypted(secrets.PasswordEncoder("s").encode("x"))
    assert not plan.looks_encrypted("plain-password")


# -- rendering: names are data, never markup ------------------------------------------------------

ODD_NAMES = ["[/]", "[bold]x", "a\\", "[red]", "[/bold] y [link=x]"]


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "piped"])
def test_odd_names_render_as_written(terminal):
    text = "users:\n" + "".join(
        f"  {json.dumps(name)}: {{producer_byte_rate: 1, clients: {{{json.dumps(name)}: {{consumer_byte_rate: 2}}}}}}\n"
        for name in ODD_NAMES
    )
    result = plan.compute_plan(state(text), [])
    buffer = io.StringIO()
    render_plan(Console(file=buffer, force_terminal=terminal, color_system=None, width=200), result)
    shown = buffer.getvalue()
    for name in ODD_NAMES:
        assert f"+ users/{name} (new config node)" in shown
        assert f"+ users/{name}/clients/{name} (new config node)" in shown


# -- summaries: a plan for thousands of entities is read by its shape -----------------------------


def test_summary_counts_entity_actions_and_key_changes_per_type():
    stored = [
        Stored(ORDERS, {"retention.ms": "1", "segment.ms": "5"}, 3),
        Stored(OLD, {"retention.ms": "5"}, 4),
        Stored(Entity.of(TOPIC, "emptied"), {"retention.ms": "1"}, 0),
        Stored(ALICE, {"producer_byte_rate": "1"}, 1),
    ]
    text = (
        "topics: {orders: {retention.ms: 2}, new: {retention.ms: 1, cleanup.policy: [delete]}, emptied: {}}\n"
        "users: {User:alice: {producer_byte_rate: 5}}\n"
    )
    result = plan.compute_plan(state(text), stored, prune=True)
    assert result.summary() == {
        "topics": {
            "entities": {"create": 1, "update": 1, "clear": 1, "prune": 1, "replace": 0},
            "keys": {"add": 2, "change": 1, "delete": 3},
        },
        "users": {
            "entities": {"create": 0, "update": 1, "clear": 0, "prune": 0, "replace": 0},
            "keys": {"add": 0, "change": 1, "delete": 0},
        },
    }
    assert result.to_json()["summary"] == result.summary()
    assert result.lines == 5 + 7 + 1


def rendered(result: plan.Plan, detail: str | None = None) -> list[str]:
    buffer = io.StringIO()
    render_plan(Console(file=buffer, force_terminal=False, width=200), result, detail)
    return buffer.getvalue().splitlines()


def test_a_long_plan_is_summarized_unless_full_is_asked_for():
    text = "topics:\n" + "".join(f"  t{i:03d}: {{retention.ms: {i}}}\n" for i in range(600))
    result = plan.compute_plan(state(text), [Stored(ORDERS, {"retention.ms": "1"}, 0)], prune=True)
    assert result.lines == 1203 > SUMMARY_AFTER_LINES
    assert rendered(result) == [
        "Plan summary (--full shows every key; the full plan has 1,203 lines):",
        "  topics  600 created, 1 pruned; keys: 600 to add, 0 to change, 1 to delete",
        "Plan: 600 to add, 0 to change, 1 to delete, on 601 of 601 entities examined.",
    ]
    full = rendered(result, "full")
    assert len(full) == 1203 and full[2] == "+ topics/t000 (new config node)"
    assert full[-1] == rendered(result)[-1]


def test_a_short_plan_is_shown_in_full_unless_summary_is_asked_for():
    result = plan.compute_plan(state("topics: {orders: {retention.ms: 2}}\nusers: {User:alice: {}}"), [])
    assert rendered(result) == [
        "+ topics/orders (new config node)",
        '    + retention.ms = "2"',
        "Plan: 1 to add, 0 to change, 0 to delete, on 1 of 2 entities examined.",
    ]
    assert rendered(result, "summary") == [
        "Plan summary (--full shows every key):",
        "  topics  1 created; keys: 1 to add, 0 to change, 0 to delete",
        "Plan: 1 to add, 0 to change, 0 to delete, on 1 of 2 entities examined.",
    ]
    nothing = plan.compute_plan(state("topics: {orders: {}}"), [])
    assert (
        rendered(nothing, "summary")
        == rendered(nothing)
        == ["No changes: the cluster matches f.yaml (1 entities examined)."]
    )


# -- files exported with --no-secrets: secrets are kept, never deleted ---------------------------


def test_a_file_without_its_secrets_keeps_the_stored_ones():
    credential = secrets.scram_credential("SCRAM-SHA-256", "pw", 4096)
    bob = Entity.of(EntityType.USERS, "bob")
    stored = [
        Stored(ALICE, {"SCRAM-SHA-256": credential, "producer_byte_rate": "1"}, 2),
        Stored(bob, {"SCRAM-SHA-512": credential.replace("4096", "8192")}, 0),
        Stored(
            Entity.of(EntityType.USERS, "carol"), {"SCRAM-SHA-256": credential, "producer_byte_rate": "9"}, 5
        ),
    ]
    text = "x-configctl-secrets: omitted\nusers: {User:alice: {producer_byte_rate: 2}}\n"
    result = plan.compute_plan(state(text), stored, prune=True)
    # alice: the quota changes, her credential stays; bob (secrets only) is untouched; carol loses the quota
    assert kinds(result) == {
        "users/User%3Aalice": [("change", "producer_byte_rate")],
        "users/carol": [("delete", "producer_byte_rate")],
    }
    alice, carol = result.entities
    assert alice.target == {"producer_byte_rate": "2", "SCRAM-SHA-256": credential}
    assert carol.target == {"SCRAM-SHA-256": credential} and carol.pruned
    # a secret the file does name is managed as usual
    named = plan.compute_plan(
        state("x-configctl-secrets: omitted\nusers: {User:alice: {SCRAM-SHA-256: password=new}}"), stored
    )
    (changed,) = named.entities
    assert [(d.kind, d.name) for d in changed.diff] == [
        ("change", "SCRAM-SHA-256"),
        ("delete", "producer_byte_rate"),
    ]
    # without the marker the same file deletes the credential, as the file says
    assert ("delete", "SCRAM-SHA-256") in kinds(plan.compute_plan(state(text.split("\n", 1)[1]), stored))[
        "users/User%3Aalice"
    ]


def test_a_quota_kafka_already_holds_as_that_number_is_no_change():
    """ZooKeeper keeps a quota as written (kafka-configs.sh writes ``50.0``), a KRaft cluster
    reports the number (``50``): a file exported from one plans no change on the other."""
    from configctl.desired.document import DesiredState
    from configctl.desired.plan import compute_plan
    from configctl.entities import Entity, EntityType
    from configctl.store import Stored

    clients = Entity.named(EntityType.CLIENTS, "<default>")
    desired = DesiredState(
        "f.yaml", {clients: {"request_percentage": "50.0"}}, frozenset({EntityType.CLIENTS})
    )
    assert not compute_plan(desired, [Stored(clients, {"request_percentage": "50"}, 0)]).changed
    moved = compute_plan(desired, [Stored(clients, {"request_percentage": "51"}, 0)])
    assert [d.name for e in moved.entities for d in e.diff] == ["request_percentage"]
