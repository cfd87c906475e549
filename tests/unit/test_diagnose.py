"""The connection diagnosis: kazoo's log kept per client, and only our clients' thread deaths taken."""

from __future__ import annotations

import logging
import threading

import pytest
from kazoo.client import KazooClient

from configctl.zk import diagnose
from configctl.zkconnection import ConnectionSettings, Tls

pytestmark = pytest.mark.unit


def test_other_threads_exceptions_still_reach_the_previous_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[type[BaseException]] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_type))
    client = KazooClient(hosts="127.0.0.1:1")
    diagnose.watch_thread(client)
    assert threading.excepthook is diagnose._hook

    def fail() -> None:
        raise RuntimeError("not kazoo's")

    thread = threading.Thread(target=fail)
    thread.start()
    thread.join()
    assert seen == [RuntimeError]
    assert diagnose.thread_death(client) is None


def test_the_kazoo_log_is_kept_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    log = diagnose.KazooLog()
    logger = log.logger()
    logger.info("Connecting to %s(%s):%s, use_ssl: %r", "zk1", "10.0.0.1", 2181, True)
    logger.warning(
        "Connection dropped: socket connection error: [SSL: CERTIFICATE_VERIFY_FAILED] x (_ssl.c:1)"
    )
    logger.exception("Unhandled exception in connection loop")
    assert log.servers_with(["CERTIFICATE_VERIFY_FAILED"]) == {("zk1", 2181)}
    assert capsys.readouterr() == ("", "")
    assert "configctl.zk.kazoo.session" not in logging.Logger.manager.loggerDict  # outside logging's tree


def test_an_untrusted_server_ends_the_wait_only_once_every_server_failed() -> None:
    settings = ConnectionSettings("zk1:2181,zk2:2181", tls=Tls(ca="/ca.pem"))
    log = diagnose.KazooLog()
    logger = log.logger()
    client = KazooClient(hosts=settings.connect)
    logger.info("Connecting to %s(%s):%s, use_ssl: %r", "zk1", "10.0.0.1", 2181, True)
    logger.warning(
        "Connection dropped: socket connection error: [SSL: CERTIFICATE_VERIFY_FAILED] bad (_ssl.c:1)"
    )
    assert diagnose.early_failure(log, client, settings) is None  # zk2 may still be fine
    logger.info("Connecting to %s(%s):%s, use_ssl: %r", "zk2", "10.0.0.2", 2181, True)
    logger.warning(
        "Connection dropped: socket connection error: [SSL: CERTIFICATE_VERIFY_FAILED] bad (_ssl.c:1)"
    )
    failure = diagnose.early_failure(log, client, settings)
    assert failure is not None and failure.exit_code == 4
    assert failure.message == (
        "ZooKeeper at zk1:2181,zk2:2181 presented a TLS certificate this client does not trust (bad): check --zk-tls-ca"
    )
