package conformance

import (
	"fmt"
	"sort"
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
	// End is the implementation's state at the end of the run. Nil:
	// derived from the events (last states, messages sent and not received).
	End *spec.GlobalState
}

// Violation is a run property that fails for one snapshot.
type Violation struct {
	Property spec.Property // an invariant of spec.Invariants, or spec.CheckCompleteClaim
	Snap     spec.SnapID
	Detail   string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s (snapshot %d): %s", v.Property, v.Snap, v.Detail)
}

// runMsg is one application message: its send and (if any) its receive,
// as positions in the sender's and receiver's own event lists.
type runMsg struct {
	spec.AppMsg
	sendPos, recvPos int // -1 for none
}

// analysis indexes a run's events.
type analysis struct {
	r      Run
	pos    []int                      // pos[i]: event i's position in its process's list
	msgs   map[spec.Channel][]*runMsg // by channel, in send order
	bySeq  map[spec.Channel]map[uint64]*runMsg
	last   map[spec.ProcID]spec.LocalState
	budget map[spec.ProcID]int
	init   spec.GlobalState
	snaps  []spec.SnapID
	bad    []string // malformed message numbering
}

func analyse(r Run) *analysis {
	a := &analysis{r: r, pos: make([]int, len(r.Events)), msgs: map[spec.Channel][]*runMsg{}, bySeq: map[spec.Channel]map[uint64]*runMsg{},
		last: map[spec.ProcID]spec.LocalState{}, budget: map[spec.ProcID]int{}}
	a.init = spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
	for _, p := range r.Topo.Procs {
		l := spec.LocalState{Bal: r.InitBal[p]}
		a.init.Procs[p], a.last[p] = l, l
		if r.Budget != nil {
			a.budget[p] = r.Budget[p]
		}
	}
	for _, c := range r.Topo.Chans {
		a.bySeq[c] = map[uint64]*runMsg{}
	}
	n := map[spec.ProcID]int{}
	seen := map[spec.SnapID]bool{}
	for i, e := range r.Events {
		a.pos[i] = n[e.Proc]
		n[e.Proc]++
		a.last[e.Proc] = e.After
		c := e.Chan()
		switch e.Action {
		case spec.SendApp:
			if r.Budget == nil {
				a.budget[e.Proc]++
			}
			m := &runMsg{AppMsg: spec.AppMsg{Amt: e.Amount, Seq: e.Msg}, sendPos: a.pos[i], recvPos: -1}
			if a.bySeq[c] == nil || a.bySeq[c][e.Msg] != nil || e.Msg != uint64(len(a.msgs[c])+1) {
				a.bad = append(a.bad, fmt.Sprintf("%s sends %d#%d on %s out of sequence", string(e.Proc), e.Amount, e.Msg, c))
				continue
			}
			a.msgs[c] = append(a.msgs[c], m)
			a.bySeq[c][e.Msg] = m
		case spec.RecvApp:
			if m := a.bySeq[c][e.Msg]; m != nil && m.recvPos < 0 {
				m.recvPos = a.pos[i]
			}
		case spec.Initiate, spec.RecvMarker:
			if !seen[e.Snap] {
				seen[e.Snap] = true
				a.snaps = append(a.snaps, e.Snap)
			}
		}
	}
	for s := range r.Recorded {
		if !seen[s] {
			a.snaps = append(a.snaps, s)
		}
	}
	sort.Slice(a.snaps, func(i, j int) bool { return a.snaps[i] < a.snaps[j] })
	return a
}

// cutOf is where each process recorded for s: the position of its first
// Initiate(s) or RecvMarker of s (-1 if it never recorded), and the
// position of the receive of s's marker on each channel (-1 if none).
type cutOf struct {
	at     map[spec.ProcID]int
	closed map[spec.Channel]int
	// recvs[c] lists the application messages received on c, by position.
	recvs map[spec.Channel][]recvAt
}

type recvAt struct {
	pos int
	msg spec.AppMsg
}

func (a *analysis) cut(s spec.SnapID) cutOf {
	k := cutOf{at: map[spec.ProcID]int{}, closed: map[spec.Channel]int{}, recvs: map[spec.Channel][]recvAt{}}
	for _, p := range a.r.Topo.Procs {
		k.at[p] = -1
	}
	for _, c := range a.r.Topo.Chans {
		k.closed[c] = -1
	}
	for i, e := range a.r.Events {
		switch {
		case e.Action == spec.RecvApp:
			k.recvs[e.Chan()] = append(k.recvs[e.Chan()], recvAt{a.pos[i], spec.AppMsg{Amt: e.Amount, Seq: e.Msg}})
		case e.Snap != s:
		case e.Action == spec.Initiate || e.Action == spec.RecvMarker:
			if k.at[e.Proc] < 0 {
				k.at[e.Proc] = a.pos[i]
			}
			if e.Action == spec.RecvMarker && k.closed[e.Chan()] < 0 {
				k.closed[e.Chan()] = a.pos[i]
			}
		}
	}
	return k
}

// missing lists what keeps s from being complete in the events.
func (k cutOf) missing(t *spec.Topology) []string {
	var out []string
	for _, p := range t.Procs {
		if k.at[p] < 0 {
			out = append(out, string(p)+" never recorded")
		}
	}
	for _, c := range t.Chans {
		if k.closed[c] < 0 {
			out = append(out, "no marker received on "+c.String())
		}
	}
	return out
}

// derived is the recorded state of s as the events tell it.
func (a *analysis) derived(k cutOf) spec.GlobalState {
	g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
	for _, p := range a.r.Topo.Procs {
		g.Procs[p] = a.stateBefore(p, k.at[p])
	}
	for _, c := range a.r.Topo.Chans {
		var ms []spec.AppMsg
		for _, rv := range k.recvs[c] {
			if rv.pos > k.at[c.To] && rv.pos < k.closed[c] {
				ms = append(ms, rv.msg)
			}
		}
		if len(ms) > 0 {
			g.Chans[c] = ms
		}
	}
	return g
}

// stateBefore is p's state before its step at position pos.
func (a *analysis) stateBefore(p spec.ProcID, pos int) spec.LocalState {
	l := a.init.Procs[p]
	i := 0
	for _, e := range a.r.Events {
		if e.Proc != p {
			continue
		}
		if i == pos {
			break
		}
		l = e.After
		i++
	}
	return l
}

// end is the state at the end of the run as the events tell it.
func (a *analysis) end() spec.GlobalState {
	g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
	for p, l := range a.last {
		g.Procs[p] = l
	}
	for c, ms := range a.msgs {
		for _, m := range ms {
			if m.recvPos < 0 {
				g.Chans[c] = append(g.Chans[c], m.AppMsg)
			}
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
// It also checks that the implementation reported exactly the snapshots
// the events complete (Complete). Violations come by snapshot, then in
// the order above.
func CheckRun(r Run) []Violation {
	if r.Topo == nil {
		return []Violation{{Property: spec.CheckWellFormed, Detail: "run has no topology"}}
	}
	a := analyse(r)
	var out []Violation
	if len(a.bad) > 0 {
		out = append(out, Violation{Property: spec.CheckWellFormed, Detail: strings.Join(a.bad, "; ")})
	}
	end := a.end()
	if r.End != nil {
		end = *r.End
	}
	for _, s := range a.snaps {
		k := a.cut(s)
		miss := k.missing(r.Topo)
		rec, claimed := r.Recorded[s]
		if r.Recorded == nil {
			rec, claimed = a.derived(k), len(miss) == 0
		}
		switch {
		case claimed && len(miss) > 0:
			out = append(out, Violation{spec.CheckCompleteClaim, s, "the implementation reports it complete, but in its events " + strings.Join(miss, ", ")})
			continue
		case !claimed && len(miss) == 0:
			out = append(out, Violation{spec.CheckCompleteClaim, s, "the events complete it, but the implementation reported no recorded state"})
			continue
		case !claimed:
			continue
		}
		add := func(prop spec.Property, detail string) {
			if detail != "" {
				out = append(out, Violation{prop, s, detail})
			}
		}
		orphans, inexact := a.reportedCut(k, s, rec)
		add(spec.PropConsistentCut, joinDetails(a.consistentCut(k), orphans))
		add(spec.PropExactChannelState, joinDetails(a.exactChannels(k, rec), inexact))
		add(spec.PropConservation, a.conservation(rec))
		add(spec.PropChandyLamportTheorem, a.theorem(k, rec, end))
		add(spec.PropStableCatalogue, a.stable(rec, end))
	}
	return out
}

// reportedCut checks snapshot s's reported cut seqs, if any: against the
// events (what the sender had sent and the receiver had received when
// each recorded: a difference is a cut restore would resume at the wrong
// seq) and against the recorded messages (spec.RecordedSnapshot.CutProblems).
// It returns the ConsistentCut and the ExactChannelState problems.
func (a *analysis) reportedCut(k cutOf, s spec.SnapID, rec spec.GlobalState) (consistent, exact string) {
	cut, ok := a.r.Cuts[s]
	if !ok {
		return "", ""
	}
	var bad []string
	for _, c := range a.r.Topo.Chans {
		var want spec.ChanCut
		for _, m := range a.msgs[c] {
			if m.sendPos < k.at[c.From] {
				want.Sent++
			}
		}
		for _, rv := range k.recvs[c] {
			if rv.pos < k.at[c.To] {
				want.Got++
			}
		}
		got, ok := cut[c]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s has no reported cut seqs, the events say %s", c, want))
		case got != want:
			bad = append(bad, fmt.Sprintf("%s's reported cut seqs are %s, the events say %s (%s sent %d before recording, %s received %d): restore would resume %s at the wrong seq",
				c, got, want, string(c.From), want.Sent, string(c.To), want.Got, c))
		}
	}
	r := spec.RecordedSnapshot{Snap: s, Chans: rec.Chans, Cut: cut}
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

func (a *analysis) consistentCut(k cutOf) string {
	var bad []string
	for _, c := range a.r.Topo.Chans {
		p, q := c.From, c.To
		want := uint64(1)
		for _, rv := range k.recvs[c] {
			if rv.pos >= k.at[q] {
				break
			}
			m := a.bySeq[c][rv.msg.Seq]
			switch {
			case m == nil:
				bad = append(bad, fmt.Sprintf("%s received %d#%d on %s before recording, a message %s never sent", string(q), rv.msg.Amt, rv.msg.Seq, c, string(p)))
			case m.sendPos >= k.at[p]:
				bad = append(bad, fmt.Sprintf("%s received %d#%d on %s before recording, but %s sent it after recording: an orphan", string(q), rv.msg.Amt, rv.msg.Seq, c, string(p)))
			case rv.msg.Seq != want:
				bad = append(bad, fmt.Sprintf("%s received #%d on %s before recording where #%d was next", string(q), rv.msg.Seq, c, want))
			}
			want = rv.msg.Seq + 1
		}
	}
	return strings.Join(bad, "; ")
}

func (a *analysis) exactChannels(k cutOf, rec spec.GlobalState) string {
	var bad []string
	for _, c := range a.r.Topo.Chans {
		gotBefore := map[uint64]bool{}
		for _, rv := range k.recvs[c] {
			if rv.pos < k.at[c.To] {
				gotBefore[rv.msg.Seq] = true
			}
		}
		var want []spec.AppMsg
		for _, m := range a.msgs[c] {
			if m.sendPos < k.at[c.From] && !gotBefore[m.Seq] {
				want = append(want, m.AppMsg)
			}
		}
		if got := rec.Chans[c]; !sameMsgs(got, want) {
			bad = append(bad, fmt.Sprintf("%s recorded %s, want %s (sent before %s recorded, received after %s recorded)",
				c, spec.FormatMsgs(got), spec.FormatMsgs(want), string(c.From), string(c.To)))
		}
	}
	for c, ms := range rec.Chans {
		if len(ms) > 0 && !a.r.Topo.HasChan(c) {
			bad = append(bad, fmt.Sprintf("recorded messages on %s, which is not a channel", c))
		}
	}
	return strings.Join(bad, "; ")
}

func sameMsgs(a, b []spec.AppMsg) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
func (a *analysis) theorem(k cutOf, rec, end spec.GlobalState) string {
	cfg, err := a.appModel()
	if err != nil {
		return "cannot build the model: " + err.Error()
	}
	st := model.Init(cfg)
	for part, pre := range []bool{true, false} {
		for i, e := range a.r.Events {
			if (e.Action != spec.SendApp && e.Action != spec.RecvApp) || (a.pos[i] < k.at[e.Proc]) != pre {
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
	for _, ms := range a.msgs {
		for _, m := range ms {
			if !seen[m.Amt] && m.Amt > 0 {
				seen[m.Amt] = true
				k.Amount = append(k.Amount, m.Amt)
			}
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

func (a *analysis) stable(rec, end spec.GlobalState) string {
	maxRcvd := 0
	for _, b := range a.budget {
		maxRcvd += b
	}
	var bad []string
	for _, sp := range spec.StableCatalogue(a.r.Topo.Procs, maxRcvd, a.init.Total()) {
		inRec := sp.Holds(rec, a.budget)
		switch {
		case inRec && !sp.Holds(end, a.budget):
			bad = append(bad, fmt.Sprintf("%s holds in the snapshot but not at the end", sp))
		case !inRec && sp.Holds(a.init, a.budget):
			bad = append(bad, fmt.Sprintf("%s fails in the snapshot but held at the start", sp))
		}
	}
	return strings.Join(bad, "; ")
}
