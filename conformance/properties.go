package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// Run is one execution as the implementation reports it.
type Run struct {
	Topo    *spec.Topology
	InitBal map[spec.ProcID]int64
	// Budget is TLA+ Budget; nil: each process's number of sends.
	Budget map[spec.ProcID]int
	// Events lists every step in a causally consistent order.
	Events []spec.Event
	// Recorded holds the implementation's recorded global state of every
	// snapshot it completed. Nil: derived from the events (each process's
	// state when it recorded, each channel's receives between its
	// receiver's recording and the channel's marker).
	Recorded map[spec.SnapID]spec.GlobalState
	// Cuts holds the implementation's cut seqs (spec.ChanCut) of the
	// snapshots it completed, per channel. Nil, or a snapshot left out:
	// not checked.
	Cuts map[spec.SnapID]map[spec.Channel]spec.ChanCut
	// Progress, if set, is called after each snapshot checked with the
	// number checked and the number to check.
	Progress func(done, total int)
	// End is the implementation's state at the end of the run. Nil:
	// derived from the events (last states, messages sent and not received).
	End *spec.GlobalState
}

// Violation is a run property that fails for one snapshot (Snap), or
// for the whole history of a run with restores (Snap 0: CheckHistory).
type Violation struct {
	Property spec.Property // an invariant of spec.Invariants, or spec.CheckCompleteClaim
	Snap     spec.SnapID
	Detail   string
	// Msgs lists the messages at fault, as the cut analysis
	// (spec.SnapCut) finds them: the orphans for ConsistentCut, the
	// missing and spurious messages for ExactChannelState; the
	// space-time diagram marks the same (conformance/export).
	Msgs []spec.MsgFinding
}

func (v Violation) String() string {
	if v.Snap == 0 { // a property of the whole history (CheckHistory)
		return fmt.Sprintf("%s: %s", v.Property, v.Detail)
	}
	return fmt.Sprintf("%s (snapshot %d): %s", v.Property, v.Snap, v.Detail)
}

// analysis is a run indexed for the run checks: the cut analysis of its
// events (spec.CutIndex), the states it starts and ends in, the budget.
type analysis struct {
	r      Run
	x      *spec.CutIndex
	last   map[spec.ProcID]spec.LocalState
	budget map[spec.ProcID]int
	init   spec.GlobalState
	snaps  []spec.SnapID // every snapshot the events or Recorded name, by id
}

func analyse(r Run) *analysis {
	a := &analysis{r: r, x: spec.NewCutIndex(r.Topo, r.Events), last: map[spec.ProcID]spec.LocalState{}, budget: map[spec.ProcID]int{}}
	a.init = spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
	for _, p := range r.Topo.Procs {
		l := spec.LocalState{Bal: r.InitBal[p]}
		a.init.Procs[p], a.last[p] = l, l
		if r.Budget != nil {
			a.budget[p] = r.Budget[p]
		}
	}
	for _, e := range r.Events {
		a.last[e.Proc] = e.After
		if e.Action == spec.SendApp && r.Budget == nil {
			a.budget[e.Proc]++
		}
	}
	a.snaps = append(a.snaps, a.x.Snaps...)
	for s := range r.Recorded {
		if !slices.Contains(a.x.Snaps, s) {
			a.snaps = append(a.snaps, s)
		}
	}
	slices.Sort(a.snaps)
	return a
}

// end is the state at the end of the run as the events tell it: every
// process's last state, every message sent and not received.
func (a *analysis) end() spec.GlobalState {
	g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
	for p, l := range a.last {
		g.Procs[p] = l
	}
	for _, m := range a.x.Msgs {
		if m.Send >= 0 && m.Recv < 0 {
			g.Chans[m.Chan] = append(g.Chans[m.Chan], m.AppMsg)
		}
	}
	return g
}

// CheckRun checks, on every snapshot complete in the run, the properties
// of tla/ChandyLamport.tla computed from the run's events and the
// implementation's recorded states alone (no model ghost variables):
//
//  1. ConsistentCut: no process recorded the receipt of a message its
//     sender recorded as not sent (an orphan), and the reported cut seqs
//     (Cuts) are the events': per channel, the messages sent before the
//     sender recorded and those received before the receiver recorded;
//  2. ExactChannelState: each channel's recorded messages are those sent
//     before the sender recorded and received after the receiver
//     recorded, in order, and, with cut seqs, numbers Got+1 .. Sent;
//  3. Conservation: the recorded balances and messages hold the initial
//     money (the token, in a ring);
//  4. ChandyLamportTheorem, constructively: the run's application steps
//     reordered into all pre-recording then all post-recording steps
//     (each process's order kept) replay in the model, pass through the
//     recorded state and end in the real end state;
//  5. StableCatalogue: a catalogued stable predicate that holds in the
//     snapshot holds at the end; one that fails there failed at the start.
//
// Properties 1 and 2 are spec's cut analysis (spec/cut.go) on the
// events (spec.CutIndex) and on the reported cut seqs (spec.ChanCut.Check);
// their violations list the messages at fault (Violation.Msgs). It also
// checks that the implementation reported exactly the snapshots the
// events complete (Complete). Violations come by snapshot, then in the
// order above.
func CheckRun(r Run) []Violation {
	if r.Topo == nil {
		return []Violation{{Property: spec.CheckWellFormed, Detail: "run has no topology"}}
	}
	a := analyse(r)
	var out []Violation
	if len(a.x.SendProblems) > 0 {
		out = append(out, Violation{Property: spec.CheckWellFormed, Detail: strings.Join(a.x.SendProblems, "; ")})
	}
	end := a.end()
	if r.End != nil {
		end = *r.End
	}
	for i, s := range a.snaps {
		out = append(out, a.checkSnapshot(a.x.Cut(s), end)...)
		if r.Progress != nil {
			r.Progress(i+1, len(a.snaps))
		}
	}
	return out
}

// judged is snapshot k's recorded state as CheckRun judges it: the one
// the implementation reported (Run.Recorded), or, without any reports,
// the one the events imply (spec.SnapCut.Implied). claimed says the
// implementation claims it complete (without reports: the events
// complete it); verdicts judge its channels (spec.SnapCut.JudgeReport,
// or JudgeEvents for the events' own recording).
func (a *analysis) judged(k spec.SnapCut) (rec spec.GlobalState, claimed bool, verdicts []spec.ChanVerdict) {
	if a.r.Recorded == nil {
		return k.Implied(), k.Complete(), k.JudgeEvents()
	}
	rec, claimed = a.r.Recorded[k.Snap]
	return rec, claimed, k.JudgeReport(rec.Chans)
}

// checkSnapshot checks one snapshot: that the implementation claims it
// complete exactly when the events complete it, then, if so, the
// properties in CheckRun's order.
func (a *analysis) checkSnapshot(k spec.SnapCut, end spec.GlobalState) []Violation {
	s, miss := k.Snap, k.Incomplete()
	rec, claimed, verdicts := a.judged(k)
	switch {
	case claimed && len(miss) > 0:
		return []Violation{{Property: spec.CheckCompleteClaim, Snap: s, Detail: "the implementation reports it complete, but in its events " + strings.Join(miss, ", ")}}
	case !claimed && len(miss) == 0:
		return []Violation{{Property: spec.CheckCompleteClaim, Snap: s, Detail: "the events complete it, but the implementation reported no recorded state"}}
	case !claimed:
		return nil
	}
	var out []Violation
	add := func(prop spec.Property, detail string, msgs []spec.MsgFinding) {
		if detail != "" {
			out = append(out, Violation{Property: prop, Snap: s, Detail: detail, Msgs: msgs})
		}
	}
	orphans, inexact := a.reportedCut(k, rec)
	findings := spec.Findings(verdicts)
	add(spec.PropConsistentCut, joinDetails(consistentCut(k), orphans), withStatus(findings, spec.MsgOrphan))
	add(spec.PropExactChannelState, joinDetails(exactChannels(verdicts), inexact), withStatus(findings, spec.MsgMissing, spec.MsgSpurious))
	add(spec.PropConservation, a.conservation(rec), nil)
	add(spec.PropChandyLamportTheorem, a.theorem(k, rec, end), nil)
	add(spec.PropStableCatalogue, a.stable(rec, end), nil)
	return out
}

// withStatus lists the findings with one of the statuses.
func withStatus(fs []spec.MsgFinding, sts ...spec.MsgStatus) []spec.MsgFinding {
	var out []spec.MsgFinding
	for _, f := range fs {
		if slices.Contains(sts, f.Status) {
			out = append(out, f)
		}
	}
	return out
}

// reportedCut checks snapshot k's reported cut seqs, if any: against the
// events (spec.ChanView.Cut: a difference is a cut restore would resume at
// the wrong seq) and against the recorded messages
// (spec.RecordedSnapshot.CutProblems). It returns the ConsistentCut and
// the ExactChannelState problems.
func (a *analysis) reportedCut(k spec.SnapCut, rec spec.GlobalState) (consistent, exact string) {
	cut, ok := a.r.Cuts[k.Snap]
	if !ok {
		return "", ""
	}
	var bad []string
	for _, v := range k.Chans {
		c, want := v.Chan, v.Cut
		got, ok := cut[c]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s has no reported cut seqs, the events say %s", c, want))
		case got != want:
			bad = append(bad, fmt.Sprintf("%s's reported cut seqs are %s, the events say %s (%s sent %d before recording, %s received %d): restore would resume %s at the wrong seq",
				c, got, want, string(c.From), want.Sent, string(c.To), want.Got, c))
		}
	}
	r := spec.RecordedSnapshot{Snap: k.Snap, Chans: rec.Chans, Cut: cut}
	orphans, inexact := r.CutProblems(a.r.Topo)
	for i := range orphans {
		orphans[i] = "reported cut " + orphans[i]
	}
	return joinDetails(strings.Join(bad, "; "), strings.Join(orphans, "; ")), strings.Join(inexact, "; ")
}

// joinDetails joins the non-empty details with "; ".
func joinDetails(ds ...string) string {
	var out []string
	for _, d := range ds {
		if d != "" {
			out = append(out, d)
		}
	}
	return strings.Join(out, "; ")
}

// consistentCut words ConsistentCut's failures on k, channel by channel
// in the order of the receives: the orphans (spec.ChanView.Orphans) and
// the receives out of numbering before the cut (Misnumbered).
func consistentCut(k spec.SnapCut) string {
	type at struct {
		i    int
		what string
	}
	var bad []string
	for _, v := range k.Chans {
		var ps []at
		p, q, c := string(v.Chan.From), string(v.Chan.To), v.Chan
		for _, m := range v.Orphans {
			if m.Send < 0 {
				ps = append(ps, at{m.Recv, fmt.Sprintf("%s received %d#%d on %s before recording, a message %s never sent", q, m.Amt, m.Seq, c, p)})
			} else {
				ps = append(ps, at{m.Recv, fmt.Sprintf("%s received %d#%d on %s before recording, but %s sent it after recording: an orphan", q, m.Amt, m.Seq, c, p)})
			}
		}
		for _, m := range v.Misnumbered {
			ps = append(ps, at{m.At, fmt.Sprintf("%s received #%d on %s before recording where #%d was next", q, m.Got, c, m.Want)})
		}
		slices.SortStableFunc(ps, func(x, y at) int { return x.i - y.i })
		for _, x := range ps {
			bad = append(bad, x.what)
		}
	}
	return strings.Join(bad, "; ")
}

// exactChannels words ExactChannelState's failures: every channel whose
// recorded messages are not those in flight at the cut, in order.
func exactChannels(verdicts []spec.ChanVerdict) string {
	var bad []string
	for _, v := range verdicts {
		switch {
		case v.View == nil:
			bad = append(bad, fmt.Sprintf("recorded messages on %s, which is not a channel", v.Chan))
		case !v.Exact:
			bad = append(bad, fmt.Sprintf("%s recorded %s, want %s (sent before %s recorded, received after %s recorded)",
				v.Chan, spec.FormatMsgs(v.Recorded), spec.FormatMsgs(v.Want()), string(v.Chan.From), string(v.Chan.To)))
		}
	}
	return strings.Join(bad, "; ")
}

func (a *analysis) conservation(rec spec.GlobalState) string {
	if got, want := rec.Total(), a.init.Total(); got != want {
		var inFlight int64
		for _, ms := range rec.Chans {
			for _, m := range ms {
				inFlight += m.Amt
			}
		}
		return fmt.Sprintf("the snapshot holds %d (%d in balances + %d in flight), the system holds %d", got, got-inFlight, inFlight, want)
	}
	return ""
}

// theorem executes the paper's proof: reorder, replay, compare.
func (a *analysis) theorem(k spec.SnapCut, rec, end spec.GlobalState) string {
	cfg, err := a.appModel()
	if err != nil {
		return "cannot build the model: " + err.Error()
	}
	st := model.InPlace(cfg, model.Init(cfg)) // one replay, never looked back on
	for part, pre := range []bool{true, false} {
		for i, e := range a.r.Events {
			if (e.Action != spec.SendApp && e.Action != spec.RecvApp) || (i < k.Rec[e.Proc]) != pre {
				continue
			}
			n, why := appStep(cfg, st, e)
			if n == nil {
				kind := "pre-recording"
				if !pre {
					kind = "post-recording"
				}
				return fmt.Sprintf("in the reordered run, %s step %s of %s (its step %d) is not enabled: %s", kind, e, string(e.Proc), e.Seq, why)
			}
			st = n
		}
		if part == 0 {
			if d := AppState(cfg, st).Diff(rec); d != "" {
				return "the pre-recording steps end in another state than the recorded one (reordered vs recorded): " + oneLine(d)
			}
		} else if d := AppState(cfg, st).Diff(end); d != "" {
			return "the post-recording steps end in another state than the run's (reordered vs real): " + oneLine(d)
		}
	}
	return ""
}

// appModel is the application alone: the model with no snapshots.
func (a *analysis) appModel() (*model.Config, error) {
	k := model.Constants{Topo: a.r.Topo, InitBal: map[spec.ProcID]int64{}, Budget: map[spec.ProcID]int{}, Initiator: map[spec.SnapID]spec.ProcID{}}
	seen := map[int64]bool{}
	for _, p := range a.r.Topo.Procs {
		k.InitBal[p], k.Budget[p] = a.r.InitBal[p], a.budget[p]
	}
	for _, m := range a.x.Msgs {
		if !seen[m.Amt] && m.Amt > 0 && m.Send >= 0 {
			seen[m.Amt] = true
			k.Amount = append(k.Amount, m.Amt)
		}
	}
	return model.NewConfig(k, model.VariantSpec, nil, nil)
}

// appStep takes an application event in the snapshot-free model.
func appStep(cfg *model.Config, st *model.State, e spec.Event) (*model.State, string) {
	c := cfg.ChanIndex(e.From, e.To)
	if c < 0 {
		return nil, "no such channel"
	}
	if e.Action == spec.SendApp {
		n, err := model.SendApp(cfg, st, e.From, e.To, e.Amount)
		switch {
		case err != nil:
			return nil, fmt.Sprintf("%s cannot send %d (%s)", string(e.From), e.Amount, fmtLocal(e.From, st.Proc[cfg.Topo.ProcIndex(e.From)]))
		case n.NSent[c] != e.Msg:
			return nil, fmt.Sprintf("it would be message #%d on %s, not #%d", n.NSent[c], e.Chan(), e.Msg)
		}
		return n, ""
	}
	q := st.Chan[c]
	if len(q) == 0 {
		return nil, fmt.Sprintf("%s is empty: %d#%d was not sent yet", e.Chan(), e.Amount, e.Msg)
	}
	if h := q[0].AppMsg; h.Amt != e.Amount || h.Seq != e.Msg {
		return nil, fmt.Sprintf("the head of %s is %d#%d, not %d#%d", e.Chan(), h.Amt, h.Seq, e.Amount, e.Msg)
	}
	n, _ := model.RecvApp(cfg, st, e.From, e.To)
	return n, ""
}

// stable checks the stable catalogue (spec.StableCatalogue): each
// predicate that holds in the snapshot rec holds at the end, and each
// that fails in it failed at the start. RcvdAtLeast(p, k), for 1 <= k <=
// MaxRcvd, holds in a state iff p received k or more, so the k that fail
// are those of two ranges, visited alone in the catalogue's order: the
// catalogue has a predicate per message the run received, and judging
// each made the check cost as much as the run per snapshot.
func (a *analysis) stable(rec, end spec.GlobalState) string {
	maxRcvd := 0
	for _, b := range a.budget {
		maxRcvd += b
	}
	var bad []string
	judge := func(sp spec.StablePredicate) {
		inRec := sp.Holds(rec, a.budget)
		switch {
		case inRec && !sp.Holds(end, a.budget):
			bad = append(bad, fmt.Sprintf("%s holds in the snapshot but not at the end", sp))
		case !inRec && sp.Holds(a.init, a.budget):
			bad = append(bad, fmt.Sprintf("%s fails in the snapshot but held at the start", sp))
		}
	}
	for _, sp := range spec.StableCatalogue(a.r.Topo.Procs, 0, a.init.Total()) { // Terminated, Conserved
		judge(sp)
	}
	for _, p := range a.r.Topo.Procs {
		r, e, i := rec.Procs[p].Rcvd, end.Procs[p].Rcvd, a.init.Procs[p].Rcvd
		// In the snapshot, not at the end: e < k <= r; not in the
		// snapshot, at the start: r < k <= i. Every other k is judged
		// fine by both tests.
		for _, kr := range [][2]int{{e + 1, r}, {r + 1, i}} {
			for k := max(1, kr[0]); k <= min(kr[1], maxRcvd); k++ {
				judge(spec.StablePredicate{Name: "RcvdAtLeast", Proc: p, K: k})
			}
		}
	}
	return strings.Join(bad, "; ")
}

// finish counts the snapshots complete in the replay's last state st and
// checks the run-wide properties (CheckRun) over the trace's events, the
// recorded states rec and the reported cuts. The snapshots incomplete
// are listed only when the replay reached the end of the trace: after a
// divergence at a step, st is the state before that step, and what it
// lacks the rest of the trace may well have (the step judged among it).
func (r *Report) finish(cfg *model.Config, st *model.State, tr spec.Trace, opts Options, rec map[spec.SnapID]spec.GlobalState, cuts map[spec.SnapID]reportedCut) {
	for s := range cfg.Snap {
		if model.Complete(cfg, st, s) {
			r.Snapshots++
		}
	}
	if r.Divergence == nil || r.Divergence.Step == 0 {
		r.Incomplete = incompleteSnapshots(cfg, st)
	}
	r.Aborted = abortedSnapshots(cfg, st)
	var runCuts map[spec.SnapID]map[spec.Channel]spec.ChanCut
	if len(cuts) > 0 {
		runCuts = map[spec.SnapID]map[spec.Channel]spec.ChanCut{}
		for id, k := range cuts {
			runCuts[id] = k.cut
		}
	}
	r.Violations = CheckRun(Run{Topo: tr.Header.Topology, InitBal: tr.Header.InitBal, Budget: tr.Header.Budget, Events: tr.Events, Recorded: rec, Cuts: runCuts,
		Progress: opts.SnapshotProgress})
}
