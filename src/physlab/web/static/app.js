// PhysLab dashboard: listen to server-sent events, re-fetch the server-rendered fragment, post actions.
// The server escapes everything it renders; this script never builds HTML from data.
(function () {
  "use strict";
  const body = document.body;
  const live = document.getElementById("live");
  const conn = document.getElementById("conn");

  async function refresh() {
    if (!live) return;
    // what the reader opened or closed stays so (the problem, a derivation, a call) across refreshes
    const shown = Array.from(live.querySelectorAll("details[id]")).map((d) => [d.id, d.open]);
    const resp = await fetch(live.dataset.fragment, { credentials: "same-origin", cache: "no-store" });
    if (!resp.ok) return;
    live.innerHTML = await resp.text();
    shown.forEach(([id, open]) => { const d = document.getElementById(id); if (d) d.open = open; });
    const status = document.getElementById("run-status");
    const form = document.getElementById("action-form");
    if (status && form && status.dataset.talk) form.dataset.state = status.dataset.talk;  // which buttons apply
    body.dataset.refreshed = String(Date.now());
  }

  if (body.dataset.events && window.EventSource) {
    const es = new EventSource(body.dataset.events);
    let first = true;
    const onEvent = () => { if (first) { first = false; return; } refresh(); };
    es.addEventListener("run", onEvent);
    es.addEventListener("runs", onEvent);
    es.onopen = () => { conn.textContent = "live"; conn.className = "live"; first = true; refresh(); };
    es.onerror = () => { conn.textContent = "reconnecting…"; conn.className = "muted"; };
  }

  const form = document.getElementById("action-form");
  if (form && body.dataset.actions) {
    const result = document.getElementById("action-result");
    async function send(kind, text, on, confirmed) {
      const payload = { kind: kind, text: text || "" };
      if (on) payload.on = on;
      if (kind === "resume") payload.problem = document.getElementById("resume-problem").value.trim();
      if (confirmed) payload.confirm = true;
      const resp = await fetch(body.dataset.actions, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload),
      });
      let detail = "", ask = false;
      try { const data = await resp.json(); detail = data.detail; ask = data.confirm === true; } catch (e) { detail = resp.statusText; }
      // a record not written on this machine chooses where the requests, the key or files go: the user decides
      if (ask && !confirmed && window.confirm(detail + "\n\nResume with these?")) return send(kind, text, on, true);
      result.textContent = (resp.ok ? "" : "refused: ") + (typeof detail === "string" ? detail : JSON.stringify(detail));
      result.dataset.ok = String(resp.ok);
      if (resp.ok) refresh();
    }
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      send(form.kind.value, form.text.value, form.on.value.trim());
    });
    form.querySelectorAll("button.quick").forEach((b) => b.addEventListener("click", () => send(b.dataset.kind, "", "")));
  }
})();
