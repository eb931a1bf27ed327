package conformance

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// A run with restores (spec.Restore) is a chain of incarnations: the
// first starts from the initial state, each later one from the recorded
// state of a snapshot its predecessor completed (tla/ChandyLamportFaults.tla,
// Recover and RestoreFrom, lines 176-193). Its audit replays each
// incarnation against the model from the state it was restored from, and
// keeps a ledger of transfers over the whole history.
//
// An incarnation's state is reached from the initial state by its
// effective history: for the first, its own events; for a later one,
// restored from snapshot s, the application steps of its predecessor's
// effective history that precede s's cut (each process's steps before it
// recorded s), then its own events. By the Chandy-Lamport theorem those
// pre-recording steps, replayed from the initial state, reach exactly s's
// recorded state, channels included (TestRuntimeRestore checks it of the
// runtime); so replaying the effective history through the model checks
// that the incarnation starts in a state reachable from the initial one
// (RecoveryReachable), that each channel's recorded messages are delivered
// first (they are its head), and every invariant of its own snapshots.

// replayHistory is Replay of a trace with restores: replay, which the
// dispatcher gives it, replays each incarnation's effective history.
func replayHistory(tr spec.Trace, opts Options, replay func(spec.Trace, Options) Report) Report {
	h := &historyReplay{tr: tr, opts: opts, replay: replay, segs: tr.Segments()}
	h.rep.Incarnations = len(h.segs)
	if err := snapshotsApart(h.segs); err != nil {
		h.rep.Err = err
		return h.rep
	}
	for k := range h.segs {
		if !h.incarnation(k) {
			break
		}
	}
	if h.rep.Err != nil {
		return h.rep
	}
	// The ledger's findings first: they are about the whole history, and
	// the earliest thing wrong in it.
	h.rep.Violations = append(CheckHistory(tr), h.rep.Violations...)
	return h.rep
}

// historyReplay is a history being replayed: the current incarnation's
// effective history eff (eff[i] is tr.Events[idx[i]]) and the report.
type historyReplay struct {
	tr     spec.Trace
	opts   Options
	replay func(spec.Trace, Options) Report
	segs   [][]spec.Event
	eff    []spec.Event
	idx    []int
	rep    Report
}

// incarnation replays incarnation k: checks its restore (k > 0), extends
// the effective history with its events and replays it. It reports
// whether to go on.
func (h *historyReplay) incarnation(k int) bool {
	start := 0
	if k > 0 {
		var d *Divergence
		if start, d = h.restore(k); d != nil {
			h.rep.Divergence = d
			return false
		}
	}
	seg := h.segs[k]
	for i := range seg {
		h.eff = append(h.eff, seg[i])
		h.idx = append(h.idx, restoreAt(h.tr, k)+i)
	}
	h.eff = renumber(h.eff)
	last := k == len(h.segs)-1
	r := h.replay(segmentTrace(h.tr, h.eff, last), segmentOptions(h.opts, h.idx, last))
	if r.Err != nil {
		h.rep.Err = r.Err
		return false
	}
	if !h.merge(k, r, start) {
		return false
	}
	if h.opts.Progress != nil {
		h.opts.Progress(restoreAt(h.tr, k)+len(seg), len(h.tr.Events))
	}
	return true
}

// restore checks the restore that starts incarnation k (not from an
// aborted snapshot, from a restorable one, to its recorded states) and
// cuts the effective history to the steps before the snapshot's cut,
// whose length it returns.
func (h *historyReplay) restore(k int) (int, *Divergence) {
	r := h.tr.Restores[k-1]
	line := lineOf(h.opts.RestoreLines, k-1)
	d := checkNotAborted(h.segs[k-1], r, line)
	if d == nil {
		d = checkRestorable(h.tr.Header.Topology, h.segs[k-1], r, line)
	}
	if d != nil {
		d.File = fileAt(h.opts.RestoreFiles, k-1)
		return 0, d
	}
	prefix, at := preRecording(h.eff, r.Snap)
	if d := checkRestoredStates(h.tr, prefix, h.segs[k], r, h.opts); d != nil {
		return 0, d
	}
	pidx := make([]int, len(at))
	for i, j := range at {
		pidx[i] = h.idx[j]
	}
	h.eff, h.idx = prefix, pidx
	return len(prefix), nil
}

// merge adds incarnation k's replay r (its first start steps replayed
// before) to the report; it reports whether r conforms so far.
func (h *historyReplay) merge(k int, r Report, start int) bool {
	h.rep.Steps += max(r.Steps-start, 0)
	h.rep.Snapshots += r.Snapshots
	for _, a := range r.Aborted {
		a.Incarnation = k + 1
		h.rep.Aborted = append(h.rep.Aborted, a)
	}
	for _, x := range r.Incomplete {
		x.Lacks = fmt.Sprintf("incarnation %d: %s", k+1, x.Lacks)
		h.rep.Incomplete = append(h.rep.Incomplete, x)
	}
	for _, v := range r.Violations {
		v.Detail = fmt.Sprintf("incarnation %d: %s", k+1, v.Detail)
		h.rep.Violations = append(h.rep.Violations, v)
	}
	d := r.Divergence
	if d == nil {
		return true
	}
	if d.Step > 0 {
		d.Step = h.idx[d.Step-1] + 1
	}
	if k > 0 {
		d.Detail += fmt.Sprintf(" (incarnation %d, restored from snapshot %d: every process starts in its recorded state and each channel's recorded messages are delivered first)", k+1, h.tr.Restores[k-1].Snap)
	}
	h.rep.Divergence = d
	return false
}

// snapshotsApart checks that no snapshot id is initiated in two
// incarnations: the header's initiators and the recorded lines name
// snapshots by id across the whole history, so a restored run numbers
// its snapshots apart from those of the runs before (RunProcess picks
// them above the restored snapshot's run).
func snapshotsApart(segs [][]spec.Event) error {
	in := map[spec.SnapID]int{}
	for k, seg := range segs {
		for _, e := range seg {
			if e.Action != spec.Initiate {
				continue
			}
			if j, ok := in[e.Snap]; ok && j != k {
				return fmt.Errorf("snapshot %d is initiated in incarnations %d and %d: a history numbers the snapshots of each incarnation apart", e.Snap, j+1, k+1)
			}
			in[e.Snap] = k
		}
	}
	return nil
}

// restoreAt is the index of incarnation k's first event in tr.Events.
func restoreAt(tr spec.Trace, k int) int {
	if k == 0 {
		return 0
	}
	return tr.Restores[k-1].At
}

// segmentTrace is the trace Replay checks for one incarnation: its
// effective history, the recorded snapshots it initiates, and the drained
// claim only for the last incarnation. The budget is each process's sends
// in it.
func segmentTrace(tr spec.Trace, eff []spec.Event, last bool) spec.Trace {
	h := tr.Header
	h.Budget = nil
	h.Drained = h.Drained && last
	own := map[spec.SnapID]bool{}
	for _, e := range eff {
		if e.Action == spec.Initiate {
			own[e.Snap] = true
		}
	}
	var rec []spec.RecordedSnapshot
	for _, r := range tr.Recorded {
		if own[r.Snap] {
			rec = append(rec, r)
		}
	}
	return spec.Trace{Header: h, Events: eff, Recorded: rec}
}

// segmentOptions are opts for one incarnation's effective history: the
// file lines of its events (idx maps them to the trace's), and the drained
// claim only for the last incarnation. Recorded lines are not mapped.
func segmentOptions(opts Options, idx []int, last bool) Options {
	o := Options{Drained: opts.Drained && last}
	for _, i := range idx {
		o.Lines = append(o.Lines, lineOf(opts.Lines, i))
		if opts.Files != nil {
			o.Files = append(o.Files, fileAt(opts.Files, i))
		}
	}
	return o
}

// renumber gives each process's events in evs the seqs 1, 2, ... and
// drops their clocks (the effective history joins incarnations, whose
// clocks start afresh).
func renumber(evs []spec.Event) []spec.Event {
	n := map[spec.ProcID]uint64{}
	out := make([]spec.Event, len(evs))
	for i, e := range evs {
		n[e.Proc]++
		e.Seq, e.VC = n[e.Proc], nil
		out[i] = e
	}
	return out
}

// preRecording is the application events of evs that precede snapshot
// s's cut (each process's events before it recorded s), in order, and
// their indices in evs.
func preRecording(evs []spec.Event, s spec.SnapID) (out []spec.Event, at []int) {
	recorded := map[spec.ProcID]bool{}
	for i, e := range evs {
		if (e.Action == spec.Initiate || e.Action == spec.RecvMarker) && e.Snap == s {
			recorded[e.Proc] = true
		}
		if !recorded[e.Proc] && (e.Action == spec.SendApp || e.Action == spec.RecvApp) {
			out = append(out, e)
			at = append(at, i)
		}
	}
	return out, at
}

// checkRestoredStates: every process of the new incarnation (seg) starts
// in the state it recorded for snapshot r.Snap, its last state in prefix
// (its pre-recording steps), or its initial state if it has none there
// (RecoveryReachable). opts gives the trace's event lines.
func checkRestoredStates(tr spec.Trace, prefix, seg []spec.Event, r spec.Restore, opts Options) *Divergence {
	want := map[spec.ProcID]spec.LocalState{}
	for _, p := range tr.Header.Topology.Procs {
		want[p] = spec.LocalState{Bal: tr.Header.InitBal[p]}
	}
	for _, e := range prefix {
		want[e.Proc] = e.After
	}
	checked := map[spec.ProcID]bool{}
	for i, e := range seg {
		p := e.Proc
		if checked[p] {
			continue
		}
		checked[p] = true
		got, _ := stateBefore(p, seg[i:i+1])
		if got == want[p] {
			continue
		}
		d := &Divergence{Step: r.At + i + 1, Action: e.String(), Property: spec.PropRecoveryReachable,
			Detail:   fmt.Sprintf("%s resumes incarnation %d in another state than it recorded for snapshot %d: the restored state is not the snapshot's, so it is not shown reachable from the initial state", string(p), r.Incarnation, r.Snap),
			Expected: fmtLocal(p, want[p]), Reported: fmtLocal(p, got)}
		d.placeAt(r.At+i, opts)
		return d
	}
	return nil
}

// stateBefore is p's state before its first event in evs (from the
// event's After and its effect), and whether p has one. Only application
// steps change a process's state.
func stateBefore(p spec.ProcID, evs []spec.Event) (spec.LocalState, bool) {
	for _, e := range evs {
		if e.Proc != p {
			continue
		}
		l := e.After
		switch e.Action {
		case spec.SendApp:
			l.Bal, l.Sent = l.Bal+e.Amount, l.Sent-1
		case spec.RecvApp:
			l.Bal, l.Rcvd = l.Bal-e.Amount, l.Rcvd-1
		}
		return l, true
	}
	return spec.LocalState{}, false
}

// checkNotAborted is RecoveredFromComplete (line 280) of restore r: the
// snapshot restored was not aborted in the incarnation before (seg).
func checkNotAborted(seg []spec.Event, r spec.Restore, line int) *Divergence {
	for _, e := range seg {
		if e.Action == spec.Abort && e.Snap == r.Snap {
			return &Divergence{Step: r.At + 1, Line: line, Action: restoreLabel(r), Property: spec.PropRecoveredFromComplete,
				Detail:   fmt.Sprintf("incarnation %d is restored from snapshot %d, but %s aborted it in incarnation %d (%s suspected): an aborted snapshot is never used for recovery", r.Incarnation, r.Snap, string(e.Proc), r.Incarnation-1, string(e.Peer)),
				Expected: "a snapshot complete in incarnation " + fmt.Sprint(r.Incarnation-1), Reported: fmt.Sprintf("restored from snapshot %d, aborted", r.Snap)}
		}
	}
	return nil
}
