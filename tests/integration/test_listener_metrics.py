"""Contract 10 against a real ZooKeeper: /metrics scraped over HTTP while changes flow, /healthz
following the connection (ZooKeeper stopped and restarted) and a stalled worker."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest
from helpers import set_config, wait_for
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl
from prometheus_client.parser import text_string_to_metric_families

from configctl.listener import ConfigListener
from configctl.zk.configstore import ConfigStore
from configctl.znodes import CHANGES_PATH, NOTIFICATION_PATH_PREFIX

STATIC = {"log.retention.hours": "72"}


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, text = get(port, "/metrics")
    assert status == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def test_metrics_are_scraped_over_http_while_changes_flow(zk, zk_connect):
    # two listeners in one process: each has its own registry and port
    first = ConfigListener(zk_connect, 1, STATIC, metrics_port=0, metrics_address="127.0.0.1").start(
        timeout=30
    )
    second = ConfigListener(zk_connect, 2, STATIC, metrics_port=0, metrics_address="127.0.0.1").start(
        timeout=30
    )
    try:
        assert first.metrics_port != second.metrics_port
        before = scrape(first.metrics_port)
        assert value(before, "configctl_listener_zookeeper_connected") == 1
        assert value(before, "configctl_listener_apply_latency_seconds_count") == 0
        with ConfigStore.connect(zk_connect) as store:
            last = -1
            for i in range(20):
                last = set_config(store, f"topics/t{i % 4}", **{"retention.ms": str(1000 + i)})
                if i == 10:  # mid-stream scrape
                    middle = scrape(first.metrics_port)
                    assert value(middle, "configctl_listener_last_applied_change") <= last
            zk.create(NOTIFICATION_PATH_PREFIX, b"not json", sequence=True)  # a problem to count
            last = set_config(store, "brokers/1", **{"log.cleaner.threads": "2"})
        assert first.wait_for_change(last, timeout=10) and second.wait_for_change(last, timeout=10)
        samples = scrape(first.metrics_port)
        assert value(samples, "configctl_listener_last_applied_change") == last
        assert (
            value(samples, "configctl_listener_changes_applied_total")
            == first.manager.counters["applied_changes"]
        )
        assert value(samples, "configctl_listener_changes_applied_total") >= 4
        processed = value(samples, "configctl_listener_notifications_processed_total")
        assert processed == 22
        # every notification's latency, from its ctime, is in the histogram
        assert value(samples, "configctl_listener_apply_latency_seconds_count") == processed
        assert 0 <= value(samples, "configctl_listener_apply_latency_seconds_sum") < processed * 10
        assert value(samples, "configctl_listener_apply_latency_seconds_bucket", le="+Inf") == processed
        assert value(samples, "configctl_listener_problems", kind="poison") == 1
        assert value(samples, "configctl_listener_problems", kind="rejected") == 0
        assert value(samples, "configctl_listener_problems_reported_total", kind="poison") == 1
        assert value(samples, "configctl_listener_zookeeper_connected") == 1
        assert value(samples, "configctl_listener_healthy") == 1
        # the other listener's registry is its own
        other = scrape(second.metrics_port)
        assert value(other, "configctl_listener_last_applied_change") == last
        assert value(other, "configctl_listener_apply_latency_seconds_count") == processed
        status, body = get(first.metrics_port, "/healthz")
        assert status == 200 and json.loads(body)["status"] == "ok"
        assert get(first.metrics_port, "/nope")[0] == 404
    finally:
        first.stop()
        second.stop()
    with pytest.raises(OSError):  # the server is closed with the listener
        urllib.request.urlopen(f"http://127.0.0.1:{first.metrics_port or 1}/metrics", timeout=2)


def test_healthz_follows_zookeeper_going_away_and_coming_back(restartable_zk):
    connect = restartable_zk.connect_string
    listener = ConfigListener(connect, 1, STATIC, zk_timeout=10, metrics_port=0, metrics_address="127.0.0.1")
    listener.start(timeout=30)
    port = listener.metrics_port
    try:
        assert get(port, "/healthz")[0] == 200
        restartable_zk.stop()
        _status, body = wait_for(
            lambda: (answer := get(port, "/healthz"))[0] == 503 and answer, timeout=20, message="503"
        )
        assert json.loads(body)["status"] == "disconnected"
        assert value(scrape(port), "configctl_listener_zookeeper_connected") == 0
        restartable_zk.start(timeout=60)
        wait_for(lambda: get(port, "/healthz")[0] == 200, timeout=30, message="200 again")
        with ConfigStore.connect(connect) as store:
            number = set_config(store, "topics/after", **{"retention.ms": "5"})
        assert listener.wait_for_change(number, timeout=10)
        assert value(scrape(port), "configctl_listener_zookeeper_connected") == 1
    finally:
        listener.stop()


def test_healthz_says_stalled_while_the_worker_keeps_failing(zk_connect):
    admin = KazooClient(hosts=zk_connect, timeout=10.0, auth_data=[("digest", "admin:pw")])
    admin.start(timeout=30)
    try:
        admin.ensure_path(CHANGES_PATH)
        listener = ConfigListener(
            zk_connect, 1, STATIC, metrics_port=0, metrics_address="127.0.0.1", stall_after_s=0.5
        )
        listener.start(timeout=30)
        port = listener.metrics_port
        try:
            assert get(port, "/healthz")[0] == 200
            owner = make_digest_acl("admin", "pw", all=True)
            admin.set_acls(CHANGES_PATH, [owner])  # the listener may no longer list notifications
            # ZooKeeper does not deliver watches on nodes a session may not read: expire its session
            # instead, so the new session's reload has to list them, and fails until the ACL is fixed.
            session_id, password = listener.session.client.client_id
            intruder = KazooClient(hosts=zk_connect, client_id=(session_id, password), timeout=10.0)
            intruder.start(timeout=30)
            intruder.stop()
            intruder.close()
            health = wait_for(
                lambda: (
                    (answer := get(port, "/healthz"))[0] == 503
                    and (doc := json.loads(answer[1]))["status"] == "stalled"
                    and doc
                ),
                timeout=20,
                message="stalled",
            )
            assert health["status"] == "stalled" and health["connected"] is True
            assert "no permission" in health["last_error"]
            assert value(scrape(port), "configctl_listener_errors_total") >= 1
            admin.set_acls(CHANGES_PATH, OPEN_ACL_UNSAFE)
            wait_for(lambda: get(port, "/healthz")[0] == 200, timeout=20, message="healthy again")
        finally:
            listener.stop()
    finally:
        admin.stop()
        admin.close()


def test_listener_run_serves_metrics(zk_connect, tmp_path, free_port):
    props = tmp_path / "server.properties"
    props.write_text("broker.id=3\n")
    from helpers import REPO_ROOT

    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        [
            sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "listener", "run",
            "--broker-id", "3", "--server-properties", str(props),
            "--metrics-port", str(free_port), "--metrics-address", "127.0.0.1", "--log-format", "json",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    reader.start()
    try:
        wait_for(lambda: get(free_port, "/healthz")[0] == 200, timeout=60, message="the listener's health")
        assert value(scrape(free_port), "configctl_listener_last_applied_change") == -1
        wait_for(lambda: any("listening as broker 3" in line for line in lines), message="the start line")
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        reader.join(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, lines
    messages = [json.loads(line)["message"] for line in lines]
    assert any(f"metrics on port {free_port}" in m for m in messages), messages
