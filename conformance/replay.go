package conformance

import (
	"fmt"
	"strings"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// Options tune Replay. The recorded snapshots and the drained claim come
// from the trace (spec.Trace.Recorded, spec.Header.Drained).
type Options struct {
	// Drained claims the run ended drained even if the header does not.
	Drained bool
	// Lines[i] is the trace file line of event i (0-based), for reports.
	Lines []int
	// Files[i] is the file of Lines[i] when the run was gathered from
	// several files (an outsider run's node logs), for reports; none for
	// a run read from one trace file.
	Files []string
	// RecordedLines[i] is the trace file line of recorded snapshot i.
	RecordedLines []int
	// RestoreLines[i] is the trace file line of restore i; RestoreFiles[i]
	// its file in a run gathered from several files ("" otherwise).
	RestoreLines []int
	RestoreFiles []string
	// Progress, if set, is called after each replayed event with the
	// number of events replayed and the trace's length (the caller
	// decides how often to report; Replay prints nothing).
	Progress func(done, total int)
	// SnapshotProgress, if set, is called after each snapshot the run
	// properties (CheckRun) checked, with the number checked and the
	// number to check: the audit's second phase.
	SnapshotProgress func(done, total int)
}

// Divergence is the first point where the implementation's run leaves the
// spec.
type Divergence struct {
	Step     int           // 1-based event number; 0 after the last event
	Line     int           // trace file line, 0 if unknown
	File     string        // the file of Line in a run gathered from several files (Options.Files), "" otherwise
	Action   string        // the event, as its TLA+ action
	Property spec.Property // the check that failed: an invariant or a step check (spec.Check*)
	Detail   string        // what is wrong, one sentence
	Expected string        // what the model has
	Reported string        // what the implementation reported
	Diff     string        // spec.GlobalState.Diff lines (model vs implementation), if any
}

// where names the divergence's line ("trace line 4", "B.jsonl: trace
// line 2" in a run gathered from several files), "" if unknown.
func (d *Divergence) where() string {
	if d.Line <= 0 {
		return ""
	}
	return placeName(d.File, d.Line)
}

// Report is Replay's verdict.
type Report struct {
	Steps     int // events replayed
	Snapshots int // snapshots complete in the model at the end
	// Incarnations is the number of incarnations of a run with restores
	// (spec.Restore), 0 for a run of one.
	Incarnations int
	// Err means the trace could not be replayed at all (bad constants,
	// a vector clock its events do not bear out: bad input).
	Err error
	// Divergence is the model replay's first divergence, nil if none.
	Divergence *Divergence
	// Violations are the run properties (CheckRun) that fail on the
	// completed snapshots, computed from the events alone.
	Violations []Violation
	// Incomplete lists the snapshots initiated and not complete at the
	// end, with what each lacks: a violation of SnapshotsComplete in a
	// drained run, a fact worth saying in any other. It is empty after a
	// divergence at a step: the replay stops there, short of the end.
	Incomplete []IncompleteSnapshot
	// Aborted lists the snapshots aborted at the end (by a node, or by the
	// audit's own Abort where the spec's fairness takes it: see
	// implicitAborts), each in the words node logs and the store's catalog
	// use (spec.AbortVerdict); none of them is in Incomplete.
	Aborted []AbortedSnapshot
	// Notes say what the audit derived rather than read (a barrier
	// trace's missing seqs and parts, DeriveBarrier), one line each.
	Notes []string
}

// IncompleteSnapshot is a snapshot initiated and never completed: Lacks
// says what it lacks ("P3 never recorded, P2->P3 recording").
type IncompleteSnapshot struct {
	Snap  spec.SnapID
	Lacks string
}

// AbortedSnapshot is a snapshot aborted, and why; Incarnation numbers the
// incarnation of a run with restores (from 1), 0 in a run of one.
type AbortedSnapshot struct {
	spec.AbortVerdict
	Incarnation int
}

// String is the verdict, with its incarnation in a run with restores.
func (a AbortedSnapshot) String() string {
	if a.Incarnation > 0 {
		return fmt.Sprintf("%v (incarnation %d)", a.AbortVerdict, a.Incarnation)
	}
	return a.AbortVerdict.String()
}

// maxAbortedLines bounds the aborted snapshots String names one by one
// (a nemesis run aborts hundreds); --json lists them all.
const maxAbortedLines = 20

// OK reports whether the trace conforms.
func (r Report) OK() bool { return r.Err == nil && r.Divergence == nil && len(r.Violations) == 0 }

// Property names the property the trace violates, "" if it conforms. A
// divergence on a spec invariant names it; a step the model cannot take
// (or a mismatching state) is explained by the first run property that
// fails, if any, else named by the Prop* check.
func (r Report) Property() spec.Property {
	switch {
	case r.OK() || r.Err != nil:
		return ""
	case r.Divergence != nil && r.Divergence.Property.IsInvariant():
		return r.Divergence.Property
	case len(r.Violations) > 0:
		return r.Violations[0].Property
	}
	return r.Divergence.Property
}

// String renders the verdict for people.
func (r Report) String() string {
	var b strings.Builder
	if r.Err != nil {
		fmt.Fprintf(&b, "cannot replay: %v\n", r.Err)
		return b.String()
	}
	if r.OK() {
		in := ""
		if r.Incarnations > 1 {
			in = fmt.Sprintf(" in %d incarnations", r.Incarnations)
		}
		fmt.Fprintf(&b, "conforms: %s%s, %s, all properties hold\n", plural(r.Steps, "step"), in, plural(r.Snapshots, "snapshot"))
		r.writeIncomplete(&b)
		return b.String()
	}
	if d := r.Divergence; d != nil {
		if d.Step > 0 {
			fmt.Fprintf(&b, "diverges at step %d", d.Step)
			if w := d.where(); w != "" {
				fmt.Fprintf(&b, " (%s)", w)
			}
			fmt.Fprintf(&b, ": %s\n", d.Action)
		} else {
			fmt.Fprintf(&b, "diverges at the end of the trace (after %s)\n", plural(r.Steps, "step"))
		}
		fmt.Fprintf(&b, "  check:    %s\n", d.Property)
		fmt.Fprintf(&b, "  why:      %s\n", d.Detail)
		if d.Expected != "" || d.Reported != "" {
			fmt.Fprintf(&b, "  model:    %s\n", d.Expected)
			fmt.Fprintf(&b, "  reported: %s\n", d.Reported)
		}
		if d.Diff != "" {
			b.WriteString("  diff (model vs reported):\n")
			for _, l := range strings.Split(d.Diff, "\n") {
				fmt.Fprintf(&b, "    %s\n", l)
			}
		}
	} else {
		fmt.Fprintf(&b, "the model replays all %s, but a recorded snapshot is wrong\n", plural(r.Steps, "step"))
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  violates %s\n", v)
	}
	r.writeIncomplete(&b)
	fmt.Fprintf(&b, "property: %s\n", r.Property())
	return b.String()
}

// writeIncomplete says which snapshots were aborted and why, which were
// initiated and never completed, and what each lacks; then the notes.
func (r Report) writeIncomplete(b *strings.Builder) {
	for i, a := range r.Aborted {
		if i == maxAbortedLines {
			fmt.Fprintf(b, "  ... and %d more snapshots aborted (--json lists them all)\n", len(r.Aborted)-i)
			break
		}
		fmt.Fprintf(b, "  %v\n", a)
	}
	for _, x := range r.Incomplete {
		fmt.Fprintf(b, "  incomplete: snapshot %d was initiated but never completed: %s\n", x.Snap, x.Lacks)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "  %s\n", n)
	}
}

// replayPlain steps the model through the trace's events and checks, after
// every step, that it was enabled, that its message and the process's
// state match the model, the spec invariants, and that a snapshot the
// step completes has the recorded state the trace reports; at the end of a
// drained run (Header.Drained or opts.Drained), that every channel is
// empty and every initiated snapshot completed. Independently it checks
// the run properties (CheckRun) on every completed snapshot. Without
// recorded snapshots in the trace they are derived from the events.
//
// It replays on an in-place state with the invariants watched step by
// step (model.InPlace, model.Watch), at a cost per event that does not
// grow with the number of processes. A run that diverges at an event is
// replayed again up to that event in place, then from it on persistent
// states with the invariants evaluated whole (the state before the
// event is gone after an in-place step), so that its report is the one
// a persistent replay makes.
func replayPlain(tr spec.Trace, opts Options) Report {
	r := replayPlainWith(tr, opts, -1)
	if r.Err != nil || r.Divergence == nil || r.Divergence.Step == 0 {
		return r // nothing in place went wrong: the run conforms, or diverges at its start or end
	}
	return replayPlainWith(tr, opts, r.Divergence.Step-1)
}

// replayPlainWith is replayPlain's replay: in place with the invariants
// watched, from event wholeFrom on (0-based; -1: never) on persistent
// states with the invariants evaluated whole.
func replayPlainWith(tr spec.Trace, opts Options, wholeFrom int) Report {
	var r Report
	cfg, err := ConfigFromTrace(tr)
	if err != nil {
		r.Err = err
		return r
	}
	rep := newReported(tr, opts)
	st := model.Init(cfg)
	r.Divergence = checkInvariants(cfg, st)
	st = model.InPlace(cfg, st)
	inv := newInvariantWatch(cfg, st, true)
	r.replayEvents(tr, opts, func(i int, e spec.Event) *Divergence {
		if i == wholeFrom {
			st = model.Persistent(st)
			inv = newInvariantWatch(cfg, st, false)
		}
		next, d := checkedStep(cfg, st, e, inv, rep)
		if d == nil {
			st = next
		}
		return d
	})
	if r.Divergence == nil && (opts.Drained || tr.Header.Drained) {
		r.Divergence = checkDrained(cfg, st)
	}
	r.finish(cfg, st, tr, opts, rep.rec, rep.cuts)
	return r
}

// checkedStep takes event e from st (step) and checks the invariants
// (inv) and the recorded states reported of the snapshots it completes
// (rep) in the state it leads to.
func checkedStep(cfg *model.Config, st *model.State, e spec.Event, inv *invariantWatch, rep reported) (*model.State, *Divergence) {
	inv.begin(cfg, st, e)
	next, d := step(cfg, st, e)
	if d != nil {
		return nil, d
	}
	d, completed := inv.end(cfg, next)
	if d == nil {
		d = rep.checkCompleted(cfg, next, completed)
	}
	return next, d
}

// replayEvents takes tr's events in turn with take (the step and its
// checks) while r has no divergence, placing the first at its event and
// counting the steps taken.
func (r *Report) replayEvents(tr spec.Trace, opts Options, take func(i int, e spec.Event) *Divergence) {
	for i := 0; i < len(tr.Events) && r.Divergence == nil; i++ {
		e := tr.Events[i]
		if d := take(i, e); d != nil {
			r.Divergence = d.at(i, e, opts)
			return
		}
		r.Steps++
		if opts.Progress != nil {
			opts.Progress(r.Steps, len(tr.Events))
		}
	}
}

// step takes event e in the model from st. The model says why an action
// is not enabled (model.NotEnabled); step adds what the event reported
// and checks that the message and the process's state match.
func step(cfg *model.Config, st *model.State, e spec.Event) (*model.State, *Divergence) {
	if err := e.Validate(cfg.Topo); err != nil {
		return nil, &Divergence{Property: spec.CheckWellFormed, Detail: err.Error()}
	}
	n, d := algorithmStep(cfg, st, e)
	if d == nil {
		d = checkAfter(cfg, n, e)
	}
	if d != nil {
		return nil, d
	}
	return n, nil
}

// algorithmStep takes event e of the algorithm (SendApp, RecvApp,
// Initiate, RecvMarker) in the model.
func algorithmStep(cfg *model.Config, st *model.State, e spec.Event) (*model.State, *Divergence) {
	switch e.Action {
	case spec.SendApp:
		return stepSendApp(cfg, st, e)
	case spec.RecvApp:
		return stepRecvApp(cfg, st, e)
	case spec.Initiate:
		return stepInitiate(cfg, st, e)
	case spec.RecvMarker:
		return stepRecvMarker(cfg, st, e)
	}
	return nil, &Divergence{Property: spec.CheckWellFormed, Detail: fmt.Sprintf("%s is no action of the spec", e.Action)}
}

// stepSendApp takes a SendApp event: model.SendApp, then the message's
// seq.
func stepSendApp(cfg *model.Config, st *model.State, e spec.Event) (*model.State, *Divergence) {
	n, err := model.SendApp(cfg, st, e.From, e.To, e.Amount)
	if err != nil {
		return nil, notEnabled(err, fmtLocal(e.From, st.Proc[cfg.Topo.ProcIndex(e.From)]), fmt.Sprintf("%s sent %d", string(e.From), e.Amount))
	}
	if want := n.NSent[cfg.ChanIndex(e.From, e.To)]; e.Msg != want {
		return nil, &Divergence{Property: spec.CheckMessage, Detail: fmt.Sprintf("the message on %s is number %d in the model", e.Chan(), want),
			Expected: fmt.Sprintf("%d#%d", e.Amount, want), Reported: fmt.Sprintf("%d#%d", e.Amount, e.Msg)}
	}
	return n, nil
}

// stepRecvApp takes a RecvApp event: model.RecvApp, then the message
// received is the head the model took.
func stepRecvApp(cfg *model.Config, st *model.State, e spec.Event) (*model.State, *Divergence) {
	q := st.Chan[cfg.ChanIndex(e.From, e.To)]
	n, err := model.RecvApp(cfg, st, e.From, e.To)
	if err != nil {
		return nil, notEnabled(err, fmt.Sprintf("%s = %s", e.Chan(), fmtChan(cfg, q)), fmt.Sprintf("%s received %d#%d", string(e.To), e.Amount, e.Msg))
	}
	if h := q[0].AppMsg; h.Amt != e.Amount || h.Seq != e.Msg {
		return nil, &Divergence{Property: spec.CheckMessage, Detail: fmt.Sprintf("the head of %s is not the message received", e.Chan()),
			Expected: fmt.Sprintf("%d#%d", h.Amt, h.Seq), Reported: fmt.Sprintf("%d#%d", e.Amount, e.Msg)}
	}
	return n, nil
}

// stepInitiate takes an Initiate event: the event's process is the
// snapshot's initiator, then model.Initiate.
func stepInitiate(cfg *model.Config, st *model.State, e spec.Event) (*model.State, *Divergence) {
	if s := cfg.SnapIndex(e.Snap); s >= 0 {
		if init := cfg.Topo.Procs[cfg.Initiator[s]]; init != e.Proc {
			return nil, &Divergence{Property: spec.CheckEnabled, Detail: fmt.Sprintf("Initiate(%d) is taken by Initiator[%d] = %s, not %s", e.Snap, e.Snap, string(init), string(e.Proc))}
		}
	}
	n, err := model.Initiate(cfg, st, e.Snap)
	if err != nil {
		return nil, notEnabled(err, "", "")
	}
	return n, nil
}

// stepRecvMarker takes a RecvMarker event: model.RecvMarker, then the
// marker's snapshot and the case of the Receiving Rule match the event.
func stepRecvMarker(cfg *model.Config, st *model.State, e spec.Event) (*model.State, *Divergence) {
	q := st.Chan[cfg.ChanIndex(e.From, e.To)]
	// The case of the Receiving Rule, read before the step (an in-place
	// step records).
	first := len(q) > 0 && q[0].Kind == model.KindMarker && !st.Recorded[q[0].Snap].Has(cfg.Topo.ProcIndex(e.To))
	n, err := model.RecvMarker(cfg, st, e.From, e.To)
	if err != nil {
		return nil, notEnabled(err, fmt.Sprintf("%s = %s", e.Chan(), fmtChan(cfg, q)), fmt.Sprintf("%s received Marker(%d)", string(e.To), e.Snap))
	}
	if s := cfg.Snap[q[0].Snap]; s != e.Snap {
		return nil, &Divergence{Property: spec.CheckMessage, Detail: fmt.Sprintf("the head of %s is a marker of another snapshot", e.Chan()),
			Expected: fmt.Sprintf("Marker(%d)", s), Reported: fmt.Sprintf("Marker(%d)", e.Snap)}
	}
	if first != e.First {
		return nil, &Divergence{Property: spec.CheckMessage, Detail: fmt.Sprintf("the event says first=%t (case %d of the Receiving Rule), the model is in case %d", e.First, caseOf(e.First), caseOf(first)),
			Expected: fmt.Sprintf("first=%t", first), Reported: fmt.Sprintf("first=%t", e.First)}
	}
	return n, nil
}

func caseOf(first bool) int {
	if first {
		return 1
	}
	return 2
}

// checkDrained is the state part of SnapshotsComplete at the end of a
// drained run.
func checkDrained(cfg *model.Config, st *model.State) *Divergence {
	var busy []string
	for c, q := range st.Chan {
		if len(q) > 0 {
			busy = append(busy, fmt.Sprintf("%s = %s", cfg.Topo.Chans[c], fmtChan(cfg, q)))
		}
	}
	if len(busy) > 0 {
		return &Divergence{Property: spec.PropSnapshotsComplete, Detail: "the trace claims a drained run, but the model's channels still hold messages",
			Expected: strings.Join(busy, "; "), Reported: "drained: every channel empty"}
	}
	if s := model.SnapshotDone(cfg, st); s >= 0 {
		return &Divergence{Property: spec.PropSnapshotsComplete, Detail: fmt.Sprintf("snapshot %d was initiated but never completed: %s", cfg.Snap[s], snapshotLacks(cfg, st, s))}
	}
	return nil
}
