// configctl console: live updates over /events, table sorting and filtering.
// Served from the console itself (the Content-Security-Policy allows no inline script); it never
// builds markup from data: a refreshed page is the server's escaped HTML, parsed and swapped in.
// A hidden tab holds no stream: browsers allow six connections per host, and a seventh tab would
// never load behind six streams. It closes its stream when hidden, and opens it again and
// refreshes when shown.
"use strict";

(function () {
  const sorted = {}; // table id -> {column, descending}

  function cellValue(row, column, numeric) {
    const cell = row.cells[column];
    if (!cell) return numeric ? -Infinity : "";
    const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
    if (!numeric) return raw.toLowerCase();
    const number = parseFloat(raw);
    return Number.isNaN(number) ? -Infinity : number;
  }

  function sortTable(table, column, descending) {
    const header = table.tHead.rows[0].cells[column];
    const numeric = header && header.dataset.type === "num";
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort(function (a, b) {
      const x = cellValue(a, column, numeric);
      const y = cellValue(b, column, numeric);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    body.append(...rows);
    Array.from(table.tHead.rows[0].cells).forEach(function (th, index) {
      th.dataset.sorted = index === column ? (descending ? "desc" : "asc") : "";
    });
  }

  function filterTable(table) {
    const input = document.querySelector('[data-filter-for="' + table.id + '"]');
    const show = document.querySelector('[data-show-for="' + table.id + '"]');
    const query = input ? input.value.trim().toLowerCase() : "";
    const only = show ? show.value : "";
    let visible = 0;
    Array.from(table.tBodies[0].rows).forEach(function (row) {
      let keep = !query || row.textContent.toLowerCase().includes(query);
      if (keep && only === "not-live") keep = row.dataset.live === "no";
      if (keep && only === "behind") keep = parseInt(row.dataset.behind || "0", 10) > 0;
      if (keep && only === "problems") keep = parseInt(row.dataset.problems || "0", 10) > 0;
      if (keep && only === "mismatch") keep = row.dataset.mismatch === "yes";
      row.hidden = !keep;
      if (keep) visible += 1;
    });
    const count = document.getElementById(table.id + "-count");
    if (count) count.textContent = visible + " of " + table.tBodies[0].rows.length + " shown";
  }

  function prepare(root) {
    root.querySelectorAll("table.sortable").forEach(function (table) {
      if (!table.id || !table.tHead) return;
      Array.from(table.tHead.rows[0].cells).forEach(function (th, index) {
        th.tabIndex = 0;
        th.addEventListener("click", function () {
          const previous = sorted[table.id];
          const descending = previous && previous.column === index ? !previous.descending : false;
          sorted[table.id] = { column: index, descending: descending };
          sortTable(table, index, descending);
        });
      });
      const state = sorted[table.id];
      if (state) sortTable(table, state.column, state.descending);
      filterTable(table);
    });
  }

  function bindFilters() {
    document.querySelectorAll("[data-filter-for], [data-show-for]").forEach(function (control) {
      control.addEventListener("input", function () {
        const id = control.dataset.filterFor || control.dataset.showFor;
        const table = document.getElementById(id);
        if (table) filterTable(table);
      });
    });
  }

  let pending = null;
  let refreshing = false;

  async function refresh() {
    pending = null;
    if (refreshing) {
      pending = setTimeout(refresh, 200);
      return;
    }
    refreshing = true;
    try {
      const answer = await fetch(window.location.href, { headers: { Accept: "text/html" }, cache: "no-store" });
      if (!answer.ok) return;
      const page = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = page.getElementById("main");
      const main = document.getElementById("main");
      if (!fresh || !main) return;
      // Keep the filter controls the person is typing in; swap everything else.
      const focused = document.activeElement && document.activeElement.id;
      const values = {};
      main.querySelectorAll("input, select").forEach(function (c) { if (c.id) values[c.id] = c.value; });
      main.replaceChildren(...Array.from(fresh.childNodes).map(function (n) { return document.importNode(n, true); }));
      main.querySelectorAll("input, select").forEach(function (c) { if (c.id in values) c.value = values[c.id]; });
      main.dataset.versions = fresh.dataset.versions || "{}";
      main.dataset.refreshed = String(parseInt(main.dataset.refreshed || "0", 10) + 1);
      bindFilters();
      prepare(main);
      if (focused) { const again = document.getElementById(focused); if (again) again.focus(); }
    } finally {
      refreshing = false;
    }
  }

  // At most one refresh in flight and a few a second: a fleet applying a change moves the status
  // document many times, and a page of 1,000 brokers need not follow each move.
  function schedule() {
    if (pending === null) pending = setTimeout(refresh, 250);
  }

  let source = null; // the page's one stream, while it is shown
  let streamed = false; // it had one before: a page shown again refreshes

  function showState(text, name) {
    const state = document.getElementById("live-state");
    if (state) { state.textContent = text; state.dataset.state = name; }
  }

  function connect() {
    const main = document.getElementById("main");
    const wanted = (main && main.dataset.live ? main.dataset.live : "").split(" ").filter(Boolean);
    if (!wanted.length || !window.EventSource) {
      showState("static", "static");
      return;
    }
    if (document.hidden) {
      showState("paused", "paused");
      return;
    }
    let first = !streamed;
    streamed = true;
    source = new EventSource("/events");
    source.addEventListener("hello", function (event) {
      showState("live", "live");
      // Reconnected, or something moved between the page's making and this stream: refresh.
      let moved = !first;
      try {
        const shown = JSON.parse(main.dataset.versions || "{}");
        const now = JSON.parse(event.data).versions || {};
        wanted.forEach(function (topic) {
          if (topic in shown && topic in now && shown[topic] !== now[topic]) moved = true;
        });
      } catch (ignored) {
        moved = true;
      }
      if (moved) schedule();
      first = false;
    });
    wanted.forEach(function (topic) { source.addEventListener(topic, schedule); });
    source.addEventListener("problem", schedule); // ZooKeeper lost or back: the banner comes or goes
    source.onerror = function () {
      showState("reconnecting…", "down");
    };
  }

  // Page Visibility: a hidden tab lets its connection go; shown again, it reconnects and refreshes.
  function pause() {
    if (source === null) return;
    source.close();
    source = null;
    showState("paused", "paused");
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) pause();
    else if (source === null) connect();
  });

  document.addEventListener("DOMContentLoaded", function () {
    bindFilters();
    prepare(document);
    connect();
  });
})();
