package model

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// This file mirrors the actions of tla/ChandyLamport.tla (lines 84-253)
// and of the variant modules, definition by definition. Line numbers refer
// to tla/ChandyLamport.tla unless another module is named.
//
// Every action takes the current state and returns the successor, or
// why the action is not enabled; it never modifies its input. Exported
// actions take process ids and amounts as the TLA+ operators do and return
// a *NotEnabled error naming the false conjunct; the unexported ones take
// channel and snapshot indexes, return the false Conjunct without
// allocating, and are what the explorer runs. Each action's enabling
// conjuncts are written once, in its enabled... function.

// InitLocal mirrors InitLocal == [p \in Proc |-> [bal |-> InitBal[p],
// sent |-> 0, rcvd |-> 0]] (line 100).
func InitLocal(cfg *Config) []spec.LocalState {
	l := make([]spec.LocalState, cfg.NumProcs())
	for p := range l {
		l[p] = spec.LocalState{Bal: cfg.InitBal[p]}
	}
	return l
}

// InitApp mirrors InitApp == [ok |-> TRUE, proc |-> InitLocal, chan |->
// [c \in Chan |-> <<>>]] (line 101).
func InitApp(cfg *Config) Shadow {
	return Shadow{OK: true, Proc: InitLocal(cfg), Chan: make([][]spec.AppMsg, cfg.NumChans())}
}

// Init mirrors Init (lines 143-155): the single initial state.
func Init(cfg *Config) *State {
	st := newState(cfg, InitLocal(cfg), func() Shadow { return InitApp(cfg) })
	if cfg.Faults() {
		initFaults(cfg, st) // InitF, tla/ChandyLamportFaults.tla lines 51-59
	}
	return st
}

// newState allocates a state of cfg's shape, the one place a state is
// built whole (Init and, with the faults, restart): the processes' state
// proc, empty channels, and every snapshot's variables as Init sets them
// (lines 148-155): nothing recorded, every channel idle, empty cuts,
// pre[s] = pre() and post[s] = InitApp.
func newState(cfg *Config, proc []spec.LocalState, pre func() Shadow) *State {
	nc, ns := cfg.NumChans(), cfg.NumSnaps()
	st := &State{
		Proc:     proc,
		Chan:     make([][]Msg, nc),
		NSent:    make([]uint64, nc),
		Got:      make([][]uint64, nc),
		Recorded: make([]ProcSet, ns),
		RecProc:  make([][]spec.LocalState, ns),
		RecChan:  make([][]Status, ns),
		RecMsgs:  make([][][]spec.AppMsg, ns),
		CutSent:  make([][]uint64, ns),
		CutGot:   make([][][]uint64, ns),
		Pre:      make([]Shadow, ns),
		Post:     make([]Shadow, ns),
	}
	for s := 0; s < ns; s++ {
		st.RecProc[s] = InitLocal(cfg)
		st.RecChan[s] = make([]Status, nc)
		st.RecMsgs[s] = make([][]spec.AppMsg, nc)
		st.CutSent[s] = make([]uint64, nc)
		st.CutGot[s] = make([][]uint64, nc)
		st.Pre[s] = pre()
		st.Post[s] = InitApp(cfg)
	}
	return st
}

// Initiated mirrors Initiated(s) == Initiator[s] \in recorded[s] (line
// 107); s is a snapshot index.
func Initiated(cfg *Config, st *State, s int) bool {
	return st.Recorded[s].Has(cfg.Initiator[s])
}

// Complete mirrors Complete(s) == recorded[s] = Proc /\ \A c \in Chan :
// recChan[s][c] = "done" (line 108); s is a snapshot index.
func Complete(cfg *Config, st *State, s int) bool {
	if st.Recorded[s].Len() != cfg.NumProcs() {
		return false
	}
	for _, x := range st.RecChan[s] {
		if x != Done {
			return false
		}
	}
	return true
}

// SentBeforeCut mirrors SentBeforeCut(s, c, m) == c[1] \notin recorded[s]
// \/ m.seq <= cutSent[s][c] (line 111): message m sent on channel c was
// sent before c's sender recorded for snapshot s.
func SentBeforeCut(cfg *Config, st *State, s, c int, m spec.AppMsg) bool {
	return !st.Recorded[s].Has(cfg.from[c]) || m.Seq <= st.CutSent[s][c]
}

// ShadowSend mirrors ShadowSend(sh, c, m) (lines 116-121): replay sending m
// on channel c in shadow sh; if the send is not enabled there, ok becomes
// FALSE and nothing else changes.
func ShadowSend(cfg *Config, sh Shadow, c int, m spec.AppMsg) Shadow {
	return shadowSend(cfg, sh, c, m, false)
}

// shadowSend is ShadowSend, updating sh in place if inPlace.
func shadowSend(cfg *Config, sh Shadow, c int, m spec.AppMsg, inPlace bool) Shadow {
	p := cfg.from[c]
	if sh.Proc[p].Sent < cfg.Budget[p] && sh.Proc[p].Bal >= m.Amt {
		n := sh.update(inPlace)
		n.Proc[p].Bal -= m.Amt
		n.Proc[p].Sent++
		n.Chan[c] = push(inPlace, sh.Chan[c], m)
		return n
	}
	return Shadow{OK: false, Proc: sh.Proc, Chan: sh.Chan}
}

// ShadowRecv mirrors ShadowRecv(sh, c, m) (lines 123-128): replay
// receiving m from the head of channel c in shadow sh; if m is not at the
// head there, ok becomes FALSE and nothing else changes.
func ShadowRecv(cfg *Config, sh Shadow, c int, m spec.AppMsg) Shadow {
	return shadowRecv(cfg, sh, c, m, false)
}

// shadowRecv is ShadowRecv, updating sh in place if inPlace.
func shadowRecv(cfg *Config, sh Shadow, c int, m spec.AppMsg, inPlace bool) Shadow {
	if len(sh.Chan[c]) > 0 && sh.Chan[c][0] == m {
		q := cfg.to[c]
		n := sh.update(inPlace)
		n.Proc[q].Bal += m.Amt
		n.Proc[q].Rcvd++
		n.Chan[c] = sh.Chan[c][1:len(sh.Chan[c]):len(sh.Chan[c])]
		return n
	}
	return Shadow{OK: false, Proc: sh.Proc, Chan: sh.Chan}
}

// postRecv mirrors PostRecv(s, c, m) (lines 134-140): the post shadow of
// snapshot s after q = c[2] (already recorded) receives m on c. While c is
// being recorded the message was taken into the recording, so it must have
// been sent before the cut and is applied to q alone; otherwise it is an
// ordinary ShadowRecv.
func postRecv(cfg *Config, st *State, s, c int, m spec.AppMsg) Shadow {
	post := st.Post[s]
	if st.RecChan[s][c] == Recording {
		if SentBeforeCut(cfg, st, s, c, m) {
			n := Shadow{OK: post.OK, Proc: upd(st.inPlace, post.Proc), Chan: post.Chan}
			q := cfg.to[c]
			n.Proc[q].Bal += m.Amt
			n.Proc[q].Rcvd++
			return n
		}
		return Shadow{OK: false, Proc: post.Proc, Chan: post.Chan}
	}
	return shadowRecv(cfg, post, c, m, st.inPlace)
}

// enabledSendApp mirrors the enabling conjuncts of SendApp(p, q, a)
// (lines 162-163) for c = <<p, q>>.
func enabledSendApp(cfg *Config, st *State, c int, a int64) Conjunct {
	p := cfg.from[c]
	switch {
	case !(st.Proc[p].Sent < cfg.Budget[p]):
		return BudgetSpent
	case !(st.Proc[p].Bal >= a):
		return LowBalance
	}
	return Enabled
}

// sendApp mirrors SendApp(p, q, a) (lines 159-169) for c = <<p, q>>.
func sendApp(cfg *Config, st *State, c int, a int64) (*State, Conjunct) {
	if k := enabledSendApp(cfg, st, c, a); k != Enabled {
		return nil, k
	}
	p := cfg.from[c]
	m := spec.AppMsg{Amt: a, Seq: st.NSent[c] + 1} // m == AppMsg(a, nSent[c] + 1)
	in := st.inPlace
	n := *st
	n.Proc = upd(in, st.Proc)
	n.Proc[p].Bal -= a
	n.Proc[p].Sent++
	n.Chan = upd(in, st.Chan)
	n.Chan[c] = push(in, st.Chan[c], Msg{Kind: KindApp, AppMsg: m})
	n.NSent = upd(in, st.NSent)
	n.NSent[c]++
	n.Pre, n.Post = st.shadows()
	for s := range n.Pre {
		if st.Recorded[s].Has(p) {
			n.Pre[s] = st.Pre[s]
			n.Post[s] = shadowSend(cfg, st.Post[s], c, m, in)
		} else {
			n.Pre[s] = shadowSend(cfg, st.Pre[s], c, m, in)
			n.Post[s] = st.Post[s]
		}
	}
	return &n, Enabled
}

// SendApp mirrors SendApp(p, q, a) (lines 159-169): p transfers amount a to
// q. Not enabled when <<p, q>> is not a channel.
func SendApp(cfg *Config, st *State, p, q spec.ProcID, a int64) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		return nil, noSuchChannel(ActSendApp, fmt.Sprintf("SendApp(%q,%q,%d)", p, q, a), p, q)
	}
	return Action{Kind: ActSendApp, Chan: c, Amt: a}.Apply(cfg, st)
}

// consume mirrors Consume(p, q, i) (lines 174-182) for c = <<p, q>>: it sets
// proc', chan', got', pre' and post' in n from st; the caller decides
// recMsgs'. The caller has checked that position i holds an app message.
func consume(cfg *Config, st, n *State, c, i int) {
	q := cfg.to[c]
	m := st.Chan[c][i-1].AppMsg
	in := st.inPlace
	n.Proc = upd(in, st.Proc)
	n.Proc[q].Bal += m.Amt
	n.Proc[q].Rcvd++
	n.Chan = upd(in, st.Chan)
	n.Chan[c] = pop(in, st.Chan[c], i)
	n.Got = upd(in, st.Got)
	if in {
		n.Got[c] = append(st.Got[c], m.Seq)
	} else {
		n.Got[c] = cfg.appendNat(st.Got[c], m.Seq)
	}
	n.Pre, n.Post = st.shadows()
	for s := range n.Pre {
		if st.Recorded[s].Has(q) {
			n.Pre[s] = st.Pre[s]
			n.Post[s] = postRecv(cfg, st, s, c, m)
		} else {
			n.Pre[s] = shadowRecv(cfg, st.Pre[s], c, m, in)
			n.Post[s] = st.Post[s]
		}
	}
}

// recordInFlight mirrors RecordInFlight(c, m) (lines 186-189): m joins the
// recording of c in every snapshot in which c is being recorded.
func recordInFlight(cfg *Config, st, n *State, c int, m spec.AppMsg) {
	ns := cfg.NumSnaps()
	n.RecMsgs = st.RecMsgs
	copied := false
	for s := 0; s < ns; s++ {
		if st.RecChan[s][c] == Recording {
			if !copied {
				n.RecMsgs = upd(st.inPlace, st.RecMsgs)
				copied = true
			}
			n.RecMsgs[s] = upd(st.inPlace, st.RecMsgs[s])
			n.RecMsgs[s][c] = push(st.inPlace, st.RecMsgs[s][c], m)
		}
	}
}

// enabledRecvAt mirrors the enabling conjuncts of RecvAppAt(p, q, i)
// (lines 192-193; kind KindApp) and RecvMarkerAt(p, q, i) (lines 232-233;
// kind KindMarker) for c = <<p, q>>.
func enabledRecvAt(st *State, c, i int, kind MsgKind) Conjunct {
	switch {
	case !(1 <= i && i <= len(st.Chan[c])):
		return NoPosition
	case kind == KindApp && !(st.Chan[c][i-1].Kind == KindApp):
		return NotApp
	case kind == KindMarker && !(st.Chan[c][i-1].Kind == KindMarker):
		return NotMarker
	}
	return Enabled
}

// recvAppAt mirrors RecvAppAt(p, q, i) (lines 191-195) for c = <<p, q>>.
func recvAppAt(cfg *Config, st *State, c, i int) (*State, Conjunct) {
	if k := enabledRecvAt(st, c, i, KindApp); k != Enabled {
		return nil, k
	}
	m := st.Chan[c][i-1].AppMsg // read before consume: an in-place consume takes it off st's channel
	n := *st
	consume(cfg, st, &n, c, i)
	recordInFlight(cfg, st, &n, c, m)
	return &n, Enabled
}

// RecvAppAt mirrors RecvAppAt(p, q, i) (lines 191-195): q takes the
// application message at position i (from 1) of <<p, q>>.
func RecvAppAt(cfg *Config, st *State, p, q spec.ProcID, i int) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		return nil, noSuchChannel(ActRecvAppAt, fmt.Sprintf("RecvAppAt(%q,%q,%d)", p, q, i), p, q)
	}
	return Action{Kind: ActRecvAppAt, Chan: c, Pos: i}.Apply(cfg, st)
}

// RecvApp mirrors RecvApp(p, q) == RecvAppAt(p, q, 1) (line 198).
func RecvApp(cfg *Config, st *State, p, q spec.ProcID) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		return nil, noSuchChannel(ActRecvApp, fmt.Sprintf("RecvApp(%q,%q)", p, q), p, q)
	}
	return Action{Kind: ActRecvApp, Chan: c}.Apply(cfg, st)
}

// recordState mirrors RecordState(q, s, closed) (lines 202-213): q records
// its local state for snapshot s; channel closed (-1 for none, the spec's
// <<p, p>>) is recorded as empty and every other incoming channel of q
// starts recording. It sets recorded', recProc', recChan', cutSent',
// cutGot' and post' in n from st.
func recordState(cfg *Config, st, n *State, q, s, closed int) {
	in := st.inPlace
	n.Recorded = upd(in, st.Recorded)
	n.Recorded[s] = st.Recorded[s].With(q)
	n.RecProc = upd(in, st.RecProc)
	n.RecProc[s] = upd(in, st.RecProc[s])
	n.RecProc[s][q] = st.Proc[q]
	n.RecChan = upd(in, st.RecChan)
	rc := upd(in, st.RecChan[s])
	for _, c := range cfg.in[q] { // the channels into q, in[q]: recording but the closed one
		rc[c] = Recording
	}
	if closed >= 0 {
		rc[closed] = Done
	}
	n.RecChan[s] = rc
	n.CutSent = upd(in, st.CutSent)
	cs := upd(in, st.CutSent[s])
	for _, c := range cfg.out[q] {
		cs[c] = st.NSent[c]
	}
	n.CutSent[s] = cs
	n.CutGot = upd(in, st.CutGot)
	cg := upd(in, st.CutGot[s])
	for _, c := range cfg.in[q] {
		cg[c] = st.Got[c]
	}
	n.CutGot[s] = cg
	n.Post = upd(in, st.Post)
	post := st.Post[s]
	n.Post[s] = Shadow{OK: post.OK, Proc: upd(in, post.Proc), Chan: post.Chan}
	n.Post[s].Proc[q] = st.Proc[q]
}

// withMarkers mirrors WithMarkers(sq, q, s) (line 216): sq with a marker
// for s appended on every outgoing channel of q. sq is not modified.
func withMarkers(cfg *Config, sq [][]Msg, q, s int, inPlace bool) [][]Msg {
	n := upd(inPlace, sq)
	for _, c := range cfg.out[q] {
		n[c] = push(inPlace, sq[c], MarkerOf(s))
	}
	return n
}

// enabledInitiate mirrors the enabling conjunct of Initiate(s) (line 223)
// for snapshot index s.
func enabledInitiate(cfg *Config, st *State, s int) Conjunct {
	if st.Recorded[s].Has(cfg.Initiator[s]) { // not Initiator[s] \notin recorded[s]
		return AlreadyRecorded
	}
	return Enabled
}

// initiate mirrors Initiate(s) (lines 221-226) for snapshot index s.
func initiate(cfg *Config, st *State, s int) (*State, Conjunct) {
	if k := enabledInitiate(cfg, st, s); k != Enabled {
		return nil, k
	}
	p := cfg.Initiator[s]
	n := *st
	recordState(cfg, st, &n, p, s, -1)
	n.Chan = withMarkers(cfg, st.Chan, p, s, st.inPlace)
	return &n, Enabled
}

// Initiate mirrors Initiate(s) (lines 221-226), the Initiator Rule. Not
// enabled for an id not in Snap.
func Initiate(cfg *Config, st *State, s spec.SnapID) (*State, error) {
	si := cfg.SnapIndex(s)
	if si < 0 {
		return nil, &NotEnabled{Action: fmt.Sprintf("Initiate(%d)", s), Conjunct: NoSnap, Source: NoSnap.Source(ActInitiate),
			Why: fmt.Sprintf("snapshot %d is not in Snap", s)}
	}
	return Action{Kind: ActInitiate, Snap: si}.Apply(cfg, st)
}

// recvMarkerAt mirrors RecvMarkerAt(p, q, i) (lines 230-244) for c = <<p,
// q>>; forward is false for RecvMarkerNoForward
// (tla/ChandyLamportNoForward.tla lines 9-20), which is RecvMarkerAt(p, q,
// 1) without the WithMarkers of case 1.
func recvMarkerAt(cfg *Config, st *State, c, i int, forward bool) (*State, Conjunct) {
	if k := enabledRecvAt(st, c, i, KindMarker); k != Enabled {
		return nil, k
	}
	q := cfg.to[c]
	s := st.Chan[c][i-1].Snap
	in := st.inPlace
	rest := upd(in, st.Chan)
	rest[c] = pop(in, st.Chan[c], i)
	n := *st
	if !st.Recorded[s].Has(q) {
		// Case 1, first marker: record, c is empty, forward markers.
		recordState(cfg, st, &n, q, s, c)
		if forward {
			n.Chan = withMarkers(cfg, rest, q, s, in)
		} else {
			n.Chan = rest
		}
	} else {
		// Case 2: stop recording c; what it recorded is c's state.
		n.RecChan = upd(in, st.RecChan)
		n.RecChan[s] = upd(in, st.RecChan[s])
		n.RecChan[s][c] = Done
		n.Chan = rest
	}
	return &n, Enabled
}

// RecvMarkerAt mirrors RecvMarkerAt(p, q, i) (lines 230-244), the
// Receiving Rule for q on <<p, q>> for the marker at position i.
func RecvMarkerAt(cfg *Config, st *State, p, q spec.ProcID, i int) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		return nil, noSuchChannel(ActRecvMarkerAt, fmt.Sprintf("RecvMarkerAt(%q,%q,%d)", p, q, i), p, q)
	}
	return Action{Kind: ActRecvMarkerAt, Chan: c, Pos: i}.Apply(cfg, st)
}

// RecvMarker mirrors RecvMarker(p, q) == RecvMarkerAt(p, q, 1) (line 247).
func RecvMarker(cfg *Config, st *State, p, q spec.ProcID) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		return nil, noSuchChannel(ActRecvMarker, fmt.Sprintf("RecvMarker(%q,%q)", p, q), p, q)
	}
	return Action{Kind: ActRecvMarker, Chan: c}.Apply(cfg, st)
}

// recvAppNoRecord mirrors RecvAppNoRecord(p, q)
// (tla/ChandyLamportNoRecord.tla lines 9-13): Consume(p, q, 1) with recMsgs
// unchanged. Its enabling conjuncts (lines 10-11) are RecvAppAt's at i = 1.
func recvAppNoRecord(cfg *Config, st *State, c int) (*State, Conjunct) {
	if k := enabledRecvAt(st, c, 1, KindApp); k != Enabled {
		return nil, k
	}
	n := *st
	consume(cfg, st, &n, c, 1)
	return &n, Enabled
}

// RecvAppNoRecord mirrors RecvAppNoRecord(p, q) of
// tla/ChandyLamportNoRecord.tla (lines 9-13): like RecvApp, but the message
// never joins a recording.
func RecvAppNoRecord(cfg *Config, st *State, p, q spec.ProcID) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		return nil, noSuchChannel(ActRecvAppNoRecord, fmt.Sprintf("RecvAppNoRecord(%q,%q)", p, q), p, q)
	}
	return Action{Kind: ActRecvAppNoRecord, Chan: c}.Apply(cfg, st)
}

// lose mirrors Lose(p, q) (tla/ChandyLamportLossy.tla lines 11-14) for c
// = <<p, q>>: the message at the head of c is lost.
func lose(st *State, c int) (*State, Conjunct) {
	if len(st.Chan[c]) == 0 {
		return nil, NoPosition
	}
	n := *st
	n.Chan = upd(st.inPlace, st.Chan)
	n.Chan[c] = pop(st.inPlace, st.Chan[c], 1)
	return &n, Enabled
}

// Lose mirrors Lose(p, q) of tla/ChandyLamportLossy.tla (lines 11-14):
// the network loses the message at the head of <<p, q>>.
func Lose(cfg *Config, st *State, p, q spec.ProcID) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		return nil, noSuchChannel(ActLose, fmt.Sprintf("Lose(%q,%q)", p, q), p, q)
	}
	return Action{Kind: ActLose, Chan: c}.Apply(cfg, st)
}

// RecvMarkerNoForward mirrors RecvMarkerNoForward(p, q) of
// tla/ChandyLamportNoForward.tla (lines 9-20): like RecvMarker, but case 1
// sends no markers. Its enabling conjuncts (lines 11-12) are
// RecvMarkerAt's at i = 1.
func RecvMarkerNoForward(cfg *Config, st *State, p, q spec.ProcID) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		return nil, noSuchChannel(ActRecvMarkerNoForward, fmt.Sprintf("RecvMarkerNoForward(%q,%q)", p, q), p, q)
	}
	return Action{Kind: ActRecvMarkerNoForward, Chan: c}.Apply(cfg, st)
}
