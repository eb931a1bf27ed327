// Package conformance checks that runs of the implementation (impl/core,
// impl/runtime) are runs of the spec, tla/ChandyLamport.tla, using the Go
// model (model/) as the spec's executable form.
//
// Two independent verdicts on every run:
//
//   - Replay steps the model through a trace's events: each must be
//     enabled, carry the model's message and leave its process in the
//     model's state; the spec invariants (Invariants) must hold after each
//     step, and a drained run must end with every initiated snapshot
//     complete. It reports the first divergence.
//   - CheckRun checks every completed snapshot from the events and the
//     implementation's recorded states alone, not the model's ghost
//     variables: consistent cut, exact channel state, conservation, the
//     Chandy-Lamport theorem executed constructively (reorder the run into
//     pre- and post-recording steps and replay both) and the stable
//     property catalogue.
//
// Replay runs both; markerwave audit prints its Report. A third, for an
// application treated as opaque state: CheckAppInvariants rebuilds each
// process's application state from the events and checks the
// invariants the application declares on every recorded snapshot. The tests drive
// real core nodes over a hand-scheduled network (impl/core/coretest), and
// their Scenarios build the article's runs, committed under traces/.
//
// The tests drive the implementation against the model: TestLockstep (a
// rapid state machine over core nodes, compared with the model after
// every step), TestRuntimeMemory and TestRuntimeTCP (goroutine clusters,
// logs merged by vector clocks and replayed), TestTraces (every file in
// traces/). A lockstep failure names the first divergent step and, for a
// state mismatch, each differing model variable with the property it bears
// on; the implementation then drains alone (every channel delivered FIFO
// while its head is the model's, a refused frame dropped and its channel
// blocked), and the failure names the property that drained run breaks
// (Replay and CheckRun, as markerwave audit finds it). rapid shrinks the
// schedule, and the minimal failing run is written, marked drained with
// the nodes' recorded snapshots, as a trace under FailDir
// ($MARKERWAVE_FAIL_DIR, else testdata/failures): markerwave audit on it
// names the same property. conformance/mutation checks all of this
// against deliberately broken copies of impl/core.
// The per-step comparison covers proc, chan, recorded, recProc, recChan,
// recMsgs, the ghost counters nSent and Len(got), and the ghost cut:
// every recorded process's cut seqs (its local snapshot's NextSend and
// NextRecv, what core.Restore resumes from) against cutSent and
// Len(cutGot), bearing on ConsistentCut. A trace's recorded lines carry
// the cut seqs too (spec.ChanCut: per channel, sent and got), so a
// failure there alone is seen by audit of the drained run as well: Replay
// compares them with cutSent and Len(cutGot) when the model completes the
// snapshot, CheckRun with the events, and both name ConsistentCut.
//
// Soak runs use rapid's flags, e.g.
//
//	go test ./conformance -run TestLockstep -rapid.checks=20000 -rapid.steps=200
//
// and -rapid.seed / -rapid.failfile to reproduce a failure.
//
// TestRuntimeMemory and TestRuntimeTCP draw every random choice (each
// workload, each transport's delays) from seeds derived from one root
// seed: $MARKERWAVE_SEED, or the -markerwave.seed flag (which wins), else
// the clock. The root seed is logged, and printed on failure with the
// command that replays it:
//
//	MARKERWAVE_SEED=12345 go test ./conformance -count=1 -run '^TestRuntimeMemory$'
//	go test ./conformance -count=1 -run '^TestRuntimeMemory$' -args -markerwave.seed=12345
//
// That replays the workloads and delays, not the goroutine scheduling, so
// a failure that depends on an interleaving may need a few runs.
package conformance
