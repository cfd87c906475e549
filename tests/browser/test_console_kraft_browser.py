"""The console on a KRaft cluster in a real browser: Debian's chromium, a real Kafka 4.4 node.

A combined node (broker and controller, no ZooKeeper) of this module's own; ``configctl serve
--bootstrap-server`` polls it (no watches on KRaft). A page is opened once and then only watched:
a write by configctl, then one by Kafka's own kafka-configs.sh, must show up by themselves
(server-sent events after a poll, the page's script swapping the content in), never by a reload:
a marker set on ``window`` before the change is still there after it. Each test also fails on
any console error in the page (a script error, a Content-Security-Policy violation, a 404).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_console import Served
from helpers import REPO_ROOT, child_env, free_port, run_cli, wait_for

from configctl.adminapi.client import KafkaAdmin
from configctl.console.polling import POLL_INTERVAL
from configctl.localkraft import KRaftCluster

pytestmark = pytest.mark.kafka

NOT_RELOADED = "() => window.__configctlNotReloaded === true"
ONE_POLL_MS = int((POLL_INTERVAL + 10.0) * 1000)
"""How long a change may take to show: one poll, and the poll itself on a busy machine."""


@pytest.fixture(scope="module")
def kraft_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftCluster]:
    """Node 1 of a KRaft cluster of this module's own: broker and controller in one process."""
    cluster = KRaftCluster(
        REPO_ROOT / "build" / "kafka4", tmp_path_factory.mktemp("kraft-browser"), combined=True
    )
    cluster.start()
    try:
        with KafkaAdmin(cluster.bootstrap) as admin:
            wait_for(lambda: admin.broker_ids() == [1], timeout=60, message="broker 1 registered")
        yield cluster
    finally:
        cluster.stop()


def serve_kraft(bootstrap: str) -> Served:
    """``configctl --bootstrap-server BOOTSTRAP serve`` on a free loopback port, once it answers."""
    import urllib.request

    port = free_port()
    log = Path(tempfile.mkstemp(prefix="configctl-serve-kraft-", suffix=".log")[1])
    command = [sys.executable, "-m", "configctl", "--bootstrap-server", bootstrap, "serve",
               "--bind", f"127.0.0.1:{port}"]  # fmt: skip
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=child_env())
    served = Served(process, port, log)

    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"configctl serve exited {process.returncode}: {log.read_text()!r}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(served.url + "/api/console", timeout=5) as r,
        ):
            return r.status == 200
        return False

    wait_for(up, timeout=60, message="configctl serve answering")
    return served


def cli(bootstrap: str, *args: str) -> Any:
    result = run_cli("--bootstrap-server", bootstrap, *args)
    assert result.returncode == 0, result.stderr
    return result


def open_live(page: Any, url: str) -> None:
    """Open ``url``, wait for its stream to say hello, and mark the window (see the module doc)."""
    page.goto(url)
    page.wait_for_selector('#live-state[data-state="live"]', timeout=10_000)
    page.evaluate("() => { window.__configctlNotReloaded = true; }")


def test_writes_on_kraft_show_on_the_fleet_and_entity_pages_without_reload(kraft_node, consoles, page):
    bootstrap = kraft_node.bootstrap
    consoles.append(console := serve_kraft(bootstrap))
    open_live(page, console.url + "/")
    node = page.locator('#brokers tbody tr[data-node="1"]')
    assert node.locator("td").nth(1).inner_text() == "broker, controller"
    assert node.locator("td").nth(2).inner_text() == "registered"
    assert page.locator("nav").inner_text().count("Fleet") == 1
    client = f"app-{uuid.uuid4().hex[:8]}"
    cli(
        bootstrap, "alter", "--client", client, "--add-config", "producer_byte_rate=4096", "--reason", "OPS-9"
    )
    link = f'#changes a[href="/entity/clients/{client}"]'
    page.wait_for_selector(link, timeout=ONE_POLL_MS)  # the newest write, pushed after a poll
    assert page.evaluate(NOT_RELOADED)
    page.click(link)  # the entity page: what broker 1 reports when asked itself
    page.wait_for_selector('#live-state[data-state="live"]', timeout=10_000)
    page.evaluate("() => { window.__configctlNotReloaded = true; }")
    assert page.locator("#applied tbody tr td").nth(1).inner_text() == "applied"
    assert "OPS-9" in page.locator("main").inner_text()
    theirs = kraft_node.config_command(
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        client,
        "--add-config",
        "producer_byte_rate=8192",
    )
    assert theirs.returncode == 0, theirs.stderr
    page.wait_for_selector("tr.outside", timeout=ONE_POLL_MS)  # its history: written outside configctl
    assert "8192" in page.locator("main").inner_text()
    assert page.evaluate(NOT_RELOADED)
    assert page.errors == []  # no script error, no policy violation, no 404
