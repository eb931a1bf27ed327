package model

import "github.com/markerwave/markerwave/spec"

// Watch evaluates the invariants of tla/ChandyLamport.tla (TypeOK,
// ConsistentCut, ExactChannelState, Conservation, ChandyLamportTheorem,
// StableCatalogue: spec.Invariants, lines 262-353) along a replay, step
// by step, at the cost of what each step changed rather than of the
// whole state: a replay of a long run of many processes checks them
// after every step.
//
// Each invariant is a conjunction over processes, channels and
// snapshots; a step of the spec changes the terms of one process p, one
// channel c and, for a recording step, one snapshot s (the channels of
// p). Given that every invariant held before the step, they all hold
// after it iff the terms that read what the step changed hold, which is
// what End evaluates:
//
//   - TypeOK: proc[p], chan[c], the last of got[c], pre[s] and post[s]
//     at p and c for every s; for a recording, recProc[s][p],
//     recChan[s] and cutGot[s] on the channels into p, post[s].proc[p]
//     and the markers on the channels out of p. The actions never change
//     a function's domain, so the shapes the full TypeOK checks stay
//     those of the initial state;
//   - ConsistentCut and ExactChannelState: snapshot s on the channels
//     into and out of p, where its cut is set and its recording ends;
//   - Conservation and SnapshotReachable's equality: once, when s
//     completes (nothing they read changes afterwards: every process has
//     recorded, every recording is done);
//   - CurrentReachable: pre[s].ok and post[s].ok for every s; for a
//     complete s, post[s] at p and c against the current state (the
//     whole of it when s completes);
//   - StableCatalogue: for a complete s, each predicate of the current
//     state against the recorded and initial ones. Terminated and
//     Conserved of the current state are kept as counts updated by each
//     step, RcvdAtLeast is checked at p (at every process when s
//     completes).
//
// The model tests check Watch against the invariants evaluated whole
// after every step of random runs, and that it notices a broken term.
type Watch struct {
	cfg      *Config
	done     []int  // by snapshot: channels whose recording is done
	complete []bool // by snapshot: Complete(s)
	recTerm  []bool // by complete snapshot: Terminated(RecordedApp(s))
	recCons  []bool // by complete snapshot: Conserved(RecordedApp(s))
	initTerm bool   // Terminated(InitApp)
	initCons bool   // Conserved(InitApp)
	// CurrentApp's counts: processes whose budget is spent, application
	// messages in flight, balances plus amounts in flight.
	spent, inFlight int
	money           int64
	step            watchStep
	completes       int // the snapshot the last step completed, -1 if none
}

// watchStep is what the step between Begin and End changes.
type watchStep struct {
	proc, ch, snap int  // -1: none
	record         bool // proc records its state for snap
	closed         bool // and ch is then done (the first marker's channel)
	whole          bool // an action of another specification: check all of it
	// proc's and ch's shares of CurrentApp's counts before the step.
	spent, inFlight int
	money           int64
}

// NewWatch starts watching the replay from st, a state where every
// invariant holds (the caller checks it whole).
func NewWatch(cfg *Config, st *State) *Watch {
	ns := cfg.NumSnaps()
	w := &Watch{cfg: cfg, done: make([]int, ns), complete: make([]bool, ns), recTerm: make([]bool, ns), recCons: make([]bool, ns)}
	init := InitApp(cfg)
	w.initTerm, w.initCons = Terminated(cfg, init), Conserved(cfg, init)
	w.count(st)
	for s := range ns {
		w.done[s] = countDone(st.RecChan[s])
		if w.isComplete(st, s) {
			w.completed(st, s)
		}
	}
	return w
}

// count takes CurrentApp's counts in st.
func (w *Watch) count(st *State) {
	for p, l := range st.Proc {
		w.spent += w.procSpent(st, p)
		w.money += l.Bal
	}
	for c := range st.Chan {
		n, m := chanApps(st.Chan[c])
		w.inFlight, w.money = w.inFlight+n, w.money+m
	}
}

// countDone is the number of channels whose recording is done.
func countDone(rc []Status) int {
	n := 0
	for _, x := range rc {
		if x == Done {
			n++
		}
	}
	return n
}

// procSpent is 1 if process p has spent its budget in st, else 0.
func (w *Watch) procSpent(st *State, p int) int {
	if st.Proc[p].Sent == w.cfg.Budget[p] {
		return 1
	}
	return 0
}

// chanApps counts the application messages of a channel and their
// amounts (AppOnly, line 98, and SeqSum, lines 90-91).
func chanApps(ms []Msg) (n int, amt int64) {
	for _, m := range ms {
		if m.Kind == KindApp {
			n, amt = n+1, amt+m.Amt
		}
	}
	return n, amt
}

// isComplete is Complete(s) (line 108) from the counts.
func (w *Watch) isComplete(st *State, s int) bool {
	return st.Recorded[s].Len() == w.cfg.NumProcs() && w.done[s] == w.cfg.NumChans()
}

// Begin notes action a, about to be taken from st (before st changes:
// an in-place step changes it). The terms are those of the actions of
// tla/ChandyLamport.tla (SendApp, RecvApp, RecvAppAt, Initiate,
// RecvMarker); after any other action End evaluates the invariants whole.
func (w *Watch) Begin(st *State, a Action) {
	d := watchStep{proc: -1, ch: -1, snap: -1}
	if w.instance(a) {
		w.note(st, a, &d)
	} else {
		d.whole = true // not an instance of the spec's actions: End checks all
	}
	d.spent, d.inFlight, d.money = w.shares(st, d)
	w.step = d
}

// instance reports whether a's channel and snapshot are the model's.
func (w *Watch) instance(a Action) bool {
	return a.Chan >= 0 && a.Chan < w.cfg.NumChans() && a.Snap >= 0 && a.Snap < max(w.cfg.NumSnaps(), 1)
}

// note sets in d what action a, about to be taken from st, changes.
func (w *Watch) note(st *State, a Action, d *watchStep) {
	cfg := w.cfg
	switch a.Kind {
	case ActSendApp:
		d.proc, d.ch = cfg.from[a.Chan], a.Chan
	case ActRecvApp, ActRecvAppAt:
		d.proc, d.ch = cfg.to[a.Chan], a.Chan
	case ActInitiate:
		d.proc, d.snap, d.record = cfg.Initiator[a.Snap], a.Snap, true
	case ActRecvMarker:
		d.proc, d.ch = cfg.to[a.Chan], a.Chan
		if q := st.Chan[a.Chan]; len(q) > 0 && q[0].Kind == KindMarker {
			d.snap = q[0].Snap
			d.record = !st.Recorded[d.snap].Has(d.proc)
			d.closed = d.record
		}
	default:
		d.whole = true
	}
}

// shares are the step's process's and channel's shares of CurrentApp's
// counts in st.
func (w *Watch) shares(st *State, d watchStep) (spent, inFlight int, money int64) {
	if d.proc >= 0 {
		spent, money = w.procSpent(st, d.proc), st.Proc[d.proc].Bal
	}
	if d.ch >= 0 {
		n, m := chanApps(st.Chan[d.ch])
		inFlight, money = n, money+m
	}
	return spent, inFlight, money
}

// End reports whether every invariant holds in st, the state the action
// noted by Begin led to.
func (w *Watch) End(st *State) bool {
	d := w.step
	if d.whole {
		return w.endWhole(st)
	}
	spent, inFlight, money := w.shares(st, d)
	w.spent += spent - d.spent
	w.inFlight += inFlight - d.inFlight
	w.money += money - d.money
	if !w.typeOK(st, d) || !w.cuts(st, d) {
		return false
	}
	if d.snap >= 0 && (!d.record || d.closed) {
		w.done[d.snap]++ // a second marker, or the first one's channel: d.ch is done
	}
	return w.completion(st, d) && w.snapshots(st, d)
}

// endWhole is End after an action of another specification: the
// invariants evaluated whole, the counts taken afresh.
func (w *Watch) endWhole(st *State) bool {
	was := w.complete
	*w = *NewWatch(w.cfg, st)
	w.completes = -1
	for s := range was {
		if !was[s] && w.complete[s] {
			w.completes = s
		}
	}
	return InvariantsHold(w.cfg, st)
}

// completion checks, if the step completed its snapshot, the terms that
// hold from then on (completed).
func (w *Watch) completion(st *State, d watchStep) bool {
	w.completes = -1
	if d.snap < 0 || w.complete[d.snap] || !w.isComplete(st, d.snap) {
		return true
	}
	w.completes = d.snap
	return w.completed(st, d.snap)
}

// Completes is the snapshot index the step End checked completed, -1 if
// none.
func (w *Watch) Completes() int { return w.completes }

// typeOK is TypeOK (lines 267-281) on the terms the step changed.
func (w *Watch) typeOK(st *State, d watchStep) bool {
	if d.proc >= 0 && !natLocal(st.Proc[d.proc]) || d.ch >= 0 && !w.chanOK(st, d.ch) {
		return false
	}
	for s := range st.Pre {
		if !w.shadowAt(st.Pre[s], d) || !w.shadowAt(st.Post[s], d) {
			return false
		}
	}
	return !d.record || w.recordOK(st, d.proc, d.snap)
}

// chanOK is TypeOK's chan[c] and, its last number the only one the step
// may have added, got[c].
func (w *Watch) chanOK(st *State, c int) bool {
	g := st.Got[c]
	return chansOK(w.cfg, st.Chan[c:c+1]) && (len(g) == 0 || g[len(g)-1] != 0)
}

// shadowAt is shadowOK (sh \in Shadow) at the step's process and channel.
func (w *Watch) shadowAt(sh Shadow, d watchStep) bool {
	if d.proc >= 0 && !natLocal(sh.Proc[d.proc]) {
		return false
	}
	if d.ch >= 0 {
		for _, m := range sh.Chan[d.ch] {
			if !w.cfg.isAmount(m.Amt) {
				return false
			}
		}
	}
	return true
}

// recordOK is TypeOK's snapshot conjuncts (lines 274-281) on what q's
// recording for s set, and the markers q sent.
func (w *Watch) recordOK(st *State, q, s int) bool {
	cfg := w.cfg
	if !natLocal(st.RecProc[s][q]) || !natLocal(st.Post[s].Proc[q]) {
		return false
	}
	for _, c := range cfg.in[q] {
		if st.RecChan[s][c] > Done || !cfg.allNonzero(st.CutGot[s][c]) {
			return false
		}
	}
	return w.markersOK(st, q)
}

// markersOK: the markers q just sent are messages (TypeOK's chan).
func (w *Watch) markersOK(st *State, q int) bool {
	for _, c := range w.cfg.out[q] {
		if ms := st.Chan[c]; len(ms) > 0 && !w.cfg.msgOK(ms[len(ms)-1]) {
			return false
		}
	}
	return true
}

// cuts is ConsistentCut (lines 287-292) and ExactChannelState (lines
// 297-302) on the channels of a recording process, and on the channel a
// second marker ends the recording of.
func (w *Watch) cuts(st *State, d watchStep) bool {
	cfg := w.cfg
	if d.snap < 0 {
		return true
	}
	if !d.record {
		return exactChan(st, d.snap, d.ch)
	}
	for _, cs := range [][]int{cfg.in[d.proc], cfg.out[d.proc]} {
		for _, c := range cs {
			if !consistentChan(cfg, st, d.snap, c) || !exactChan(st, d.snap, c) {
				return false
			}
		}
	}
	return true
}

// consistentChan is ConsistentCut's term for snapshot s and channel c.
func consistentChan(cfg *Config, st *State, s, c int) bool {
	if !(st.Recorded[s].Has(cfg.from[c]) && st.Recorded[s].Has(cfg.to[c])) {
		return true
	}
	g := st.CutGot[s][c]
	return uint64(len(g)) <= st.CutSent[s][c] && cfg.countsFromOne(g)
}

// exactChan is ExactChannelState's term for snapshot s and channel c.
func exactChan(st *State, s, c int) bool {
	if st.RecChan[s][c] != Done {
		return true
	}
	k := int64(len(st.CutGot[s][c]))
	rec := st.RecMsgs[s][c]
	want := max(int64(st.CutSent[s][c])-k, 0) // 1..(cutSent - k) is empty when negative
	if int64(len(rec)) != want {
		return false
	}
	for j, m := range rec {
		if int64(m.Seq) != k+int64(j)+1 {
			return false
		}
	}
	return true
}

// completed checks the terms of snapshot s that hold from when it
// completes in st (Conservation, SnapshotReachable, CurrentReachable,
// StableCatalogue, whole) and notes what StableCatalogue needs of its
// recorded state.
func (w *Watch) completed(st *State, s int) bool {
	cfg := w.cfg
	w.complete[s] = true
	rec := RecordedApp(st, s)
	w.recTerm[s], w.recCons[s] = Terminated(cfg, rec), Conserved(cfg, rec)
	c1, s1 := OnlySnapshot(cfg, st, s)
	return Conservation(c1, s1) && SnapshotReachable(c1, s1) && CurrentReachable(c1, s1) && StableCatalogue(c1, s1)
}

// OnlySnapshot is the model and state restricted to snapshot index s, so
// that an invariant is evaluated for s alone (the conformance checks name
// the snapshot an invariant fails for this way).
func OnlySnapshot(cfg *Config, st *State, s int) (*Config, *State) {
	c := *cfg
	c.Snap, c.Initiator = cfg.Snap[s:s+1], cfg.Initiator[s:s+1]
	n := *st
	n.Recorded, n.RecProc, n.RecChan, n.RecMsgs = st.Recorded[s:s+1], st.RecProc[s:s+1], st.RecChan[s:s+1], st.RecMsgs[s:s+1]
	n.CutSent, n.CutGot, n.Pre, n.Post = st.CutSent[s:s+1], st.CutGot[s:s+1], st.Pre[s:s+1], st.Post[s:s+1]
	return &c, &n
}

// snapshots is the ChandyLamportTheorem and StableCatalogue terms the
// step changed: every shadow's ok; for every complete snapshot, post[s]
// against the current state at the step's process and channel, and the
// stable predicates.
func (w *Watch) snapshots(st *State, d watchStep) bool {
	cfg := w.cfg
	curTerm := w.spent == cfg.NumProcs() && w.inFlight == 0
	curCons := w.money == cfg.totalMoney
	for s := range st.Pre {
		if !st.Pre[s].OK || !st.Post[s].OK || w.complete[s] && !w.stillHolds(st, s, d, curTerm, curCons) {
			return false
		}
	}
	return true
}

// stillHolds is, for complete snapshot s, post[s] against the current
// state at the step's process and channel, and the stable predicates
// (curTerm and curCons: Terminated and Conserved of the current state).
func (w *Watch) stillHolds(st *State, s int, d watchStep, curTerm, curCons bool) bool {
	cfg := w.cfg
	if !w.currentAt(st, st.Post[s], d) ||
		!implied(w.recTerm[s], curTerm, w.initTerm) || !implied(w.recCons[s], curCons, w.initCons) {
		return false
	}
	if d.proc < 0 {
		return true
	}
	rec, cur := st.RecProc[s][d.proc].Rcvd, st.Proc[d.proc].Rcvd
	return !rcvdGap(cfg, rec, cur) && !rcvdGap(cfg, 0, rec)
}

// currentAt is post = CurrentApp (CurrentReachable, lines 321-323) at
// the step's process and channel.
func (w *Watch) currentAt(st *State, post Shadow, d watchStep) bool {
	if d.proc >= 0 && post.Proc[d.proc] != st.Proc[d.proc] {
		return false
	}
	return d.ch < 0 || sameApps(st.Chan[d.ch], post.Chan[d.ch])
}

// sameApps reports AppOnly(ms) = apps (line 98).
func sameApps(ms []Msg, apps []spec.AppMsg) bool {
	j := 0
	for _, m := range ms {
		if m.Kind != KindApp {
			continue
		}
		if j >= len(apps) || apps[j] != m.AppMsg {
			return false
		}
		j++
	}
	return j == len(apps)
}

// InvariantsHold is the spec invariants (spec.Invariants) evaluated
// whole on st, for Watch's tests and callers that step by hand.
func InvariantsHold(cfg *Config, st *State) bool {
	for _, name := range spec.Invariants {
		if f := invariantFuncs[name]; !f(cfg, st) {
			return false
		}
	}
	return true
}
