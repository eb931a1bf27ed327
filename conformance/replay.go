package conformance

import (
	"fmt"
	"sort"
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
	// RecordedLines[i] is the trace file line of recorded snapshot i.
	RecordedLines []int
	// RestoreLines[i] is the trace file line of restore i.
	RestoreLines []int
	// Progress, if set, is called after each replayed event with the
	// number of events replayed and the trace's length (the caller
	// decides how often to report; Replay prints nothing).
	Progress func(done, total int)
}

// Divergence is the first point where the implementation's run leaves the
// spec.
type Divergence struct {
	Step     int           // 1-based event number; 0 after the last event
	Line     int           // trace file line, 0 if unknown
	Action   string        // the event, as its TLA+ action
	Property spec.Property // the check that failed: an invariant or a step check (spec.Check*)
	Detail   string        // what is wrong, one sentence
	Expected string        // what the model has
	Reported string        // what the implementation reported
	Diff     string        // spec.GlobalState.Diff lines (model vs implementation), if any
}

// at places d at the trace's event e, its i-th (0-based): the step, the
// action and, when opts has them, the file line. Both replays (without
// and with failure events) stop there.
func (d *Divergence) at(i int, e spec.Event, opts Options) *Divergence {
	d.Step, d.Action = i+1, e.String()
	if i < len(opts.Lines) {
		d.Line = opts.Lines[i]
	}
	return d
}

// Report is Replay's verdict.
type Report struct {
	Steps     int // events replayed
	Snapshots int // snapshots complete in the model at the end
	// Incarnations is the number of incarnations of a run with restores
	// (spec.Restore), 0 for a run of one.
	Incarnations int
	// Err means the trace could not be replayed at all (bad constants).
	Err error
	// Divergence is the model replay's first divergence, nil if none.
	Divergence *Divergence
	// Violations are the run properties (CheckRun) that fail on the
	// completed snapshots, computed from the events alone.
	Violations []Violation
}

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
		return b.String()
	}
	if d := r.Divergence; d != nil {
		if d.Step > 0 {
			fmt.Fprintf(&b, "diverges at step %d", d.Step)
			if d.Line > 0 {
				fmt.Fprintf(&b, " (trace line %d)", d.Line)
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
	fmt.Fprintf(&b, "property: %s\n", r.Property())
	return b.String()
}

// ConfigFromTrace builds the model a trace is replayed against: the
// header's topology and initial balances; Budget from the header, else
// each process's number of SendApp events; Amount the amounts in the
// trace; Snap and Initiator from the header, else from the Initiate
// events.
func ConfigFromTrace(tr spec.Trace) (*model.Config, error) {
	k, err := constantsFromTrace(tr)
	if err != nil {
		return nil, err
	}
	return model.NewConfig(k, model.VariantSpec, spec.Invariants, nil)
}

// constantsFromTrace is ConfigFromTrace's constants.
func constantsFromTrace(tr spec.Trace) (model.Constants, error) {
	h := tr.Header
	if h.Topology == nil {
		return model.Constants{}, fmt.Errorf("trace header has no topology")
	}
	k := model.Constants{Topo: h.Topology, InitBal: h.InitBal, Budget: h.Budget}
	if k.Budget == nil {
		k.Budget = map[spec.ProcID]int{}
		for _, p := range h.Topology.Procs {
			k.Budget[p] = 0
		}
		for _, e := range tr.Events {
			if e.Action == spec.SendApp {
				k.Budget[e.Proc]++
			}
		}
	}
	seen := map[int64]bool{}
	for _, e := range tr.Events {
		if (e.Action == spec.SendApp || e.Action == spec.RecvApp) && e.Amount > 0 && !seen[e.Amount] {
			seen[e.Amount] = true
			k.Amount = append(k.Amount, e.Amount)
		}
	}
	k.Initiator = map[spec.SnapID]spec.ProcID{}
	if h.Snaps != nil {
		for s, p := range h.Snaps {
			k.Initiator[s] = p
		}
	} else {
		for _, e := range tr.Events {
			if _, ok := k.Initiator[e.Snap]; e.Action == spec.Initiate && e.Snap != 0 && !ok {
				k.Initiator[e.Snap] = e.Proc
			}
		}
	}
	return k, nil
}

// Replay steps the model through the trace's events and checks, after
// every step, that it was enabled, that its message and the process's
// state match the model, the spec invariants, and that a snapshot the
// step completes has the recorded state the trace reports; at the end of a
// drained run (Header.Drained or opts.Drained), that every channel is
// empty and every initiated snapshot completed. Independently it checks
// the run properties (CheckRun) on every completed snapshot. Without
// recorded snapshots in the trace they are derived from the events.
func Replay(tr spec.Trace, opts Options) Report {
	if len(tr.Restores) > 0 {
		return replayHistory(tr, opts)
	}
	if hasFaults(tr) {
		return replayFaults(tr, opts)
	}
	var r Report
	rec, initiators, cuts := tr.RecordedStates(), reportedInitiators(tr), recordedCuts(tr, opts)
	cfg, err := ConfigFromTrace(tr)
	if err != nil {
		r.Err = err
		return r
	}
	st := model.Init(cfg)
	if d := checkInvariants(cfg, st); d != nil {
		r.Divergence = d
	}
	for i := 0; i < len(tr.Events) && r.Divergence == nil; i++ {
		e := tr.Events[i]
		next, d := step(cfg, st, e)
		if d == nil {
			d = checkInvariants(cfg, next)
		}
		if d == nil {
			d = checkRecorded(cfg, st, next, rec, initiators, cuts)
		}
		if d != nil {
			r.Divergence = d.at(i, e, opts)
			break
		}
		st = next
		r.Steps++
		if opts.Progress != nil {
			opts.Progress(r.Steps, len(tr.Events))
		}
	}
	if r.Divergence == nil && (opts.Drained || tr.Header.Drained) {
		r.Divergence = checkDrained(cfg, st)
	}
	r.finish(cfg, st, tr, rec, cuts)
	return r
}

// finish counts the snapshots complete in the replay's last state st and
// checks the run-wide properties (CheckRun) over the trace's events, the
// recorded states rec and the reported cuts.
func (r *Report) finish(cfg *model.Config, st *model.State, tr spec.Trace, rec map[spec.SnapID]spec.GlobalState, cuts map[spec.SnapID]reportedCut) {
	for s := range cfg.Snap {
		if model.Complete(cfg, st, s) {
			r.Snapshots++
		}
	}
	var runCuts map[spec.SnapID]map[spec.Channel]spec.ChanCut
	if len(cuts) > 0 {
		runCuts = map[spec.SnapID]map[spec.Channel]spec.ChanCut{}
		for id, k := range cuts {
			runCuts[id] = k.cut
		}
	}
	r.Violations = CheckRun(Run{Topo: tr.Header.Topology, InitBal: tr.Header.InitBal, Budget: tr.Header.Budget, Events: tr.Events, Recorded: rec, Cuts: runCuts})
}

// reportedInitiators maps each recorded snapshot the trace reports to
// its initiator.
func reportedInitiators(tr spec.Trace) map[spec.SnapID]spec.ProcID {
	out := map[spec.SnapID]spec.ProcID{}
	for _, rs := range tr.Recorded {
		out[rs.Snap] = rs.Initiator
	}
	return out
}

// reportedCut is a recorded snapshot's cut seqs and its trace line (0 if
// unknown).
type reportedCut struct {
	cut  map[spec.Channel]spec.ChanCut
	line int
}

// recordedCuts lists the cut seqs the trace's recorded snapshots carry,
// by snapshot id.
func recordedCuts(tr spec.Trace, opts Options) map[spec.SnapID]reportedCut {
	out := map[spec.SnapID]reportedCut{}
	for i, rs := range tr.Recorded {
		if len(rs.Cut) == 0 {
			continue
		}
		k := reportedCut{cut: rs.Cut}
		if i < len(opts.RecordedLines) {
			k.line = opts.RecordedLines[i]
		}
		out[rs.Snap] = k
	}
	return out
}

// step takes event e in the model from st. The model says why an action
// is not enabled (model.NotEnabled); step adds what the event reported
// and checks that the message and the process's state match.
func step(cfg *model.Config, st *model.State, e spec.Event) (*model.State, *Divergence) {
	if err := e.Validate(cfg.Topo); err != nil {
		return nil, &Divergence{Property: spec.CheckWellFormed, Detail: err.Error()}
	}
	var (
		n *model.State
		d *Divergence
	)
	switch e.Action {
	case spec.SendApp:
		n, d = stepSendApp(cfg, st, e)
	case spec.RecvApp:
		n, d = stepRecvApp(cfg, st, e)
	case spec.Initiate:
		n, d = stepInitiate(cfg, st, e)
	case spec.RecvMarker:
		n, d = stepRecvMarker(cfg, st, e)
	default:
		return nil, &Divergence{Property: spec.CheckWellFormed, Detail: fmt.Sprintf("%s is no action of the spec", e.Action)}
	}
	if d != nil {
		return nil, d
	}
	p := cfg.Topo.ProcIndex(e.Proc)
	if got := n.Proc[p]; got != e.After {
		m := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{e.Proc: got}}
		i := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{e.Proc: e.After}}
		return nil, &Divergence{Property: spec.CheckState, Detail: fmt.Sprintf("%s's state after the step differs from the model's", string(e.Proc)),
			Expected: fmtLocal(e.Proc, got), Reported: fmtLocal(e.Proc, e.After), Diff: m.Diff(i)}
	}
	return n, nil
}

// notEnabled is the divergence of an event whose action the model
// refuses: the model's reason, what the model holds, what was reported.
func notEnabled(err error, expected, reported string) *Divergence {
	return &Divergence{Property: spec.CheckEnabled, Detail: err.Error(), Expected: expected, Reported: reported}
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
	n, err := model.RecvMarker(cfg, st, e.From, e.To)
	if err != nil {
		return nil, notEnabled(err, fmt.Sprintf("%s = %s", e.Chan(), fmtChan(cfg, q)), fmt.Sprintf("%s received Marker(%d)", string(e.To), e.Snap))
	}
	if s := cfg.Snap[q[0].Snap]; s != e.Snap {
		return nil, &Divergence{Property: spec.CheckMessage, Detail: fmt.Sprintf("the head of %s is a marker of another snapshot", e.Chan()),
			Expected: fmt.Sprintf("Marker(%d)", s), Reported: fmt.Sprintf("Marker(%d)", e.Snap)}
	}
	if first := !st.Recorded[q[0].Snap].Has(cfg.Topo.ProcIndex(e.To)); first != e.First {
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

func fmtLocal(p spec.ProcID, l spec.LocalState) string {
	return fmt.Sprintf("%s = [bal=%d sent=%d rcvd=%d]", string(p), l.Bal, l.Sent, l.Rcvd)
}

func fmtChan(cfg *model.Config, q []model.Msg) string {
	parts := make([]string, len(q))
	for i, m := range q {
		parts[i] = model.FormatMsg(cfg, m)
	}
	return "<<" + strings.Join(parts, ", ") + ">>"
}

// checkInvariants evaluates the spec invariants on st.
func checkInvariants(cfg *model.Config, st *model.State) *Divergence {
	for _, name := range spec.Invariants {
		f, _ := model.InvariantByName(name)
		if !f(cfg, st) {
			return &Divergence{Property: name, Detail: explainInvariant(cfg, st, name)}
		}
	}
	return nil
}

// explainInvariant says which snapshot breaks invariant name, and how.
func explainInvariant(cfg *model.Config, st *model.State, name spec.Property) string {
	f, _ := model.InvariantByName(name)
	for s, id := range cfg.Snap {
		c1, s1 := onlySnap(cfg, st, s)
		if f(c1, s1) {
			continue
		}
		rec := RecordedState(cfg, st, s)
		switch name {
		case spec.PropConservation:
			return fmt.Sprintf("snapshot %d holds %d, the system holds %d", id, rec.Total(), cfg.TotalMoney())
		case spec.PropChandyLamportTheorem:
			return fmt.Sprintf("snapshot %d: pre shadow ok=%t, post shadow ok=%t; recorded vs pre: %s", id, st.Pre[s].OK, st.Post[s].OK,
				oneLine(rec.Diff(shadowState(cfg, st.Pre[s]))))
		}
		return fmt.Sprintf("%s fails for snapshot %d (recorded %s)", name, id, oneLine(FormatState(rec)))
	}
	return string(name) + " fails"
}

// onlySnap is the model and state restricted to snapshot index s, so that
// an invariant can be evaluated for s alone.
func onlySnap(cfg *model.Config, st *model.State, s int) (*model.Config, *model.State) {
	c := *cfg
	c.Snap, c.Initiator = cfg.Snap[s:s+1], cfg.Initiator[s:s+1]
	n := *st
	n.Recorded, n.RecProc, n.RecChan, n.RecMsgs = st.Recorded[s:s+1], st.RecProc[s:s+1], st.RecChan[s:s+1], st.RecMsgs[s:s+1]
	n.CutSent, n.CutGot, n.Pre, n.Post = st.CutSent[s:s+1], st.CutGot[s:s+1], st.Pre[s:s+1], st.Post[s:s+1]
	return &c, &n
}

// checkRecorded compares the implementation's recorded states (and their
// initiators), then their cut seqs, with the model's for every snapshot
// the step completed.
func checkRecorded(cfg *model.Config, before, after *model.State, rec map[spec.SnapID]spec.GlobalState, initiators map[spec.SnapID]spec.ProcID, cuts map[spec.SnapID]reportedCut) *Divergence {
	for s, id := range cfg.Snap {
		got, ok := rec[id]
		if !ok || model.Complete(cfg, before, s) || !model.Complete(cfg, after, s) {
			continue
		}
		if want := cfg.Topo.Procs[cfg.Initiator[s]]; initiators[id] != "" && initiators[id] != want {
			return &Divergence{Property: spec.CheckRecordedState, Detail: fmt.Sprintf("snapshot %d completes, and the implementation reports another initiator than the model's", id),
				Expected: "initiator " + string(want), Reported: "initiator " + string(initiators[id])}
		}
		want := RecordedState(cfg, after, s)
		if d := want.Diff(got); d != "" {
			return &Divergence{Property: spec.CheckRecordedState, Detail: fmt.Sprintf("snapshot %d completes, and the implementation recorded another state than the model", id),
				Expected: oneLine(FormatState(want)), Reported: oneLine(FormatState(got)), Diff: d}
		}
		if k, ok := cuts[id]; ok {
			if d := checkCut(cfg, after, s, k); d != nil {
				return d
			}
		}
	}
	return nil
}

// checkCut compares a completed snapshot's reported cut seqs with the
// model's ghost cut: per channel c, cutSent[s][c] and Len(cutGot[s][c]).
// A difference breaks ConsistentCut as the implementation will act on
// it: restoring the snapshot resumes the channel at the wrong seq.
func checkCut(cfg *model.Config, st *model.State, s int, k reportedCut) *Divergence {
	var bad, want, got []string
	for c, ch := range cfg.Topo.Chans {
		m := spec.ChanCut{Sent: st.CutSent[s][c], Got: uint64(len(st.CutGot[s][c]))}
		r, ok := k.cut[ch]
		if ok && r == m {
			continue
		}
		bad = append(bad, ch.String())
		want = append(want, fmt.Sprintf("%s %s", ch, m))
		if ok {
			got = append(got, fmt.Sprintf("%s %s", ch, r))
		} else {
			got = append(got, fmt.Sprintf("%s no cut seqs", ch))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	where := ""
	if k.line > 0 {
		where = fmt.Sprintf(" (trace line %d)", k.line)
	}
	return &Divergence{Property: spec.PropConsistentCut,
		Detail: fmt.Sprintf("snapshot %d completes, and the cut seqs the implementation reported%s are not the model's cutSent and Len(cutGot): restore would resume %s at the wrong seq",
			cfg.Snap[s], where, strings.Join(bad, ", ")),
		Expected: strings.Join(want, "; "), Reported: strings.Join(got, "; ")}
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
		var miss []string
		for p, id := range cfg.Topo.Procs {
			if !st.Recorded[s].Has(p) {
				miss = append(miss, string(id)+" never recorded")
			}
		}
		for c, x := range st.RecChan[s] {
			if x != model.Done {
				miss = append(miss, cfg.Topo.Chans[c].String()+" "+x.String())
			}
		}
		return &Divergence{Property: spec.PropSnapshotsComplete, Detail: fmt.Sprintf("snapshot %d was initiated but never completed: %s", cfg.Snap[s], strings.Join(miss, ", "))}
	}
	return nil
}

// AppState is the application part of a model state (TLA+ CurrentApp).
func AppState(cfg *model.Config, st *model.State) spec.GlobalState {
	return shadowState(cfg, model.CurrentApp(st))
}

// RecordedState is what the model recorded for snapshot index s (TLA+
// RecordedApp(s)).
func RecordedState(cfg *model.Config, st *model.State, s int) spec.GlobalState {
	return shadowState(cfg, model.RecordedApp(st, s))
}

func shadowState(cfg *model.Config, sh model.Shadow) spec.GlobalState {
	g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
	for i, p := range cfg.Topo.Procs {
		g.Procs[p] = sh.Proc[i]
	}
	for i, c := range cfg.Topo.Chans {
		if len(sh.Chan[i]) > 0 {
			g.Chans[c] = append([]spec.AppMsg(nil), sh.Chan[i]...)
		}
	}
	return g
}

// FormatState renders a global state on one line per process and channel.
func FormatState(g spec.GlobalState) string {
	var ps []string
	for p := range g.Procs {
		ps = append(ps, string(p))
	}
	sort.Strings(ps)
	var lines []string
	for _, p := range ps {
		lines = append(lines, fmtLocal(spec.ProcID(p), g.Procs[spec.ProcID(p)]))
	}
	var cs []spec.Channel
	for c, ms := range g.Chans {
		if len(ms) > 0 {
			cs = append(cs, c)
		}
	}
	sort.Slice(cs, func(i, j int) bool { return spec.ChannelLess(cs[i], cs[j]) })
	for _, c := range cs {
		lines = append(lines, fmt.Sprintf("%s = %s", c, spec.FormatMsgs(g.Chans[c])))
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
