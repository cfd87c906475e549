"""Generate ``schemas/*.json`` from the Kafka 3.9 config catalogue.

A maintainer step, run once per Kafka release (``make schemas``); the output is committed
and owned by the project, so nothing at run or test time reads the catalogue.

Values in ZooKeeper are strings. configctl coerces each one to the JSON type its Kafka type
implies (``long`` -> integer, ``list`` -> array, ...) before validating, so the schemas say
what Kafka's ``ConfigDef`` validators say, in plain JSON Schema: ranges are
``minimum``/``maximum``, enums are ``enum``, lists are arrays of allowed items. Facts that
JSON Schema has no word for (defaults, update modes, synonyms, sensitivity) ride along as
``x-`` annotations, which validators ignore and :mod:`configctl.catalogue` reads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

INT_RANGES = {
    "short": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
CLASS_NAME_PATTERN = r"^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*$"
SCRAM_PATTERN = (
    r"^salt=[A-Za-z0-9+/]+={0,2},stored_key=[A-Za-z0-9+/]+={0,2},"
    r"server_key=[A-Za-z0-9+/]+={0,2},iterations=[0-9]+$"
)
THROTTLED_REPLICA_ITEM = r"^([0-9]+:[0-9]+|\*)$"

# Where a real Kafka 3.9 broker (tests/kafka, DescribeConfigs) says otherwise than the catalogue,
# the broker wins; each correction names what the broker reported.
CORRECTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "brokers": {
        # Kafka 3.9 needs Java 11+, whose TLS has 1.3: SslConfigs then defaults to it.
        "ssl.protocol": {"default": "TLSv1.3"},
        "ssl.enabled.protocols": {"default": "TLSv1.2,TLSv1.3"},
        # New in 3.9 (KAFKA-16823), missing from the catalogue: read-only, false.
        "alter.config.policy.kraft.compatibility.enable": {
            "type": "boolean",
            "default": "false",
            "importance": "low",
            "update_mode": "read-only",
        },
    },
}

TITLES = {
    "topics": "Dynamic config of a topic: /config/topics/<topic>",
    "brokers": "Dynamic config of a broker: /config/brokers/<broker-id> and /config/brokers/<default>",
    "users": "Quotas and SCRAM credentials of a user: /config/users/<user>[/clients/<client-id>]",
    "clients": "Quotas of a client id: /config/clients/<client-id>",
    "ips": "Connection-rate quota of an IP address: /config/ips/<ip>",
}


def value_schema(name: str, fact: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema for one key's coerced value."""
    kafka_type = fact["type"]
    schema: dict[str, Any]
    if kafka_type in INT_RANGES:
        low, high = INT_RANGES[kafka_type]
        schema = {"type": "integer", "minimum": low, "maximum": high}
        if fact.get("min") is not None:
            schema["minimum"] = max(low, int(fact["min"]))
        if fact.get("max") is not None:
            schema["maximum"] = min(high, int(fact["max"]))
    elif kafka_type == "double":
        schema = {"type": "number"}
        if fact.get("min") is not None:
            schema["minimum"] = fact["min"]
        if fact.get("max") is not None:
            schema["maximum"] = fact["max"]
    elif kafka_type == "boolean":
        schema = {"type": "boolean"}
    elif kafka_type == "list":
        items: dict[str, Any] = {"type": "string"}
        if fact.get("enum"):
            items["enum"] = list(fact["enum"])
        if name.endswith("replication.throttled.replicas"):
            items["pattern"] = THROTTLED_REPLICA_ITEM
        schema = {"type": "array", "items": items}
        if fact.get("valid_values") == "non-empty list":
            schema["minItems"] = 1
    elif kafka_type == "class":
        schema = {"type": "string", "pattern": CLASS_NAME_PATTERN}
    elif kafka_type == "scram_credential":
        schema = {"type": "string", "pattern": SCRAM_PATTERN}
    else:  # string, password
        schema = {"type": "string"}
        if fact.get("enum"):
            schema["enum"] = list(fact["enum"])
        if fact.get("valid_values") == "non-empty string":
            schema["minLength"] = 1
    if fact.get("also_allowed"):
        schema = {"anyOf": [schema, {"enum": list(fact["also_allowed"])}]}
    return schema


def key_schema(
    entity_type: str, name: str, fact: dict[str, Any], password_suffixes: list[str]
) -> dict[str, Any]:
    schema = value_schema(name, fact)
    described = f"{fact['type']}; default {fact.get('default')!r}"
    if fact.get("valid_values"):
        described += f"; valid values {fact['valid_values']}"
    if fact.get("update_mode"):
        described += f"; update mode {fact['update_mode']}"
    schema["description"] = described
    schema["x-kafka-type"] = fact["type"]
    schema["x-default"] = fact.get("default")
    schema["x-importance"] = fact.get("importance")
    sensitive = fact["type"] in ("password", "scram_credential") or (
        entity_type == "brokers" and any(name.endswith(s) for s in password_suffixes)
    )
    schema["x-sensitive"] = sensitive
    if entity_type == "brokers":
        schema["x-update-mode"] = fact["update_mode"]
        schema["x-synonyms"] = fact.get("synonyms") or []
        schema["x-dynamic-only"] = bool(fact.get("dynamic_only"))
    if entity_type == "topics":
        chain = fact.get("broker_synonym_chain") or []
        schema["x-broker-synonyms"] = [[entry["name"], entry["conversion"]] for entry in chain]
    if fact.get("allowed_at"):
        schema["x-allowed-at"] = "users/<user>"
        schema["x-min-iterations"] = fact.get("min_iterations")
        schema["x-max-iterations"] = fact.get("max_iterations")
        schema["x-hash-algorithm"] = fact.get("hash_algorithm")
    return schema


def entity_schema(entity_type: str, catalogue: dict[str, Any]) -> dict[str, Any]:
    password_suffixes = list(catalogue["password_configs"])
    facts = catalogue[entity_type]
    properties = {
        name: key_schema(entity_type, name, facts[name], password_suffixes) for name in sorted(facts)
    }
    custom_allowed = bool(catalogue["custom_config_names_allowed"][entity_type])
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://configctl.dev/schemas/{entity_type}.json",
        "title": TITLES[entity_type],
        "description": "Generated by scripts/generate_schemas.py from Apache Kafka 3.9 config facts; "
        "values are validated after coercion from their stored string form.",
        "type": "object",
        "properties": properties,
        "additionalProperties": custom_allowed,
        "x-custom-keys-allowed": custom_allowed,
    }
    if entity_type == "brokers":
        rules = catalogue["broker_dynamic_rules"]
        schema["x-password-config-suffixes"] = password_suffixes
        schema["x-listener-mechanism-configs"] = rules["listener_mechanism_configs"]
        schema["x-listener-prefixed-cluster-wide"] = rules["listener_prefixed_cluster_wide"]
        schema["x-listener-prefix-required"] = rules["listener_prefix_required"]
        schema["x-non-reconfigurable-log-configs"] = rules["non_reconfigurable_log_configs"]
        schema["x-password-encoding"] = catalogue["password_encoding"]
    if entity_type == "topics":
        schema["x-cross-field-rules"] = catalogue["topic_cross_field_rules"]
    if entity_type in ("users", "clients"):
        schema["x-quota-precedence"] = catalogue["quota_precedence"]
    return schema


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalogue", type=Path)
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args()
    catalogue = json.loads(args.catalogue.read_text(encoding="utf-8"))
    for entity_type, corrections in CORRECTIONS.items():
        for name, fact in corrections.items():
            catalogue[entity_type][name] = {**catalogue[entity_type].get(name, {}), **fact}
    args.outdir.mkdir(parents=True, exist_ok=True)
    for entity_type in ("topics", "brokers", "users", "clients", "ips"):
        target = args.outdir / f"{entity_type}.json"
        target.write_text(
            json.dumps(entity_schema(entity_type, catalogue), indent=2) + "\n", encoding="utf-8"
        )
        print(f"wrote {target} ({len(catalogue[entity_type])} keys)")


if __name__ == "__main__":
    main()
