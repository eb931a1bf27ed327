// Package explorer is the explorer page's logic on the Go model: what the
// WebAssembly entry point (web/wasm) calls, kept free of syscall/js so it
// is tested on the host.
//
// To explore a model, in order:
//
//  1. Scenarios lists the ready-made scenarios (the TLC models of tla/,
//     read by model/tlcmodel from tla.Models, and the P1/P2 puzzle's
//     constants), each with the specification it opens under, and
//     Variants the specifications the page offers; PropertyDocs the
//     properties the page shows, with what each says.
//     NewCatalogue gathers them as the page's script reads them, and
//     First adds the first scenario's initial View: what the server
//     renders into index.html, so the page shows a state before its
//     WebAssembly has started.
//  2. NewScenario (or NewSession, for Constants of one's own within the
//     limits Limits describes) starts a Session in the initial state.
//  3. Take a step by its Token (Enabled lists what model.Next enables),
//     Replay a schedule, Random steps from a seed, or Back.
//  4. View renders the state, the snapshots, the spec's properties and
//     the space-time diagram; Trace and TraceJSONL give the run in the
//     trace format. Each property carries its section of
//     docs/properties.md (Anchor, linked at DocsBase) and Why: the steps
//     of the run that make it hold or fail, read from the model's states
//     (why.go).
//
// The barrier snapshots of a dataflow run the same way, on model/barrier
// (barrier.Next): BarrierScenarios lists the barrier scenarios (TLC
// models of tla/BarrierSnapshots.tla and tla/BarrierAdaptive.tla, each
// with a scripted run, among them the adaptive switch under
// backpressure) and BarrierVariants their specifications;
// NewBarrierScenario starts a BarrierSession, stepped by BarrierToken, and
// its BarrierView shows each node and edge, the snapshot, the properties
// and the barrier diagram (export.BarrierDiagram). Under a broken
// specification each failing property names its cause: the first step
// the positive specification would not take so (barrier_why.go). Start
// starts either kind of scenario as a Stepper, what web/wasm holds.
//
// To audit a trace file: Load reads and audits it (conformance.Audit),
// Loaded.View renders the verdict, and Loaded.Diagram draws the run up to
// an event or one snapshot's neighbourhood.
//
// Every decision is the model's or the audit's: the package only turns
// their values into what the page shows.
package explorer
