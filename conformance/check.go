package conformance

import (
	"fmt"
	"sort"
	"strings"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// The step checks both replays of a Chandy-Lamport trace share (without
// and with failure events, replay.go and faultreplay.go): the model built
// from the trace, the recorded states and cuts it reports, the invariants
// on the model's state, and their renderings. This is the bottom of the
// audit: it calls the model and spec, never a replay or the dispatcher
// (dispatch.go) above it.

// at places d at the trace's event e, its i-th (0-based): the step, the
// action and, when opts has them, the file and line. Both replays
// (without and with failure events) stop there.
func (d *Divergence) at(i int, e spec.Event, opts Options) *Divergence {
	d.Step, d.Action = i+1, e.String()
	d.placeAt(i, opts)
	return d
}

// placeAt sets d's line, and its file in a run gathered from several
// files, to those of event i (0-based) as opts gives them.
func (d *Divergence) placeAt(i int, opts Options) {
	d.Line, d.File = lineOf(opts.Lines, i), fileAt(opts.Files, i)
}

// placeName names line of file: "trace line 4", or "B.jsonl: trace
// line 2" in a run gathered from several files (file not "").
func placeName(file string, line int) string {
	if file == "" {
		return fmt.Sprintf("trace line %d", line)
	}
	return fmt.Sprintf("%s: trace line %d", file, line)
}

// lineOf is lines[i], 0 (unknown) if there is none.
func lineOf(lines []int, i int) int {
	if i >= 0 && i < len(lines) {
		return lines[i]
	}
	return 0
}

// fileAt is files[i], "" (the trace's one file) if there is none.
func fileAt(files []string, i int) string {
	if i >= 0 && i < len(files) {
		return files[i]
	}
	return ""
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
		return model.Constants{}, fmt.Errorf("trace header: field \"topology\": missing")
	}
	if err := initBalPresent(h); err != nil {
		return model.Constants{}, err
	}
	k := model.Constants{Topo: h.Topology, InitBal: h.InitBal, Budget: h.Budget,
		Amount: traceAmounts(tr.Events), Initiator: traceInitiators(tr)}
	if k.Budget == nil {
		k.Budget = traceBudget(tr)
	}
	return k, nil
}

// initBalPresent names a header field init_bal that is missing, or
// misses a process, by its JSON path.
func initBalPresent(h spec.Header) error {
	if h.InitBal == nil {
		return fmt.Errorf("trace header: field \"init_bal\": missing: every process's initial balance")
	}
	for _, p := range h.Topology.Procs {
		if _, ok := h.InitBal[p]; !ok {
			return fmt.Errorf("trace header: field \"init_bal.%s\": missing: every process of the topology needs its initial balance", string(p))
		}
	}
	return nil
}

// traceBudget is each process's number of SendApp events.
func traceBudget(tr spec.Trace) map[spec.ProcID]int {
	b := map[spec.ProcID]int{}
	for _, p := range tr.Header.Topology.Procs {
		b[p] = 0
	}
	for _, e := range tr.Events {
		if e.Action == spec.SendApp {
			b[e.Proc]++
		}
	}
	return b
}

// traceAmounts is the amounts the transfers of evs carry, in order of
// first appearance.
func traceAmounts(evs []spec.Event) []int64 {
	var out []int64
	seen := map[int64]bool{}
	for _, e := range evs {
		if (e.Action == spec.SendApp || e.Action == spec.RecvApp) && e.Amount > 0 && !seen[e.Amount] {
			seen[e.Amount] = true
			out = append(out, e.Amount)
		}
	}
	return out
}

// traceInitiators is the header's initiators, else each snapshot's first
// Initiate.
func traceInitiators(tr spec.Trace) map[spec.SnapID]spec.ProcID {
	out := map[spec.SnapID]spec.ProcID{}
	if tr.Header.Snaps != nil {
		for s, p := range tr.Header.Snaps {
			out[s] = p
		}
		return out
	}
	for _, e := range tr.Events {
		if _, ok := out[e.Snap]; e.Action == spec.Initiate && e.Snap != 0 && !ok {
			out[e.Snap] = e.Proc
		}
	}
	return out
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

// notEnabled is the divergence of an event whose action the model
// refuses: the model's reason, what the model holds, what was reported.
func notEnabled(err error, expected, reported string) *Divergence {
	return &Divergence{Property: spec.CheckEnabled, Detail: err.Error(), Expected: expected, Reported: reported}
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
		c1, s1 := model.OnlySnapshot(cfg, st, s)
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

// completedBy lists the snapshots the step from before to after
// completed.
func completedBy(cfg *model.Config, before, after *model.State) []int {
	var out []int
	for s := range cfg.Snap {
		if !model.Complete(cfg, before, s) && model.Complete(cfg, after, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkRecorded compares the implementation's recorded states (and their
// initiators), then their cut seqs, with the model's for every snapshot
// the step completed (snapshot indexes completed, in after).
func checkRecorded(cfg *model.Config, after *model.State, completed []int, rec map[spec.SnapID]spec.GlobalState, initiators map[spec.SnapID]spec.ProcID, cuts map[spec.SnapID]reportedCut) *Divergence {
	for _, s := range completed {
		id := cfg.Snap[s]
		got, ok := rec[id]
		if !ok {
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

// plural renders n and the noun, with an s unless n is 1: "1 step",
// "3 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// NodeLog reports whether tr looks like one node's own log: no recorded
// snapshots, and every event taken by one process p of a topology with
// several processes. A log without events is one too (p is then "").
func NodeLog(tr spec.Trace) (p spec.ProcID, ok bool) {
	if tr.Header.Topology == nil || len(tr.Header.Topology.Procs) < 2 || len(tr.Recorded) > 0 {
		return "", false
	}
	for _, e := range tr.Events {
		if p != "" && e.Proc != p {
			return "", false
		}
		p = e.Proc
	}
	return p, true
}

// restoreLabel names restore r, for reports.
func restoreLabel(r spec.Restore) string {
	return fmt.Sprintf("Restore(%d) to incarnation %d", r.Snap, r.Incarnation)
}

// checkAfter checks that e.Proc's state after step e is the model's, in
// n.
func checkAfter(cfg *model.Config, n *model.State, e spec.Event) *Divergence {
	p := e.Proc
	got := n.Proc[cfg.Topo.ProcIndex(p)]
	if got == e.After {
		return nil
	}
	m := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{p: got}}
	r := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{p: e.After}}
	detail := fmt.Sprintf("%s's state after the step differs from the model's", string(p))
	if e.After == (spec.LocalState{}) {
		detail += ` (the event's "after" is missing or all zero: this format needs it; the outsider format, ` + spec.OutsiderFormat + `, derives it)`
	}
	return &Divergence{Property: spec.CheckState, Detail: detail,
		Expected: fmtLocal(p, got), Reported: fmtLocal(p, e.After), Diff: m.Diff(r)}
}

// reported is what a trace reports of its snapshots: the recorded
// states, their initiators and their cuts.
type reported struct {
	rec        map[spec.SnapID]spec.GlobalState
	initiators map[spec.SnapID]spec.ProcID
	cuts       map[spec.SnapID]reportedCut
}

func newReported(tr spec.Trace, opts Options) reported {
	return reported{rec: tr.RecordedStates(), initiators: reportedInitiators(tr), cuts: recordedCuts(tr, opts)}
}

// check is checkRecorded for the step from before to after.
func (rp reported) check(cfg *model.Config, before, after *model.State) *Divergence {
	return rp.checkCompleted(cfg, after, completedBy(cfg, before, after))
}

// checkCompleted is checkRecorded for the snapshots completed in after.
func (rp reported) checkCompleted(cfg *model.Config, after *model.State, completed []int) *Divergence {
	return checkRecorded(cfg, after, completed, rp.rec, rp.initiators, rp.cuts)
}

// invariantWatch checks the spec invariants after each step of a replay
// and says which snapshots it completed: evaluated whole on persistent
// states (watch nil), or watched step by step (model.Watch), as an
// in-place replay must (its state before the step is gone after it).
type invariantWatch struct {
	w      *model.Watch
	before *model.State // the persistent replay's state before the step
}

func newInvariantWatch(cfg *model.Config, st *model.State, inPlace bool) *invariantWatch {
	if inPlace {
		return &invariantWatch{w: model.NewWatch(cfg, st)}
	}
	return &invariantWatch{}
}

// begin notes event e, about to be taken from st.
func (iw *invariantWatch) begin(cfg *model.Config, st *model.State, e spec.Event) {
	if iw.w == nil {
		iw.before = st
		return
	}
	a := model.Action{Kind: model.ActLose, Chan: cfg.ChanIndex(e.From, e.To), Snap: cfg.SnapIndex(e.Snap)}
	switch e.Action {
	case spec.SendApp:
		a.Kind, a.Snap = model.ActSendApp, 0
	case spec.RecvApp:
		a.Kind, a.Snap = model.ActRecvApp, 0
	case spec.Initiate:
		a.Kind, a.Chan = model.ActInitiate, 0
	case spec.RecvMarker:
		a.Kind, a.Snap = model.ActRecvMarker, 0
	}
	iw.w.Begin(st, a)
}

// end checks the invariants in after, the state the step led to, and
// lists the snapshots the step completed.
func (iw *invariantWatch) end(cfg *model.Config, after *model.State) (*Divergence, []int) {
	if iw.w == nil {
		return checkInvariants(cfg, after), completedBy(cfg, iw.before, after)
	}
	if !iw.w.End(after) {
		if d := checkInvariants(cfg, after); d != nil {
			return d, nil
		}
		return &Divergence{Property: spec.PropTypeOK, Detail: "model.Watch and the invariants evaluated whole disagree (a bug of the model)"}, nil
	}
	if s := iw.w.Completes(); s >= 0 {
		return nil, []int{s}
	}
	return nil, nil
}

// snapshotLacks says what snapshot index s lacks to be complete: the
// processes that never recorded, the channels whose recording is not
// done (the state of each).
func snapshotLacks(cfg *model.Config, st *model.State, s int) string {
	var miss []string
	for p, id := range cfg.Topo.Procs {
		if !st.Recorded[s].Has(p) {
			miss = append(miss, string(id)+" never recorded")
		}
	}
	for c, x := range st.RecChan[s] {
		ch := cfg.Topo.Chans[c]
		if x != model.Done && st.Recorded[s].Has(cfg.Topo.ProcIndex(ch.To)) {
			miss = append(miss, fmt.Sprintf("%s never received its marker on %s (%s)", string(ch.To), ch, x))
		}
	}
	return strings.Join(miss, ", ")
}

// abortedSnapshots lists the snapshots aborted in st, by id order of
// the model's snapshots, each with its cause and initiator.
func abortedSnapshots(cfg *model.Config, st *model.State) []AbortedSnapshot {
	var out []AbortedSnapshot
	for s, id := range cfg.Snap {
		if len(st.AbortedBy) <= s || !model.Aborted(st, s) {
			continue
		}
		v := spec.AbortVerdict{Snap: id, Initiator: cfg.Topo.Procs[cfg.Initiator[s]]}
		for i, p := range cfg.Topo.Procs {
			if st.AbortedBy[s].Has(i) {
				v.Cause = p
			}
		}
		out = append(out, AbortedSnapshot{AbortVerdict: v})
	}
	return out
}

// incompleteSnapshots lists the snapshots initiated and neither complete
// nor aborted in st, with what each lacks.
func incompleteSnapshots(cfg *model.Config, st *model.State) []IncompleteSnapshot {
	var out []IncompleteSnapshot
	for s, id := range cfg.Snap {
		aborted := len(st.AbortedBy) > s && model.Aborted(st, s)
		if model.Initiated(cfg, st, s) && !model.Complete(cfg, st, s) && !aborted {
			out = append(out, IncompleteSnapshot{Snap: id, Lacks: snapshotLacks(cfg, st, s)})
		}
	}
	return out
}
