// The explorer page's audit worker: a second instance of the Go model
// (main.wasm, see web/wasm/main.go) in a Web Worker, so that auditing a
// long trace (conformance.Audit, seconds for 100k events) never freezes
// the page. The page posts {id, name, args} (a call of
// globalThis.markerwave: load, loadFiles or traceDiagram); the worker answers
// {id, reply} with the call's JSON reply, and {id, progress} with the
// percentage of events replayed while a load runs.
"use strict";
importScripts("wasm_exec.js");

const ready = new Promise((resolve, reject) => {
  addEventListener("markerwave-ready", resolve, { once: true });
  const go = new Go();
  WebAssembly.instantiateStreaming(fetch("main.wasm"), go.importObject)
    .then((r) => go.run(r.instance))
    .catch(reject);
});

onmessage = (e) => {
  const { id, name, args } = e.data;
  ready.then(() => {
    const a = name === "load" || name === "loadFiles" ? [...args, (pct) => postMessage({ id, progress: pct })] : args;
    postMessage({ id, reply: globalThis.markerwave[name](...a) });
  }, (err) => postMessage({ id, reply: JSON.stringify({ error: "could not start the model in the audit worker: " + err }) }));
};
