"""Generate ``configctl/data/kafka-4.4-configs.json``: Kafka 4.4's topic and broker config facts.

A maintainer step, run once per Kafka 4 release; the output is committed and shipped inside the
package (as the ``schemas/`` are), so nothing at run or test time needs a JDK or the jars.

The facts come from Kafka 4.4.0 itself, never from a copy: ``scripts/KafkaConfigFacts.java``
runs against the release's jars (``build/kafka4/libs``, fetched by ``make kafka``) and prints
every topic key (``LogConfig.configKeys()``), every broker key (``AbstractKafkaConfig.CONFIG_DEF``)
with its type, default, importance, validator and, for brokers, the update mode
``DynamicBrokerConfig.dynamicConfigUpdateModes()`` gives (read-only, per-broker, cluster-wide).

What Kafka 4 removed is then derived, not listed by hand: a key of configctl's Kafka 3.9 schemas
(``schemas/topics.json``, ``schemas/brokers.json``, generated from the 3.9 catalogue) that Kafka
4.4 no longer defines. Usage::

    python scripts/generate_kafka4_facts.py build/kafka4/libs configctl/data/kafka-4.4-configs.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "scripts" / "KafkaConfigFacts.java"
FAMILIES = ("topics", "brokers")


def read_jars(libs: Path) -> dict[str, Any]:
    """What the Kafka release in ``libs`` says about its configs (runs the Java program)."""
    done = subprocess.run(
        ["java", "-cp", f"{libs}/*", str(PROGRAM)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"KafkaConfigFacts.java failed:\n{done.stderr}")
    return json.loads(done.stdout)


def kafka39_keys(schemas: Path, family: str) -> set[str]:
    return set(json.loads((schemas / f"{family}.json").read_text(encoding="utf-8"))["properties"])


def build(facts: dict[str, Any], schemas: Path) -> dict[str, Any]:
    version = facts["kafka_version"]
    document: dict[str, Any] = {
        "source": (
            f"Apache Kafka {version}, read from its own jars by scripts/KafkaConfigFacts.java "
            "(LogConfig.configKeys, ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS, "
            "AbstractKafkaConfig.CONFIG_DEF, DynamicBrokerConfig.dynamicConfigUpdateModes); "
            "'removed' are the keys of configctl's Kafka 3.9 schemas (schemas/topics.json, "
            f"schemas/brokers.json) that Kafka {version} does not define. "
            "Regenerate: python scripts/generate_kafka4_facts.py build/kafka4/libs "
            "configctl/data/kafka-4.4-configs.json"
        ),
        "kafka_version": version,
        "release": ".".join(version.split(".")[:2]),
        "removed": {},
    }
    for family in FAMILIES:
        document[family] = dict(sorted(facts[family].items()))
        document["removed"][family] = sorted(kafka39_keys(schemas, family) - set(facts[family]))
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("libs", type=Path, help="the Kafka 4 release's libs/ (build/kafka4/libs)")
    parser.add_argument("out", type=Path, help="the JSON file to write")
    parser.add_argument("--schemas", type=Path, default=ROOT / "schemas", help="configctl's 3.9 schemas")
    args = parser.parse_args()
    document = build(read_jars(args.libs), args.schemas)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    removed = {f: len(document["removed"][f]) for f in FAMILIES}
    print(f"wrote {args.out}: Kafka {document['kafka_version']}, removed since 3.9: {removed}")


if __name__ == "__main__":
    main()
