// configctl console: the Abort buttons of the Rollouts page (served only with serve --allow-actions).
// Served from the console itself (the Content-Security-Policy allows no inline script). The token
// is asked for in the page's own dialog and kept in sessionStorage only (this tab, until it
// closes): never a cookie, which a browser would send by itself, never a URL. Every request
// carries it in the Authorization header as JSON, which no other site can make a browser send.
// The result line is text (textContent), never markup; the page's live refresh shows the rest.
"use strict";

(function () {
  const KEY = "configctl-console-token";
  let target = null; // the rollout id the dialog is about

  function element(id) {
    return document.getElementById(id);
  }

  function say(text, ok) {
    const line = element("action-result");
    if (!line) return;
    line.textContent = text;
    line.dataset.outcome = ok ? "ok" : "failed";
    line.hidden = false;
  }

  function storedToken() {
    try {
      return window.sessionStorage.getItem(KEY) || "";
    } catch (ignored) {
      return "";
    }
  }

  function keepToken(token) {
    try {
      if (token) window.sessionStorage.setItem(KEY, token);
      else window.sessionStorage.removeItem(KEY);
    } catch (ignored) {
      // storage refused (private mode): the token is asked for again next time
    }
  }

  // What the CLI would have said: its exit status and its one line, or the outcome on success.
  function summary(id, answer, body) {
    if (body && typeof body.exit_code === "number") {
      const document_ = body.document || {};
      let text = "rollout " + id + ": exit " + body.exit_code;
      if (body.error) text += ": " + body.error;
      else if (document_.outcome) text += ": " + document_.outcome;
      if (body.exit_code === 0 && Array.isArray(document_.restored)) {
        text += document_.restored.length
          ? "; restored to their previous bytes: " + document_.restored.join(", ")
          : "; nothing had been written";
      }
      if (body.identity) text += " (as " + body.identity + ")";
      return text;
    }
    const why = body && body.error ? body.error : answer.statusText;
    return "rollout " + id + ": refused (HTTP " + answer.status + "): " + why;
  }

  async function abort(id, token, reason) {
    say("rollout " + id + ": aborting…", true);
    let answer;
    try {
      answer = await fetch("/api/rollouts/" + encodeURIComponent(id) + "/abort", {
        method: "POST",
        headers: {
          Authorization: "Bearer " + token,
          "Content-Type": "application/json",
          Accept: "application/json",
        },
        body: JSON.stringify({ reason: reason }),
        cache: "no-store",
        credentials: "omit",
        redirect: "error",
      });
    } catch (error) {
      say("rollout " + id + ": the console could not be reached (" + error.message + ")", false);
      return;
    }
    let body = null;
    try {
      body = await answer.json();
    } catch (ignored) {
      body = null;
    }
    if (answer.status === 401) keepToken(""); // a wrong token is not kept
    say(summary(id, answer, body), answer.ok && body && body.exit_code === 0);
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest ? event.target.closest("button[data-abort]") : null;
    const dialog = element("abort-dialog");
    if (!button || !dialog) return;
    target = button.dataset.abort;
    element("abort-id").textContent = target;
    element("abort-token").value = storedToken();
    element("abort-reason").value = "";
    dialog.showModal();
    (element("abort-token").value ? element("abort-reason") : element("abort-token")).focus();
  });

  document.addEventListener("DOMContentLoaded", function () {
    const form = element("abort-form");
    const dialog = element("abort-dialog");
    if (!form || !dialog) return;
    element("abort-cancel").addEventListener("click", function () {
      dialog.close();
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const token = element("abort-token").value.trim();
      const reason = element("abort-reason").value.trim();
      if (!token || !reason || target === null) return;
      keepToken(token);
      dialog.close();
      abort(target, token, reason);
    });
  });
})();
