package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// Replaying a run with failures (tla/ChandyLamportFaults.tla, model/faults.go;
// line numbers refer to that module).
//
// The spec's failure detector and aborts are global variables
// (suspected, abortedBy); a real run's are per node: each node suspects,
// withdraws suspicions and aborts on its own, at its own time. The replay
// reads the spec's guards at the node that takes the step: every step of
// node p is taken by the model in the global state with suspected and
// abortedBy replaced by p's view (the peers p suspects, the snapshots p
// aborted and why). Those two variables are only ever read by guards
// (SendAppF line 66, RecvMarkerF line 85, DropMarker line 94, Detect and
// FalseSuspect lines 112 and 121, Abort lines 133-135), never by the
// algorithm's variables, so the views change which steps are enabled and
// nothing else. The invariants are checked on the global state, whose
// suspected is every process some node suspected (the spec's suspicions
// are permanent) and whose abortedBy[s] is the cause of s's first abort.
//
// A crash is not an event: a killed node's log simply ends. The crash
// rule: a process that some node still suspects at the end of the run
// (its last Suspect(q) not followed by an Unsuspect(q)) crashed just
// after its last step (at the start if it took none); the replay takes
// the model's Crash(q) (lines 101-107) there. To the logs a crashed
// process and a live one that takes no more steps and stays suspected
// are the same; a live process would be heard from again. A suspicion of
// a crashed process is Detect(q) (lines 110-115), of a live one
// FalseSuspect(q) (lines 118-124): a real detector can suspect a live
// process. MaxCrash is the number of crashes the rule finds, and
// FalseSuspicion is TRUE.
//
// Unsuspect(q) is no action of the spec: it withdraws q from the node's
// view only (the node sends q transfers again); the node must suspect q.

// crashes applies the crash rule to evs: it maps an event index to the
// processes that crash just before it (len(evs): at the end).
func crashes(evs []spec.Event) map[int][]spec.ProcID {
	last := map[spec.ProcID]int{}      // each process's last step
	holds := map[[2]spec.ProcID]bool{} // {p, q}: p suspects q at the end
	for i, e := range evs {
		last[e.Proc] = i
		switch e.Action {
		case spec.Suspect:
			holds[[2]spec.ProcID{e.Proc, e.Peer}] = true
		case spec.Unsuspect:
			delete(holds, [2]spec.ProcID{e.Proc, e.Peer})
		}
	}
	crashed := map[spec.ProcID]bool{}
	for k := range holds {
		crashed[k[1]] = true
	}
	out := map[int][]spec.ProcID{}
	for q := range crashed {
		at := 0
		if i, ok := last[q]; ok {
			at = i + 1
		}
		out[at] = append(out[at], q)
	}
	for _, qs := range out {
		slices.Sort(qs)
	}
	return out
}

// faultReplay is the state of a replay with failures: the model's global
// state and every node's view of suspected and abortedBy.
type faultReplay struct {
	cfg     *model.Config
	st      *model.State
	crashAt map[int][]spec.ProcID
	susp    map[spec.ProcID]model.ProcSet
	aborted map[spec.ProcID][]model.ProcSet
}

// faultReplayInvariants are the invariants a replay with failures checks
// after every step, on the global state: those of the failure-free spec
// that hold for every snapshot complete, and the faults module's safety
// properties that hold without recovery (lines 245-276).
var faultReplayInvariants = []spec.Property{
	spec.PropFaultTypeOK, spec.PropConsistentCut, spec.PropExactChannelState, spec.PropConservation,
	spec.PropMoneyConserved, spec.PropExactlyOnce, spec.PropTheoremUnlessAborted, spec.PropAbortSound,
}

// faultConfig is ConfigFromTrace's model with the faults variant and the
// crashes the rule finds.
func faultConfig(tr spec.Trace, crashAt map[int][]spec.ProcID) (*model.Config, error) {
	k, err := constantsFromTrace(tr)
	if err != nil {
		return nil, err
	}
	for _, qs := range crashAt {
		k.MaxCrash += len(qs)
	}
	k.FalseSuspicion = true
	return model.NewConfig(k, model.VariantFaults, faultReplayInvariants, nil)
}

// replayFaults is Replay of a trace with fault events.
func replayFaults(tr spec.Trace, opts Options) Report {
	var r Report
	crashAt := crashes(tr.Events)
	cfg, err := faultConfig(tr, crashAt)
	if err != nil {
		r.Err = err
		return r
	}
	f := &faultReplay{cfg: cfg, st: model.Init(cfg), crashAt: crashAt, susp: map[spec.ProcID]model.ProcSet{}, aborted: map[spec.ProcID][]model.ProcSet{}}
	for _, p := range cfg.Topo.Procs {
		f.aborted[p] = make([]model.ProcSet, cfg.NumSnaps())
	}
	rep := newReported(tr, opts)
	r.Divergence = f.invariants()
	r.replayEvents(tr, opts, func(i int, e spec.Event) *Divergence {
		before := f.st
		d := f.step(i, e)
		if d == nil {
			d = f.invariants()
		}
		if d == nil {
			d = rep.check(cfg, before, f.st)
		}
		return d
	})
	if r.Divergence == nil {
		r.Divergence = f.end(tr, opts)
	}
	r.finish(cfg, f.st, tr, opts, rep.rec, rep.cuts)
	return r
}

// end is the replay's last steps once every event replayed: the crashes
// the crash rule puts at the end, the reported snapshots against the
// aborts, the aborts the spec's fairness takes (implicitAborts), then, in
// a drained run, SnapshotsEnd.
func (f *faultReplay) end(tr spec.Trace, opts Options) *Divergence {
	if d := f.crash(len(tr.Events)); d != nil {
		return d
	}
	if d := f.reportedAborted(tr, opts); d != nil {
		return d
	}
	f.implicitAborts()
	if opts.Drained || tr.Header.Drained {
		return f.checkEnded()
	}
	return nil
}

// view is the global state with suspected and abortedBy as node p sees
// them.
func (f *faultReplay) view(p spec.ProcID) *model.State {
	v := *f.st
	v.Suspected, v.AbortedBy = f.susp[p], f.aborted[p]
	return &v
}

// step takes event i, e: the model's Crash first where the crash rule
// puts one, then e's action in e.Proc's view; the global state keeps the
// successor's algorithm variables.
func (f *faultReplay) step(i int, e spec.Event) *Divergence {
	cfg := f.cfg
	if err := e.Validate(cfg.Topo); err != nil {
		return &Divergence{Property: spec.CheckWellFormed, Detail: err.Error()}
	}
	if d := f.crash(i); d != nil {
		return d
	}
	v := f.view(e.Proc)
	n, d := f.action(v, e)
	if d == nil {
		d = checkAfter(cfg, n, e)
	}
	if d != nil {
		return d
	}
	g := *n
	g.Suspected, g.AbortedBy = f.st.Suspected, f.st.AbortedBy
	f.st = &g
	return nil
}

// action takes e's action in view v: an algorithm step the faults
// model must enable (its F action: lines 61-97 of
// tla/ChandyLamportFaults.tla), then the step as the model takes it; or
// a step of the failure handling.
func (f *faultReplay) action(v *model.State, e spec.Event) (*model.State, *Divergence) {
	switch e.Action {
	case spec.SendApp, spec.RecvApp, spec.Initiate, spec.RecvMarker:
		if d := f.enabledF(v, e); d != nil {
			return nil, d
		}
		return algorithmStep(f.cfg, v, e)
	case spec.DropMarker:
		return f.dropMarker(v, e)
	case spec.Suspect:
		return f.suspect(v, e)
	case spec.Unsuspect:
		return f.unsuspect(v, e)
	case spec.Abort:
		return f.abort(v, e)
	}
	return nil, &Divergence{Property: spec.CheckWellFormed, Detail: fmt.Sprintf("%s is no action of the spec", e.Action)}
}

// enabledF checks that the faults model enables e's algorithm step in
// view v (SendAppF, RecvAppF, InitiateF, RecvMarkerF).
func (f *faultReplay) enabledF(v *model.State, e spec.Event) *Divergence {
	cfg, p := f.cfg, e.Proc
	var err error
	var expected, reported string
	switch e.Action {
	case spec.SendApp:
		_, err = model.SendAppF(cfg, v, e.From, e.To, e.Amount)
		expected, reported = suspectedBy(cfg, p, v.Suspected), fmt.Sprintf("%s sent %d to %s", string(e.From), e.Amount, string(e.To))
	case spec.RecvApp:
		_, err = model.RecvAppF(cfg, v, e.From, e.To)
		reported = fmt.Sprintf("%s received %d#%d", string(e.To), e.Amount, e.Msg)
	case spec.Initiate:
		if cfg.SnapIndex(e.Snap) >= 0 {
			_, err = model.InitiateF(cfg, v, e.Snap)
		}
	case spec.RecvMarker:
		_, err = model.RecvMarkerF(cfg, v, e.From, e.To)
		expected, reported = abortedAt(cfg, p, v.AbortedBy), fmt.Sprintf("%s received Marker(%d)", string(e.To), e.Snap)
	}
	if err != nil {
		return notEnabled(err, expected, reported)
	}
	return nil
}

// crash takes the model's Crash(q) for every q the crash rule crashes
// just before event i.
func (f *faultReplay) crash(i int) *Divergence {
	for _, q := range f.crashAt[i] {
		n, err := model.Crash(f.cfg, f.st, q)
		if err != nil {
			return notEnabled(err, "", "")
		}
		f.st = n
	}
	return nil
}

// dropMarker takes DropMarker(p, q) (lines 90-97) in q's view; the marker
// dropped is the event's.
func (f *faultReplay) dropMarker(v *model.State, e spec.Event) (*model.State, *Divergence) {
	cfg := f.cfg
	n, err := model.DropMarker(cfg, v, e.From, e.To)
	if err != nil {
		return nil, notEnabled(err, abortedAt(cfg, e.To, v.AbortedBy), fmt.Sprintf("%s dropped Marker(%d)", string(e.To), e.Snap))
	}
	if s := cfg.Snap[v.Chan[cfg.ChanIndex(e.From, e.To)][0].Snap]; s != e.Snap {
		return nil, &Divergence{Property: spec.CheckMessage, Detail: fmt.Sprintf("the head of %s is a marker of another snapshot", e.Chan()),
			Expected: fmt.Sprintf("Marker(%d)", s), Reported: fmt.Sprintf("Marker(%d)", e.Snap)}
	}
	return n, nil
}

// suspect takes Suspect(q) at p: Detect(q) if q crashed, else
// FalseSuspect(q), in p's view; q joins p's view and the global
// suspected.
func (f *faultReplay) suspect(v *model.State, e spec.Event) (*model.State, *Divergence) {
	cfg := f.cfg
	q := cfg.Topo.ProcIndex(e.Peer)
	act := model.FalseSuspect
	if !f.st.Alive.Has(q) {
		act = model.Detect
	}
	n, err := act(cfg, v, e.Peer)
	if err != nil {
		return nil, notEnabled(err, suspectedBy(cfg, e.Proc, v.Suspected), fmt.Sprintf("%s suspects %s", string(e.Proc), string(e.Peer)))
	}
	f.susp[e.Proc] = f.susp[e.Proc].With(q)
	f.st = withSuspected(f.st, f.st.Suspected.With(q))
	return n, nil
}

// unsuspect takes Unsuspect(q) at p: q leaves p's view. The spec has no
// such action; p must suspect q (and q is live by the crash rule).
func (f *faultReplay) unsuspect(v *model.State, e spec.Event) (*model.State, *Divergence) {
	cfg := f.cfg
	q := cfg.Topo.ProcIndex(e.Peer)
	if !v.Suspected.Has(q) {
		return nil, &Divergence{Property: spec.CheckEnabled, Detail: fmt.Sprintf("%s withdraws a suspicion of %s it does not hold", string(e.Proc), string(e.Peer)),
			Expected: suspectedBy(cfg, e.Proc, v.Suspected), Reported: fmt.Sprintf("Unsuspect(%s) at %s", string(e.Peer), string(e.Proc))}
	}
	f.susp[e.Proc] = f.susp[e.Proc].Without(q)
	return v, nil
}

// abort takes Abort(s, q) (lines 132-138) in p's view: s is pending, q is
// suspected by p and s waits for q (WaitsFor, line 50).
func (f *faultReplay) abort(v *model.State, e spec.Event) (*model.State, *Divergence) {
	cfg := f.cfg
	n, err := model.Abort(cfg, v, e.Snap, e.Peer)
	if err != nil {
		return nil, notEnabled(err, suspectedBy(cfg, e.Proc, v.Suspected), fmt.Sprintf("%s aborts snapshot %d for %s", string(e.Proc), e.Snap, string(e.Peer)))
	}
	s, q := cfg.SnapIndex(e.Snap), model.ProcSet{}.With(cfg.Topo.ProcIndex(e.Peer))
	f.aborted[e.Proc] = slices.Clone(f.aborted[e.Proc])
	f.aborted[e.Proc][s] = q
	if !model.Aborted(f.st, s) {
		g := *f.st
		g.AbortedBy = slices.Clone(f.st.AbortedBy)
		g.AbortedBy[s] = q
		f.st = &g
	}
	return n, nil
}

func withSuspected(st *model.State, s model.ProcSet) *model.State {
	n := *st
	n.Suspected = s
	return &n
}

// invariants evaluates faultReplayInvariants on the global state.
func (f *faultReplay) invariants() *Divergence {
	for _, name := range faultReplayInvariants {
		fn, _ := model.InvariantByName(name)
		if !fn(f.cfg, f.st) {
			return &Divergence{Property: name, Detail: explainFault(f.cfg, f.st, name)}
		}
	}
	return nil
}

// explainFault says why invariant name fails.
func explainFault(cfg *model.Config, st *model.State, name spec.Property) string {
	switch name {
	case spec.PropAbortSound:
		for s, id := range cfg.Snap {
			if model.Aborted(st, s) && model.Complete(cfg, st, s) {
				return fmt.Sprintf("snapshot %d completes after it was aborted", id)
			}
		}
	case spec.PropMoneyConserved:
		return fmt.Sprintf("the system holds %d, not %d", AppState(cfg, st).Total(), cfg.TotalMoney())
	case spec.PropConservation, spec.PropConsistentCut, spec.PropExactChannelState:
		return explainInvariant(cfg, st, name)
	}
	return string(name) + " fails"
}

// reportedAborted is AbortSound (line 276) as the implementation reports
// it: no snapshot aborted at some node is reported complete (a recorded
// snapshot in the trace).
func (f *faultReplay) reportedAborted(tr spec.Trace, opts Options) *Divergence {
	for i, rs := range tr.Recorded {
		s := f.cfg.SnapIndex(rs.Snap)
		if s < 0 || !model.Aborted(f.st, s) {
			continue
		}
		by := f.cfg.Topo.Procs[slices.IndexFunc(f.cfg.Topo.Procs, func(p spec.ProcID) bool { return f.st.AbortedBy[s].Has(f.cfg.Topo.ProcIndex(p)) })]
		d := &Divergence{Property: spec.PropAbortSound, Detail: fmt.Sprintf("snapshot %d is reported complete, but it was aborted (%s suspected)", rs.Snap, string(by)),
			Expected: fmt.Sprintf("snapshot %d aborted", rs.Snap), Reported: fmt.Sprintf("snapshot %d complete", rs.Snap)}
		if i < len(opts.RecordedLines) {
			d.Line = opts.RecordedLines[i]
		}
		return d
	}
	return nil
}

// checkEnded is SnapshotsEnd (line 287) at the end of a drained run:
// every channel into a live process is empty, and every initiated
// snapshot is complete or aborted (by a node, or implicitly:
// implicitAborts, taken before). Messages to a crashed process stay in
// their channels (the spec's crash-stop).
func (f *faultReplay) checkEnded() *Divergence {
	cfg, st := f.cfg, f.st
	var busy []string
	for c, q := range st.Chan {
		if len(q) > 0 && st.Alive.Has(cfg.Topo.ProcIndex(cfg.Topo.Chans[c].To)) {
			busy = append(busy, fmt.Sprintf("%s = %s", cfg.Topo.Chans[c], fmtChan(cfg, q)))
		}
	}
	if len(busy) > 0 {
		return &Divergence{Property: spec.PropSnapshotsEnd, Detail: "the trace claims a drained run, but the model's channels into live processes still hold messages",
			Expected: strings.Join(busy, "; "), Reported: "drained: every channel into a live process empty"}
	}
	if s := model.SnapshotEnded(cfg, st); s >= 0 {
		return &Divergence{Property: spec.PropSnapshotsEnd, Detail: fmt.Sprintf("snapshot %d was initiated but is neither complete nor aborted at the end of the drained run", cfg.Snap[s])}
	}
	return nil
}

// implicitAborts takes, at the end of a run, the spec's Abort(s, q)
// (lines 132-138) for every snapshot s still pending that no live node
// holds a part of: each live process either finished its part (and may
// have handed it out: a released part is no longer the node's to abort)
// or never recorded s. Only the spec's global Abort is left then, enabled
// when s waits for a suspected q (WaitsFor, line 50), and weak fairness
// (line 228) takes it; the nodes log no event for it. A node process
// aborts such a snapshot too, as its store sees it (its part saved, the
// suspected q's missing: impl/runtime's abortWaiting), with no event;
// the report says both in the same words (Report.Aborted), so a
// snapshot whose initiator crashed after its markers went out is
// aborted, not incomplete. Crashes are taken before (the crash rule).
func (f *faultReplay) implicitAborts() {
	cfg := f.cfg
	for s := range cfg.Snap {
		if !model.Pending(cfg, f.st, s) {
			continue
		}
		held := false
		for p := range cfg.Topo.Procs {
			if f.st.Alive.Has(p) && f.st.Recorded[s].Has(p) && !model.Finished(cfg, f.st, s, p) {
				held = true
			}
		}
		if held {
			continue
		}
		for _, q := range cfg.Topo.Procs {
			if n, err := model.Abort(cfg, f.st, cfg.Snap[s], q); err == nil {
				f.st = n
				break
			}
		}
	}
}

// suspectedBy renders the peers p suspects.
func suspectedBy(cfg *model.Config, p spec.ProcID, s model.ProcSet) string {
	var out []string
	for i, q := range cfg.Topo.Procs {
		if s.Has(i) {
			out = append(out, string(q))
		}
	}
	return fmt.Sprintf("%s suspects {%s}", string(p), strings.Join(out, ", "))
}

// abortedAt renders the snapshots p aborted.
func abortedAt(cfg *model.Config, p spec.ProcID, ab []model.ProcSet) string {
	var out []string
	for s, a := range ab {
		if !a.Empty() {
			out = append(out, fmt.Sprint(cfg.Snap[s]))
		}
	}
	return fmt.Sprintf("%s aborted {%s}", string(p), strings.Join(out, ", "))
}
