"""The metrics (docs/reference/metrics.md) against a real ZooKeeper: /metrics scraped over HTTP while changes flow, /healthz
following the connection (ZooKeeper stopped and restarted) and a stalled worker."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from helpers import set_config, wait_for
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl
from prometheus_client.parser import text_string_to_metric_families

from configctl.listener import ConfigListener
from configctl.listener.metrics import CONNECTION_DEADLINE_S, MAX_CONNECTIONS
from configctl.zk.configstore import ZooKeeperStore as ConfigStore
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


# -- issue 23: the metrics server stays bounded and its log stays one JSON object a line -----------


def _listener_process(
    zk_connect: str, tmp_path, port: int, *extra: str
) -> tuple[subprocess.Popen, list[str]]:
    """``configctl listener run`` with metrics on ``port``, debug JSON logs collected in a list."""
    props = tmp_path / "server.properties"
    props.write_text("broker.id=4\n")
    from helpers import REPO_ROOT

    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        [
            sys.executable, "-m", "configctl", "--zookeeper", zk_connect, "listener", "run",
            "--broker-id", "4", "--server-properties", str(props), "--metrics-port", str(port),
            "--log-format", "json", "--log-level", "debug", *extra,
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()
    return process, lines


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


def _listening_addresses(port: int) -> set[str]:
    """The local addresses a TCP socket LISTENs on at ``port`` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as rows:
            for row in list(rows)[1:]:
                local, state = row.split()[1], row.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:
                    found.add(address)
    return found


def _reset(port: int, partial: bytes) -> None:
    """Connect, send ``partial``, and close with a TCP reset (SO_LINGER 0), as a crashed client does."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(partial)
    time.sleep(0.05)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_metrics_server_listens_on_loopback_by_default(zk_connect, tmp_path, free_port):
    process, lines = _listener_process(zk_connect, tmp_path, free_port)
    try:
        wait_for(lambda: get(free_port, "/healthz")[0] == 200, timeout=60, message="the listener's health")
        assert _listening_addresses(free_port) == {"0100007F"}, "127.0.0.1 only"
    finally:
        _stop(process)
    assert process.returncode == 0, lines


def test_idle_and_half_open_connections_are_bounded_in_number_and_time(zk_connect, tmp_path, free_port):
    process, lines = _listener_process(zk_connect, tmp_path, free_port, "--metrics-address", "127.0.0.1")
    idle: list[socket.socket] = []
    try:
        wait_for(lambda: get(free_port, "/healthz")[0] == 200, timeout=60, message="the listener's health")
        before = _threads(process.pid)
        for _ in range(MAX_CONNECTIONS + 24):  # silent clients, half-sent requests: one thread each before
            sock = socket.create_connection(("127.0.0.1", free_port), timeout=5)
            sock.sendall(b"GET /metr")
            idle.append(sock)
        time.sleep(1.0)
        assert _threads(process.pid) <= before + MAX_CONNECTIONS
        # the server closes the idle ones after the idle timeout: a scrape gets through again
        started = time.monotonic()
        wait_for(lambda: get(free_port, "/healthz")[0] == 200, timeout=30, message="a scrape after idlers")
        assert time.monotonic() - started <= CONNECTION_DEADLINE_S + 5
        assert all(s.recv(1) == b"" for s in idle), "every idle connection closed by the server"
        wait_for(lambda: _threads(process.pid) <= before + 1, timeout=10, message="the threads gone")
    finally:
        for sock in idle:
            sock.close()
        _stop(process)
    assert process.returncode == 0, lines[-5:]


def test_a_trickling_client_is_cut_off_at_the_connection_deadline(zk_connect, tmp_path, free_port):
    process, lines = _listener_process(zk_connect, tmp_path, free_port, "--metrics-address", "127.0.0.1")
    try:
        wait_for(lambda: get(free_port, "/healthz")[0] == 200, timeout=60, message="the listener's health")
        sock = socket.create_connection(("127.0.0.1", free_port), timeout=5)
        started = time.monotonic()
        with contextlib.suppress(OSError):
            for _ in range(int(CONNECTION_DEADLINE_S * 3)):  # one byte a second: never idle for long
                sock.sendall(b"X-Slow: 1\r\n" if time.monotonic() - started > 1 else b"GET / HTTP/1.1\r\n")
                sock.settimeout(1.0)
                with contextlib.suppress(TimeoutError):
                    if sock.recv(1) == b"":
                        break
        assert time.monotonic() - started <= CONNECTION_DEADLINE_S + 3
        sock.close()
    finally:
        _stop(process)
    assert process.returncode == 0, lines[-5:]


def test_a_connection_reset_by_the_client_is_one_debug_json_line(zk_connect, tmp_path, free_port):
    process, lines = _listener_process(zk_connect, tmp_path, free_port, "--metrics-address", "127.0.0.1")
    try:
        wait_for(lambda: get(free_port, "/healthz")[0] == 200, timeout=60, message="the listener's health")
        for _ in range(5):
            _reset(free_port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # reset mid-request
        wait_for(
            lambda: any("metrics endpoint" in x and "reset" in x for x in lines), timeout=10, message="a line"
        )
        assert get(free_port, "/metrics")[0] == 200
    finally:
        _stop(process)
    assert process.returncode == 0, lines[-5:]
    assert not any("Traceback" in line for line in lines), [x for x in lines if "Traceback" in x][:1]
    records = [json.loads(line) for line in lines]  # every line one JSON object: no raw traceback lines
    endpoint = [r for r in records if "metrics endpoint" in r["message"]]
    assert endpoint and all(r["level"].lower() == "debug" and "\n" not in r["message"] for r in endpoint)


class _Quiet:
    """A listener with nothing to report: enough for the server's own behaviour."""

    def metrics_snapshot(self) -> dict:
        zero = ("changes_applied", "notifications_processed", "notifications_pending", "errors", "full_loads")
        return {
            **dict.fromkeys(zero, 0),
            "last_applied_change": -1,
            "problems": {},
            "problems_reported": {},
            "connected": True,
            "healthy": True,
            "plugin_errors": 0,
            "applied_at_ms": None,
        }


@pytest.mark.parametrize(("address", "host"), [("", "127.0.0.1"), ("::", "[::1]"), ("::1", "[::1]")])
def test_metrics_address_defaults_to_loopback_and_takes_ipv6(address, host):
    from configctl.listener.metrics import ListenerMetrics, MetricsServer

    server = MetricsServer(ListenerMetrics(_Quiet()), lambda: (True, {"status": "ok"}), address=address)
    try:
        assert server.address == (address or "127.0.0.1")
        with urllib.request.urlopen(f"http://{host}:{server.port}/healthz", timeout=5) as answer:
            assert answer.status == 200
    finally:
        server.close()


def test_an_address_the_host_does_not_have_is_one_line_exit_7():
    from configctl.errors import EnvironmentProblem
    from configctl.listener.metrics import ListenerMetrics, MetricsServer

    with pytest.raises(EnvironmentProblem, match=r"^cannot serve metrics on 192\.0\.2\.1:0: .+$"):
        MetricsServer(ListenerMetrics(_Quiet()), lambda: (True, {}), address="192.0.2.1")
