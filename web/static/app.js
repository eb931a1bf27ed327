// The explorer page: the controls around the Go model (main.wasm, which
// sets globalThis.markerwave; see web/wasm/main.go). Every decision about
// the algorithm is the model's; this file only shows what it returns.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  let info = null;      // scenarios, variants and limits
  let current = null;   // the model session's view
  let audit = null;     // the loaded trace's view
  let cursor = 0;       // events of the loaded trace shown
  let custom = null;    // constants of one's own, when started
  let started = false;  // the WebAssembly has started: actions can be taken
  const eventsBefore = 300, eventsAfter = 100; // the events listed around the cursor
  // Where a property's argument is: docs/properties.md, at its anchor
  // (index.html names it, from web/explorer.DocsBase).
  const docsBase = document.querySelector('meta[name="markerwave-docs"]').content;

  function call(name, ...args) {
    const out = JSON.parse(globalThis.markerwave[name](...args));
    if (out.error) throw new Error(out.error);
    return out;
  }
  function showError(e) {
    const el = $("error");
    el.textContent = e ? String(e.message || e) : "";
    el.hidden = !e;
  }
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v; else if (k.startsWith("data-")) n.setAttribute(k, v); else n[k] = v;
    }
    for (const k of kids) n.append(k);
    return n;
  }

  // The location hash holds the run: scenario (or constants of one's
  // own), specification, schedule, and the tab.
  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    return { s: h.get("s"), k: h.get("k"), v: h.get("v"), run: h.get("run") || "", tab: h.get("tab") };
  }
  function writeHash() {
    const h = new URLSearchParams();
    if ($("panel-audit").hidden === false) h.set("tab", "audit");
    if (custom) h.set("k", b64(JSON.stringify(custom))); else h.set("s", $("scenario").value);
    h.set("v", $("variant").value);
    if (current && current.schedule) h.set("run", current.schedule);
    history.replaceState(null, "", "#" + h.toString());
  }
  const b64 = (s) => btoa(unescape(encodeURIComponent(s))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const unb64 = (s) => decodeURIComponent(escape(atob(s.replace(/-/g, "+").replace(/_/g, "/"))));

  // Every scenario, the Chandy-Lamport ones and the barrier ones; a
  // scenario's family says which specifications it offers.
  const allScenarios = () => info.scenarios.concat(info.barrier_scenarios);
  const allVariants = () => info.variants.map((v) => Object.assign({ family: "chandy-lamport" }, v)).concat(info.barrier_variants);
  function scenario() { return allScenarios().find((s) => s.id === $("scenario").value); }
  const family = (sc) => (sc && sc.family) || "chandy-lamport";
  // A scenario's scripted run under specification v: a barrier
  // scenario's counter-example for v, if it has one, else its run.
  const runFor = (sc, v) => (sc.runs && sc.runs[v]) || sc.article;
  // offerVariants shows the specifications of the scenario's family only.
  function offerVariants(sc) {
    const fam = custom ? "chandy-lamport" : family(sc);
    const sel = $("variant");
    for (const o of sel.options) o.hidden = o.dataset.family !== fam;
    if (sel.selectedOptions[0] && sel.selectedOptions[0].hidden) [...sel.options].find((o) => !o.hidden).selected = true;
  }
  // selectVariant selects specification v among those offered: the
  // families share names (Spec is tla/ChandyLamport.tla's and
  // tla/BarrierSnapshots.tla's).
  function selectVariant(v) {
    const o = [...$("variant").options].find((x) => !x.hidden && x.value === v);
    if (o) o.selected = true;
  }
  // variantInfo is the specification selected, of the family offered.
  function variantInfo() {
    const o = $("variant").selectedOptions[0];
    return o && allVariants().find((x) => x.variant === o.value && x.family === o.dataset.family);
  }

  function start(schedule) {
    showError(null);
    try {
      const v = $("variant").value;
      const out = custom ? call("startConstants", JSON.stringify(custom), v, schedule || "")
                         : call("start", $("scenario").value, v, schedule || "");
      if (out.warning) showError("The schedule stopped early: " + out.warning);
      render(out);
    } catch (e) { showError(e); }
  }
  function act(name, ...args) {
    showError(null);
    try { render(call(name, ...args)); } catch (e) { showError(e); }
  }

  function render(v) {
    current = v;
    const sc = custom ? null : scenario();
    $("about").textContent = sc ? sc.about : "Constants of your own.";
    const barrier = v.kind === "barrier";
    $("article").hidden = !(sc && runFor(sc, v.variant));
    $("article").textContent = barrier ? "Scripted run" : "Article's run";
    $("constants-box").hidden = barrier;
    if (!barrier) $("constants").value = JSON.stringify(v.constants, null, 1);
    const en = $("enabled");
    en.replaceChildren(...v.enabled.map((s, i) => el("li", {},
      el("button", { class: "act", title: "token " + s.token, "data-token": s.token, disabled: !started, onclick: () => act("take", s.token) },
        (i < 9 ? (i + 1) + "  " : "") + s.label))));
    $("deadlock").hidden = v.enabled.length > 0;
    $("back").disabled = v.history.length === 0;
    $("history").replaceChildren(...v.history.map((s, i) => el("li", { "data-n": String(i + 1), "data-event": String(s.event || 0) }, s.label)));
    $("cl-state").hidden = barrier;
    $("barrier-state").hidden = !barrier;
    if (barrier) renderBarrier(v); else renderState(v);
    $("properties").replaceChildren(...v.properties.map(propItem));
    const banner = $("banner");
    if (v.violated.length) {
      banner.className = "banner fails";
      banner.replaceChildren(el("strong", {}, "Violated: " + v.violated.map((p) => p.name).join(", ")),
        el("span", {}, " — " + v.violated.map((p) => p.detail).join("; ")));
    } else {
      banner.className = "banner holds";
      banner.replaceChildren(el("strong", {}, "Every property of the spec holds in this state."));
    }
    $("diagram").innerHTML = v.diagram || "<p class='about'>Take a step: the diagram grows with the run.</p>";
    const notes = barrier ? v.notes || [] : [];
    $("diagram-notes").replaceChildren(...notes.map((n) => el("li", {}, n)));
    $("diagram-notes").hidden = notes.length === 0;
    // A run of the faults specifications is drawn without its failures:
    // say so, and offer no trace of it to download or audit.
    $("partial").textContent = v.partial ? "Note: " + v.partial + "." : "";
    $("partial").hidden = !v.partial;
    $("download").disabled = $("audit-run").disabled = !!v.partial;
    if (started) writeHash();
  }

  // A Chandy-Lamport run's state: the processes, the channels, the
  // snapshots.
  function renderState(v) {
    $("system-total").textContent = "(the system holds " + v.system_total + ")";
    $("procs").tBodies[0].replaceChildren(...v.procs.map((p) =>
      el("tr", {}, el("th", {}, p.id), el("td", { class: "bal" }, p.bal), el("td", {}, String(p.sent)), el("td", {}, String(p.rcvd)))));
    $("chans").tBodies[0].replaceChildren(...v.chans.map((c) =>
      el("tr", {}, el("th", {}, c.name), el("td", {}, c.msgs.length ? c.msgs.join(", ") : "empty"))));
    $("snapshots").replaceChildren(...v.snapshots.map(snapCard));
  }

  // A barrier run's state: each node (its count, the inputs alignment
  // blocks, its mode, the type it reported and the one it took), each
  // edge (its queue, head first, the records persisted as channel state
  // marked; its recording; its channel state), and the snapshot.
  function renderBarrier(v) {
    $("system-total").textContent = "";
    $("nodes").tBodies[0].replaceChildren(...v.nodes.map((n) =>
      el("tr", { "data-node": n.name, class: (n.switched ? "switched " : "") + (n.blocked.length ? "blocked" : "") },
        el("th", {}, n.name), el("td", {}, n.count), el("td", { class: "blocked" }, n.blocked.join(", ") || "—"),
        el("td", { class: "mode" }, n.mode || "—"),
        el("td", { class: "reported" }, n.reported ? n.reported + (n.taken !== n.reported ? " (took " + n.taken + ")" : "") : "—"),
        el("td", { class: "node-state" }, n.state))));
    const item = (it) => el("span", { class: "item" + (it.barrier ? " barrier" : "") + (it.persisted ? " persisted" : ""),
      title: it.persisted ? "persisted as this edge's channel state" : "" }, it.text);
    $("edges").tBodies[0].replaceChildren(...v.edges.map((e) =>
      el("tr", { "data-edge": e.name, class: e.blocked ? "blocked" : "" },
        el("th", {}, e.name + (e.back ? " (back-edge)" : "") + (e.force_aligned ? " (force-aligned)" : "")),
        el("td", { class: "queue" }, ...(e.queue.length ? e.queue.map(item) : ["empty"])),
        el("td", {}, e.status), el("td", { class: "channel-state" }, e.channel_state.join(", ") || "none"))));
    $("snapshots").replaceChildren(el("article", { class: "snap " + (v.complete ? (v.violated.length ? "bad" : "ok") : "open"), "data-snap": "barrier" },
      el("h3", {}, "The snapshot (" + v.variant + ")"), el("p", { class: "status" }, v.snapshot)));
  }

  // A property in this state: whether it holds, what fails, the link to
  // its argument, and the steps of this run that make it hold or fail.
  function propItem(p) {
    const why = el("p", { class: "why" }, p.why.text ? p.why.text + " " : "",
      ...p.why.steps.map((k) => el("button", { class: "step", "data-step": String(k), title: "show step " + k + " in the schedule and the diagram", onclick: () => showStep(k) }, "step " + k)));
    return el("li", { class: p.holds ? "holds" : "fails", "data-prop": p.name },
      el("span", { class: "mark" }, p.holds ? "✓ " : "✗ "), el("strong", {}, p.name), p.detail ? " — " + p.detail : "",
      " ", el("a", { class: "why-link", href: docsBase + "#" + p.anchor }, p.holds ? "why it holds" : "why it should hold"), why);
  }
  // showStep brings step k of the run into view: its line of the
  // schedule, and its event in the diagram, marked.
  function showStep(k) {
    for (const n of document.querySelectorAll("#history li.at, #diagram svg .event.at")) n.classList.remove("at");
    const li = $("history").querySelector(`li[data-n="${k}"]`);
    if (!li) return;
    li.classList.add("at");
    li.scrollIntoView({ block: "nearest" });
    $("history").dataset.at = String(k);
    const ev = $("diagram").querySelector(`svg .event[data-index="${li.dataset.event}"]`);
    if (ev) { ev.classList.add("at"); ev.scrollIntoView({ block: "nearest", inline: "center" }); }
  }

  function snapCard(s) {
    const procs = s.procs.map((p) => p.id + (p.recorded ? " " + p.bal : " —")).join(", ");
    const chans = s.chans.map((c) => el("li", {}, c.name + " " + c.status + (c.msgs.length ? ": " + c.msgs.join(", ") : "")));
    const ok = s.complete && s.total === s.of;
    return el("article", { class: "snap " + (s.complete ? (ok ? "ok" : "bad") : "open"), "data-snap": String(s.id) },
      el("h3", {}, "Snapshot " + s.id + " (initiator " + s.initiator + ")"),
      el("p", { class: "total" }, el("span", { class: "snap-total" }, s.total), " recorded of " + s.of),
      el("p", { class: "status" }, s.status),
      el("p", {}, "Recorded states: " + procs),
      el("ul", { class: "recchans" }, ...chans));
  }

  // The audit tab. A trace is audited, and its diagrams drawn, by a
  // second instance of the model in a Web Worker (worker.js): a long
  // trace takes seconds, and the page stays responsive meanwhile,
  // showing how far the replay is.
  let auditWorker = null, nextCall = 0;
  const pending = new Map(); // call id -> {resolve, reject, progress}
  function callWorker(name, args, progress) {
    if (!auditWorker) {
      auditWorker = new Worker("worker.js");
      auditWorker.onmessage = (e) => {
        const { id, reply, progress: pct } = e.data;
        const p = pending.get(id);
        if (!p) return;
        if (pct !== undefined) { if (p.progress) p.progress(pct); return; }
        pending.delete(id);
        try {
          const out = JSON.parse(reply);
          if (out.error) p.reject(new Error(out.error)); else p.resolve(out);
        } catch (err) { p.reject(err); }
      };
      auditWorker.onerror = (e) => {
        for (const p of pending.values()) p.reject(new Error("the audit worker failed: " + e.message));
        pending.clear();
      };
    }
    return new Promise((resolve, reject) => {
      const id = ++nextCall;
      pending.set(id, { resolve, reject, progress });
      auditWorker.postMessage({ id, name, args });
    });
  }
  let loads = 0; // the latest load wins
  // loadTrace audits one trace file's text; loadTraces several files
  // given together, the node logs of one run (merged as markerwave audit
  // merges a directory of them).
  function loadTrace(name, text) { return auditIn(name, "load", [name, text]); }
  function loadTraces(files) {
    if (files.length === 1) return loadTrace(files[0].name, files[0].text);
    return auditIn(files.length + " node logs", "loadFiles", [JSON.stringify(files)]);
  }
  async function auditIn(name, method, args) {
    showError(null);
    const st = $("loading"), load = ++loads;
    const say = (pct) => { if (load === loads) st.textContent = "Auditing " + name + " against the model: " + pct + "% of the events replayed…"; };
    say(0);
    st.hidden = false;
    try {
      const a = await callWorker(method, args, say);
      if (load !== loads) return;
      audit = a;
      cursor = audit.divergence ? Math.max(1, audit.divergence.Step || audit.events.length) : audit.events.length;
      const sel = $("audit-snap");
      sel.replaceChildren(el("option", { value: "0" }, "every snapshot"),
        ...audit.snap_ids.map((id) => el("option", { value: String(id) }, "snapshot " + id + " only")));
      await renderAudit();
    } catch (e) { if (load === loads) showError(e); } finally { if (load === loads) st.hidden = true; }
  }
  let renders = 0; // the latest render wins
  async function renderAudit() {
    const a = audit, at = cursor, snap = Number($("audit-snap").value), render = ++renders;
    let diagram = "";
    try { diagram = (await callWorker("traceDiagram", [at, snap])).diagram; } catch (e) { showError(e); }
    if (render !== renders || a !== audit) return;
    const banner = $("audit-banner");
    if (a.ok) {
      banner.className = "banner holds";
      banner.replaceChildren(el("strong", {}, a.name + " conforms"), " (" + a.events.length + " events)");
    } else {
      banner.className = "banner fails";
      const d = a.divergence;
      banner.replaceChildren(el("strong", {}, a.name + " violates " + a.property),
        d ? el("span", {}, " — first divergence at event " + d.Step + (d.Line ? " (line " + d.Line + ")" : "") + ", " + d.Action + ": " + d.Property + ": " + d.Detail) : "",
        a.anchor ? el("a", { class: "why-link", href: docsBase + "#" + a.anchor }, " why " + a.property + " should hold") : "");
    }
    $("audit-verdict").textContent = a.verdict;
    $("audit-snapshots").replaceChildren(...a.snapshots.map((s) => el("li", {}, s)));
    $("ev-div").disabled = !a.divergence;
    const div = a.divergence ? a.divergence.Step : -1;
    // A long run lists the events around the cursor only.
    const from = Math.max(0, at - eventsBefore), to = Math.min(a.events.length, at + eventsAfter);
    $("events").replaceChildren(...a.events.slice(from, to).map((e, k) => {
      const i = from + k;
      return el("li", {
        class: (i + 1 === div ? "divergent " : "") + (i < at ? "shown" : "later"), "data-n": String(i + 1),
        onclick: () => jump(i + 1) }, (e.line ? "line " + e.line + ": " : "") + e.label);
    }));
    $("cursor").textContent = "Showing events 1.." + at + " of " + a.events.length + (div > 0 ? "; the first divergence is event " + div : "");
    const box = $("audit-diagram");
    box.innerHTML = diagram;
    box.dataset.view = at + ":" + snap; // what the diagram shows: the cursor and the snapshot
    // Bring the snapshot's cut into view.
    const cut = box.querySelector("svg .cut");
    if (snap && cut) box.scrollLeft = Math.max(0, cut.getBBox().x - 150);
    const cur = $("events").querySelector(`li[data-n="${at}"]`);
    if (cur) cur.scrollIntoView({ block: "nearest" });
  }
  function jump(n) {
    if (!audit) return;
    cursor = Math.max(1, Math.min(audit.events.length, n));
    renderAudit();
  }

  function showVariant() {
    const v = variantInfo();
    $("variant-about").textContent = v ? v.about + (v.drops ? " It drops " + v.drops + " (" + v.rule.TLA + ", " + v.rule.Module + " line " + v.rule.Line + ")." : "") : "";
  }

  function tab(which) {
    const audTab = which === "audit";
    $("panel-model").hidden = audTab;
    $("panel-audit").hidden = !audTab;
    $("tab-model").setAttribute("aria-selected", String(!audTab));
    $("tab-audit").setAttribute("aria-selected", String(audTab));
    // Only the visible panel holds a diagram: the two SVGs share ids.
    if (audTab) { $("diagram").replaceChildren(); if (audit) renderAudit(); }
    else { $("audit-diagram").replaceChildren(); if (current) render(current); }
    writeHash();
  }

  function keys(e) {
    if (e.target.matches("input, textarea, select")) return;
    if (!$("panel-model").hidden) {
      if (/^[1-9]$/.test(e.key)) {
        const b = $("enabled").querySelectorAll("button")[Number(e.key) - 1];
        if (b) { b.click(); e.preventDefault(); }
      } else if (e.key === "ArrowLeft" || e.key === "Backspace") { act("back"); e.preventDefault(); }
      else if (e.key === "r") { $("random").click(); }
    } else if (audit) {
      if (e.key === "ArrowRight") { jump(cursor + 1); e.preventDefault(); }
      else if (e.key === "ArrowLeft") { jump(cursor - 1); e.preventDefault(); }
      else if (e.key === "d" && audit.divergence) { jump(audit.divergence.Step || audit.events.length); }
    }
  }

  // A bundled trace (traces/ in the repository, served with the page).
  async function loadBundled(path) {
    if (!path) return;
    const opt = $("bundled").selectedOptions[0];
    $("bundled-note").textContent = opt ? opt.title : "";
    try {
      const r = await fetch(path);
      if (!r.ok) throw new Error(path + ": " + r.status + " " + r.statusText);
      await loadTrace(path.split("/").pop(), await r.text());
    } catch (e) { showError(e); }
  }

  function readFile(f) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve({ name: f.name, text: String(r.result) });
      r.onerror = () => reject(new Error("could not read " + f.name + ": " + r.error));
      r.readAsText(f);
    });
  }
  // readFiles audits the files chosen or dropped together.
  async function readFiles(list) {
    const fs = Array.from(list || []);
    if (fs.length === 0) return;
    try { await loadTraces(await Promise.all(fs.map(readFile))); } catch (e) { showError(e); }
  }

  function wire() {
    // The scenario and specification lists are in index.html already,
    // rendered from the same lists (web/explorer).
    info = call("scenarios");
    // A scenario opens under its own specification: the one whose
    // actions it needs (the crash scenario's has Crash).
    $("scenario").onchange = () => { custom = null; offerVariants(scenario()); selectVariant(scenario().variant); showVariant(); start(""); };
    // Switching the specification keeps the schedule: the same steps, taken
    // by the variant's actions, as far as they are enabled there.
    $("variant").onchange = () => { showVariant(); start(current ? current.schedule : ""); };
    $("apply-constants").onclick = () => {
      try { custom = JSON.parse($("constants").value); } catch (e) { showError("constants: " + e.message); return; }
      offerVariants(null);
      start("");
    };
    $("back").onclick = () => act("back");
    $("reset").onclick = () => start("");
    $("article").onclick = () => start(runFor(scenario(), $("variant").value));
    $("random").onclick = () => act("random", Number($("seed").value) || 0, Number($("nsteps").value) || 1);
    $("share").onclick = () => {
      const u = $("share-url");
      u.value = location.href; u.hidden = false; u.select();
      if (navigator.clipboard) navigator.clipboard.writeText(location.href).catch(() => {});
    };
    $("download").onclick = () => {
      try {
        const t = call("trace").trace;
        const a = el("a", { href: URL.createObjectURL(new Blob([t], { type: "application/x-ndjson" })), download: "run.jsonl" });
        a.click();
        setTimeout(() => URL.revokeObjectURL(a.href), 1000);
      } catch (e) { showError(e); }
    };
    $("audit-run").onclick = () => {
      try { tab("audit"); loadTrace("this run", call("trace").trace); } catch (e) { showError(e); }
    };
    $("fit").onchange = () => $("diagram").classList.toggle("fit", $("fit").checked);
    $("tab-model").onclick = () => tab("model");
    $("tab-audit").onclick = () => tab("audit");
    $("file").onchange = () => readFiles($("file").files);
    $("bundled").onchange = () => loadBundled($("bundled").value);
    const drop = $("drop");
    drop.ondragover = (e) => { e.preventDefault(); drop.classList.add("over"); };
    drop.ondragleave = () => drop.classList.remove("over");
    drop.ondrop = (e) => { e.preventDefault(); drop.classList.remove("over"); readFiles(e.dataTransfer.files); };
    $("ev-prev").onclick = () => jump(cursor - 1);
    $("ev-next").onclick = () => jump(cursor + 1);
    $("ev-div").onclick = () => audit && audit.divergence && jump(audit.divergence.Step || audit.events.length);
    $("ev-end").onclick = () => audit && jump(audit.events.length);
    $("audit-snap").onchange = () => audit && renderAudit();
    document.addEventListener("keydown", keys);

    started = true;
    for (const b of document.querySelectorAll("#panel-model .actions button")) b.disabled = false;
    $("loading").hidden = true;
    $("scenario-box").open = false; // the select lists them now
    openHash();
    // A scenario's link in the list (#s=crash) opens it.
    addEventListener("hashchange", openHash);
    document.body.dataset.ready = "true";
  }

  // openHash opens the run the location's hash names: a scenario (under
  // the specification the hash names, else the scenario's own) or
  // constants of one's own, the schedule, the tab.
  function openHash() {
    const h = readHash();
    custom = null;
    if (h.k) { try { custom = JSON.parse(unb64(h.k)); } catch (e) { showError("the link's constants: " + e.message); } }
    const sc = allScenarios().find((s) => s.id === h.s);
    if (sc) $("scenario").value = sc.id;
    const fam = custom ? "chandy-lamport" : family(sc || scenario());
    offerVariants(sc || scenario());
    // The link's specification if it is one of the scenario's family,
    // else the scenario's own.
    if (h.v && allVariants().some((v) => v.variant === h.v && v.family === fam)) selectVariant(h.v);
    else if (sc) selectVariant(sc.variant);
    showVariant();
    tab(h.tab === "audit" ? "audit" : "model");
    start(h.run);
  }

  // firstPaint shows, before the WebAssembly has started, the first
  // scenario's initial state as the server rendered it with the same
  // model (web/explorer First, in index.html): the page a browser first
  // paints, or a headless screenshot takes, is the page. Its actions are
  // shown but taken only once the model has started (wire), which then
  // renders the run the location names. A link that names a run (#s=...)
  // waits for the model.
  function firstPaint() {
    if (location.hash.length > 1) return;
    const first = JSON.parse($("first-paint").textContent);
    info = first.catalogue;
    render(first.view);
    for (const b of document.querySelectorAll("#panel-model .actions button")) b.disabled = true;
  }
  try { firstPaint(); } catch (e) { showError(e); }

  const go = new Go();
  addEventListener("markerwave-ready", () => { try { wire(); } catch (e) { showError(e); } }, { once: true });
  WebAssembly.instantiateStreaming(fetch("main.wasm"), go.importObject)
    .then((r) => go.run(r.instance))
    .catch((e) => { $("loading").hidden = true; showError("could not start the model: " + e); });
})();
