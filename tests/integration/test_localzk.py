"""The embedded real ZooKeeper: ``configctl zk start|status|stop`` and :class:`LocalZooKeeper`."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from helpers import free_port_block, run_cli, wait_for, zookeeper_pids
from kazoo.client import KazooClient

from configctl.errors import EnvironmentProblem
from configctl.localzk import STATE_FILE, LocalZooKeeper

pytestmark = pytest.mark.zk


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data dir for a server started through the CLI; whatever runs there is stopped afterwards."""
    directory = tmp_path / "zk"
    try:
        yield directory
    finally:
        LocalZooKeeper(directory).stop()


def _client(connect: str, timeout: float = 10.0) -> KazooClient:
    client = KazooClient(hosts=connect, timeout=timeout)
    client.start(timeout=30)
    return client


def _one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_cli_start_status_stop(data_dir: Path, free_port: int) -> None:
    code, out, err = run_cli("zk", "start", "--port", str(free_port), "--data-dir", str(data_dir))
    assert code == 0, err
    assert f"127.0.0.1:{free_port}" in out

    client = _client(f"127.0.0.1:{free_port}")
    try:
        client.create("/hello", b"world")
        assert client.get("/hello")[0] == b"world"
    finally:
        client.stop()
        client.close()

    code, out, err = run_cli("zk", "status", "--data-dir", str(data_dir))
    assert code == 0, err
    assert "running" in out
    assert str(free_port) in out

    code, out, err = run_cli("zk", "status", "--data-dir", str(data_dir), "--output", "json")
    assert code == 0, err
    status = json.loads(out)
    assert status["running"] is True
    assert status["connect"] == f"127.0.0.1:{free_port}"
    [node] = status["nodes"]
    assert node["port"] == free_port and node["alive"] is True and node["mode"] == "standalone"
    assert zookeeper_pids(data_dir) == [node["pid"]]

    code, out, err = run_cli("zk", "stop", "--data-dir", str(data_dir))
    assert code == 0, err
    assert str(node["pid"]) in out
    assert zookeeper_pids(data_dir) == []
    assert not psutil.pid_exists(node["pid"]) or psutil.Process(node["pid"]).status() == psutil.STATUS_ZOMBIE

    code, _out, err = run_cli("zk", "status", "--data-dir", str(data_dir))
    assert code == 6
    assert "no ZooKeeper" in _one_error_line(err)
    code, _out, err = run_cli("zk", "stop", "--data-dir", str(data_dir))
    assert code == 0, err  # stopping nothing is fine, so scripts can always clean up


def test_busy_port_is_one_line_error_and_starts_nothing(data_dir: Path, free_port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", free_port))
        listener.listen()
        code, out, err = run_cli("zk", "start", "--port", str(free_port), "--data-dir", str(data_dir))
    assert code == 7
    assert _one_error_line(err) == f"error: port {free_port} is already in use"
    assert out == ""
    assert not (data_dir / STATE_FILE).exists()
    assert zookeeper_pids(data_dir) == []


def test_missing_java_is_one_line_error(data_dir: Path, free_port: int, tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    code, _out, err = run_cli(
        "zk",
        "start",
        "--port",
        str(free_port),
        "--data-dir",
        str(data_dir),
        env={"PATH": str(empty_bin), "JAVA_HOME": None},
    )
    assert code == 7
    assert _one_error_line(err) == "error: java not found: install Java 17+ or set JAVA_HOME"
    assert not (data_dir / STATE_FILE).exists()
    assert zookeeper_pids(data_dir) == []


def _fake_java_home(tmp_path: Path, script: str) -> Path:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\n{script}\n")
    java.chmod(0o755)
    return home


def test_server_that_dies_at_startup_points_at_its_log(
    data_dir: Path, free_port: int, tmp_path: Path
) -> None:
    home = _fake_java_home(tmp_path, 'echo "Error: could not create the Java virtual machine" >&2; exit 3')
    code, _out, err = run_cli(
        "zk", "start", "--port", str(free_port), "--data-dir", str(data_dir), env={"JAVA_HOME": str(home)}
    )
    assert code == 7
    line = _one_error_line(err)
    assert "exited during startup (exit status 3)" in line
    assert "could not create the Java virtual machine" in line
    assert line.endswith(f"see {data_dir / 'server-1' / 'zookeeper.log'}")
    assert not (data_dir / STATE_FILE).exists()


def test_server_that_never_answers_times_out_and_is_stopped(
    tmp_path: Path, free_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_fake_java_home(tmp_path, "exec sleep 61.25")))
    server = LocalZooKeeper(tmp_path / "zk", port=free_port)
    with pytest.raises(EnvironmentProblem, match=r"did not answer within 1s; see .*zookeeper\.log$"):
        server.start(timeout=1)
    assert not server.state_file.exists()
    leftovers = [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["cmdline"] == ["sleep", "61.25"] and p.info["status"] != psutil.STATUS_ZOMBIE
    ]
    assert leftovers == []


def test_second_start_from_the_same_data_dir_is_refused(
    restartable_zk: LocalZooKeeper, free_port: int
) -> None:
    code, _out, err = run_cli(
        "zk", "start", "--port", str(free_port), "--data-dir", str(restartable_zk.data_dir)
    )
    assert code == 7
    assert "already running" in _one_error_line(err)
    assert restartable_zk.status().running
    assert len(zookeeper_pids(restartable_zk.data_dir)) == 1


def test_stop_never_signals_a_recycled_pid(tmp_path: Path) -> None:
    """A state file naming a live process that is not our ZooKeeper must not get it killed."""
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        data_dir = tmp_path / "zk"
        (data_dir / "server-1").mkdir(parents=True)
        node = {
            "id": 1,
            "client_port": 2181,
            "dir": str(data_dir / "server-1"),
            "command": ["java", "org.apache.zookeeper.server.ZooKeeperServerMain"],
            "pid": stranger.pid,
            "create_time": psutil.Process(stranger.pid).create_time(),
        }
        (data_dir / STATE_FILE).write_text(json.dumps({"version": 1, "nodes": [node]}))
        server = LocalZooKeeper(data_dir)
        assert server.status().running is False
        assert server.stop() == []
        assert stranger.poll() is None
        assert not (data_dir / STATE_FILE).exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_restarted_single_server_keeps_its_data(restartable_zk: LocalZooKeeper) -> None:
    client = _client(restartable_zk.connect_string, timeout=4.0)
    try:
        client.create("/kept", b"value")
        first = client.create("/seq-", b"", sequence=True)
    finally:
        client.stop()
        client.close()
    old_pid = restartable_zk.status().nodes[0].pid

    assert restartable_zk.kill_node(1) == old_pid
    assert restartable_zk.status().running is False
    node = restartable_zk.start_node(1)
    assert node.alive and node.pid != old_pid

    client = _client(restartable_zk.connect_string, timeout=4.0)
    try:
        assert client.get("/kept")[0] == b"value"
        second = client.create("/seq-", b"", sequence=True)
        assert int(second[-10:]) > int(first[-10:])
    finally:
        client.stop()
        client.close()

    restartable_zk.restart()
    client = _client(restartable_zk.connect_string, timeout=4.0)
    try:
        assert client.get("/kept")[0] == b"value"
    finally:
        client.stop()
        client.close()


def _write_and_read(client: KazooClient, path: str, rounds: int) -> None:
    """Writes and reads through the client's retry loop; each must land within the deadline."""
    for i in range(rounds):
        value = f"v{i}".encode()
        wait_for(lambda v=value: client.set(path, v), timeout=20, message=f"write {i} to {path}")
        assert wait_for(lambda: client.get(path)[0], timeout=20, message=f"read {i}") == value


def test_cli_ensemble_keeps_serving_when_the_leader_is_killed(data_dir: Path) -> None:
    port = free_port_block(3)
    code, out, err = run_cli(
        "zk", "start", "--port", str(port), "--data-dir", str(data_dir), "--nodes", "3", "--output", "json"
    )
    assert code == 0, err
    started = json.loads(out)
    assert started["connect"] == ",".join(f"127.0.0.1:{port + i}" for i in range(3))
    assert [node["port"] for node in started["nodes"]] == [port, port + 1, port + 2]
    assert started["data_dir"] == str(data_dir)

    status = json.loads(run_cli("zk", "status", "--data-dir", str(data_dir), "-o", "json").stdout)
    modes = sorted(node["mode"] for node in status["nodes"])
    assert modes == ["follower", "follower", "leader"]
    leader = next(node for node in status["nodes"] if node["mode"] == "leader")

    client = _client(started["connect"], timeout=4.0)
    try:
        client.create("/survives", b"before")
        os.kill(leader["pid"], signal.SIGKILL)
        wait_for(lambda: leader["pid"] not in zookeeper_pids(data_dir), message="the leader to die")
        _write_and_read(client, "/survives", rounds=10)
        assert len(client.get_children("/")) >= 2
    finally:
        client.stop()
        client.close()

    code, out, err = run_cli("zk", "status", "--data-dir", str(data_dir), "-o", "json")
    assert code == 0, err
    alive = {node["id"]: node["alive"] for node in json.loads(out)["nodes"]}
    assert alive[leader["id"]] is False and sum(alive.values()) == 2

    code, out, err = run_cli("zk", "stop", "--data-dir", str(data_dir))
    assert code == 0, err
    assert zookeeper_pids(data_dir) == []


def test_ensemble_node_restarted_after_sigkill_catches_up(zk_ensemble: LocalZooKeeper) -> None:
    client = _client(zk_ensemble.connect_string, timeout=4.0)
    try:
        client.ensure_path("/catch-up")
        victim = next(n for n in zk_ensemble.status().nodes if n.mode == "follower")
        zk_ensemble.kill_node(victim.id)
        _write_and_read(client, "/catch-up", rounds=5)
    finally:
        client.stop()
        client.close()
    assert sum(n.alive for n in zk_ensemble.status().nodes) == 2

    restarted = zk_ensemble.start_node(victim.id)
    assert restarted.alive and restarted.mode == "follower"
    direct = _client(f"127.0.0.1:{victim.client_port}", timeout=4.0)
    try:
        direct.sync("/catch-up")
        assert direct.get("/catch-up")[0] == b"v4"
    finally:
        direct.stop()
        direct.close()


def test_harness_gives_each_test_its_own_chroot(
    zk: KazooClient, zk_connect: str, zk_server: LocalZooKeeper
) -> None:
    assert zk.get_children("/") == []
    zk.create("/mine", b"x")
    assert zk_connect.startswith(zk_server.connect_string + "/t-")
    root = _client(zk_server.connect_string)
    try:
        chroot = zk_connect.split("/", 1)[1]
        assert root.get_children(f"/{chroot}") == ["mine"]
    finally:
        root.stop()
        root.close()


# -- issue 23: a restarted server keeps its identity ----------------------------------------------


def test_a_server_started_again_from_its_data_dir_keeps_its_port_tls_and_sasl(
    data_dir: Path, free_port: int
) -> None:
    first = run_cli(
        "zk", "start", "--port", str(free_port), "--data-dir", str(data_dir), "--tls", "--sasl",
        "--sasl-user", "ops", "-o", "json",
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert run_cli("zk", "stop", "--data-dir", str(data_dir)).returncode == 0

    again = run_cli("zk", "start", "--data-dir", str(data_dir), "-o", "json")
    assert again.returncode == 0, again.stderr
    started = json.loads(again.stdout)
    assert started["connect"] == f"127.0.0.1:{free_port}"
    assert started["tls"] is True and started["sasl"] is True and "digest:ops" in started["client"]["options"]
    status = json.loads(run_cli("zk", "status", "--data-dir", str(data_dir), "-o", "json").stdout)
    assert status["running"] and status["nodes"][0]["mode"] == "standalone"  # answers TLS + SASL probes
    assert run_cli("zk", "stop", "--data-dir", str(data_dir)).returncode == 0

    # an option given changes that part of the identity, and the next start keeps the change
    other = free_port_block(1)
    changed = run_cli(
        "zk", "start", "--data-dir", str(data_dir), "--port", str(other), "--no-tls", "-o", "json"
    )
    assert changed.returncode == 0, changed.stderr
    started = json.loads(changed.stdout)
    assert started["connect"] == f"127.0.0.1:{other}" and started["tls"] is False and started["sasl"] is True


def test_a_damaged_identity_record_is_one_line_and_starts_nothing(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "configctl-zk-identity.json").write_text('{"port": "2181"')
    result = run_cli("zk", "start", "--data-dir", str(data_dir))
    assert result.returncode == 7
    assert "identity" in _one_error_line(result.stderr)
    assert zookeeper_pids(data_dir) == []


def test_a_deeply_nested_state_file_is_one_line(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / STATE_FILE).write_text("[" * 100_000 + "]" * 100_000)
    result = run_cli("zk", "status", "--data-dir", str(data_dir))
    assert result.returncode == 7
    assert "unreadable state file" in _one_error_line(result.stderr)
    (data_dir / STATE_FILE).unlink()  # so the fixture's stop finds nothing to stop
