"""The listener's operations surface without a server: log formats, metric names, the examples."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from configctl.listener import ConfigListener
from configctl.listener.logformat import EscapingFormatter, JsonFormatter

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("configctl.listener", logging.WARNING, __file__, 1, message, args, None)


def test_text_lines_escape_every_control_character_of_the_message():
    line = EscapingFormatter().format(record("applied %s", "x\n2001-01-01 INFO forged\x1b[31m\x07"))
    assert "\n" not in line and "\x1b" not in line and "\x07" not in line
    assert line.endswith("WARNING applied x\\n2001-01-01 INFO forged\\e[31m\\x07")


def test_json_lines_are_one_object_each_with_the_fields():
    line = JsonFormatter({"broker_id": 3}).format(record("applied %s", "a\nb\x1b\u2028"))
    assert "\n" not in line and "\x1b" not in line and "\u2028" not in line
    document = json.loads(line)
    assert document["message"] == "applied a\nb\x1b\u2028"
    assert document["broker_id"] == 3 and document["level"] == "WARNING"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", document["time"])
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        failed = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    assert "ValueError: boom" in json.loads(JsonFormatter().format(failed))["exception"]


def test_two_listeners_in_one_process_have_their_own_metrics():
    first = ConfigListener("127.0.0.1:1", 1, {})
    second = ConfigListener("127.0.0.1:1", 2, {})
    first.metrics.observe([0])  # a notification created at the epoch: a long latency
    counts = []
    for listener in (first, second):
        families = {f.name: f for f in text_string_to_metric_families(listener.metrics_text())}
        (count,) = [
            s.value
            for s in families["configctl_listener_apply_latency_seconds"].samples
            if s.name.endswith("_count")
        ]
        counts.append(count)
        kinds = {s.labels["kind"] for s in families["configctl_listener_problems"].samples}
        assert kinds == {"poison", "rejected", "ignored", "unreadable", "mismatch", "unreachable"}
        assert families["configctl_listener_last_applied_change"].samples[0].value == -1
    assert counts == [1, 0]
    assert first.health() == (False, first.health()[1]) and first.health()[1]["status"] == "stopped"


def test_the_alert_rules_name_only_metrics_the_listener_exports():
    rules = yaml.safe_load((EXAMPLES / "prometheus" / "configctl-listener-alerts.yml").read_text())
    (group,) = rules["groups"]
    alerts = {rule["alert"]: rule for rule in group["rules"]}
    assert {"ConfigctlListenerBehind", "ConfigctlListenerProblems", "ConfigctlListenerDisconnected"} <= set(
        alerts
    )
    exported = {
        sample.name
        for family in text_string_to_metric_families(ConfigListener("127.0.0.1:1", 1, {}).metrics_text())
        for sample in family.samples
    }
    for rule in alerts.values():
        assert {"expr", "labels", "annotations"} <= rule.keys()
        for name in re.findall(r"configctl_listener_[a-z_]+", rule["expr"]):
            assert name in exported, (rule["alert"], name)


def test_the_systemd_unit_is_valid_and_hardened(tmp_path):
    text = (EXAMPLES / "systemd" / "configctl-listener@.service").read_text()
    for needle in (
        "EnvironmentFile=/etc/configctl/listener-%i.env",
        "--broker-id %i",
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "--log-format json",
    ):
        assert needle in text
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    instance = tmp_path / "configctl-listener@7.service"
    instance.write_text(text)
    checked = subprocess.run(
        ["systemd-analyze", "verify", str(instance)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr


def test_a_batch_of_lines_is_flushed_once_and_a_lone_line_at_once():
    import io

    from configctl.listener.logformat import MORE_FOLLOW, BatchFlushingHandler
    from configctl.listener.manager import _log_applied

    class Counting(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            self.flushes += 1
            super().flush()

    stream = Counting()
    handler = BatchFlushingHandler(stream)
    handler.setFormatter(EscapingFormatter("%(message)s"))
    log = logging.getLogger("configctl.listener")
    log.addHandler(handler)
    level = log.level
    log.setLevel(logging.INFO)
    try:
        from configctl.listener.records import AppliedChange

        _log_applied([AppliedChange(n, f"topics/t{n}", ()) for n in range(5)])
        assert stream.getvalue().count("\n") == 5 and stream.flushes == 1
        log.warning("alone", extra={MORE_FOLLOW: True})  # a warning never waits
        assert stream.flushes == 2
        log.info("alone")
        assert stream.flushes == 3
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
