"""The console's script in a hidden tab (issue 36): it closes its event stream when the tab is
hidden and opens it again, refreshing the page, when the tab is shown (browsers allow six
connections per host: a seventh tab would never load behind six streams).

The served script runs in Node with the few browser objects it touches (``document``,
``EventSource``, ``fetch``), each recording what the script did; skipped where ``node`` is missing.
(``tests/browser`` drives a real chromium where one is installed.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import resources

import pytest

NODE = shutil.which("node")
SCRIPT = resources.files("configctl.console") / "static" / "console.js"

HARNESS = r"""
const vm = require("vm");
const code = require("fs").readFileSync(process.argv[1], "utf8");
const steps = JSON.parse(process.argv[2]);
const listeners = {};
const sources = [];
const fetched = [];
class Source {
  constructor(url) { this.url = url; this.closed = false; this.handlers = {}; sources.push(this); }
  addEventListener(name, fn) { (this.handlers[name] = this.handlers[name] || []).push(fn); }
  close() { this.closed = true; }
  emit(name, data) { (this.handlers[name] || []).forEach((fn) => fn({ data: JSON.stringify(data) })); }
}
const state = { textContent: "", dataset: {} };
const main = { dataset: { live: "status changes", versions: '{"status":1,"changes":1}' },
               querySelectorAll: () => [] };
global.document = {
  hidden: false,
  addEventListener(name, fn) { (listeners[name] = listeners[name] || []).push(fn); },
  getElementById(id) { return id === "main" ? main : id === "live-state" ? state : null; },
  querySelectorAll() { return []; },
  activeElement: null,
};
global.EventSource = Source;
global.window = { EventSource: Source, location: { href: "http://127.0.0.1:8642/" } };
global.fetch = (url) => { fetched.push(url); return Promise.resolve({ ok: false }); };
vm.runInThisContext(code);
const seen = [];
function look() {
  return { streams: sources.length, open: sources.filter((s) => !s.closed).length,
           state: state.dataset.state || "", refreshes: fetched.length };
}
(async function () {
  for (const step of steps) {
    if (step === "hide" || step === "show") {
      document.hidden = step === "hide";
      (listeners.visibilitychange || []).forEach((fn) => fn());
    } else if (step === "load") {
      (listeners.DOMContentLoaded || []).forEach((fn) => fn());
    } else if (step === "hello") {
      sources[sources.length - 1].emit("hello", { versions: { status: 1, changes: 1 } });
      await new Promise((done) => setTimeout(done, 400)); // a refresh is scheduled 250 ms on
    } else if (step === "hidden") {
      document.hidden = true;
    }
    seen.push([step, look()]);
  }
  console.log(JSON.stringify(seen));
})();
"""


def run(*steps: str) -> list[tuple[str, dict[str, object]]]:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", HARNESS, str(SCRIPT), json.dumps(steps)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [(step, seen) for step, seen in json.loads(done.stdout)]


pytestmark = pytest.mark.skipif(NODE is None, reason="needs node to run the console's script")


def test_a_hidden_tab_closes_its_stream_and_a_shown_one_reopens_and_refreshes():
    seen = dict(enumerate(run("load", "hello", "hide", "show", "hello")))
    assert seen[0] == ("load", {"streams": 1, "open": 1, "state": "", "refreshes": 0})
    assert seen[1] == ("hello", {"streams": 1, "open": 1, "state": "live", "refreshes": 0})
    assert seen[2] == ("hide", {"streams": 1, "open": 0, "state": "paused", "refreshes": 0})
    assert seen[3][1]["streams"] == 2 and seen[3][1]["open"] == 1  # a new stream, the old one closed
    assert seen[4] == ("hello", {"streams": 2, "open": 1, "state": "live", "refreshes": 1})


def test_a_tab_opened_hidden_holds_no_stream_until_shown():
    seen = run("hidden", "load", "show", "hello")
    assert seen[1] == ("load", {"streams": 0, "open": 0, "state": "paused", "refreshes": 0})
    assert seen[2][1]["open"] == 1
    assert seen[3] == ("hello", {"streams": 1, "open": 1, "state": "live", "refreshes": 0})  # nothing moved


def test_hiding_twice_or_showing_a_shown_tab_changes_nothing():
    seen = run("load", "hello", "show", "hide", "hide", "show", "show")
    assert [s["streams"] for _, s in seen] == [1, 1, 1, 1, 1, 2, 2]
    assert [s["open"] for _, s in seen] == [1, 1, 1, 0, 0, 1, 1]
