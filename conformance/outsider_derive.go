package conformance

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/markerwave/markerwave/spec"
)

// Deriving a run of the spec from an outsider run (spec.OutsiderLog):
// each node's observations become the TLA+ actions of
// tla/ChandyLamport.tla (and tla/ChandyLamportFaults.tla) they stand for,
// with everything the implementation did not log derived from the rest:
//
//   - a send is SendApp; its seq is the sender's count of messages on the
//     channel (from the restored cut after a restore), its id that count
//     when the log gives none;
//   - a recv is RecvApp of the message its id names, else of the
//     channel's oldest message not yet received (FIFO), with that
//     message's amount when the log gives none;
//   - a node's first observation of snapshot s is its recording point: a
//     record before any marker of s is Initiate(s); a first marker_recv is
//     RecvMarker with first (the Receiving Rule's case 1), and a later
//     record only reports the state recorded; every later marker_recv is
//     case 2. marker_send lines are no step of the spec (the spec sends
//     the markers in the recording step): they are checked against it
//     (MarkerSent);
//   - the after states and counters follow the bank's arithmetic from the
//     initial balances; the vector clocks follow the sends and receives;
//   - the run's order is a causal merge of the nodes' orders: a receive
//     after its send, a marker after its sender's recording point.
//
// Every field the log gives instead is used as given, so the replay
// checks it: seq, first and after go into the event, the cut counts into
// the recorded snapshot; step is compared with the derived one here (a
// difference is bad input, named by line and field), and vc with the
// clocks of the logged steps in mergeDerived (checkGiven says what must
// hold; a clock that fails is bad input, named by line, field and entry).

// obsAt is one observation and where it was read.
type obsAt struct {
	ev   spec.OutsiderEvent
	file string
	line int
}

// where names an observation's place, for errors.
func (o obsAt) where() string { return placeName(o.file, o.line) }

// dEvent is a derived step of the spec, with its observation and the
// cross-node step it must follow.
type dEvent struct {
	e    spec.Event
	obs  obsAt
	step int // the node's observation number (from 1)
	dep  depKey
	// produces names what this step lets others take: a send's message,
	// a recording step's markers.
	produces depKey
	vc       []uint64 // as logged, nil if not
	after    bool     // the after state is the implementation's own
	// inserted: a marker receipt the audit placed (insertMarkers), no
	// observation of the log.
	inserted bool
	// lo is the clock of the logged steps (mergeDerived): as the derived
	// clock, without the inserted receipts' ticks and merges.
	lo []uint64
	// tail are the observations after this step that are no step of the
	// spec (marker_send lines, a record after the first marker) and give
	// a clock, checked against this step's (checkGiven).
	tail []obsAt
}

// depKey is a causal dependency: message seq on channel c (marker: the
// markers of snapshot snap sent on c.From's channels).
type depKey struct {
	c    spec.Channel
	seq  uint64
	snap spec.SnapID
	ok   bool
}

// sentMsg is a message sent on a channel: its seq and amount.
type sentMsg struct {
	seq    uint64
	amount int64
}

// snapCut is what the derivation knows of one snapshot at its
// recording points: each process's derived state and counters, each
// channel's count of messages sent (at the sender's point) and received
// (at the receiver's point), and where each process recorded.
type snapCut struct {
	state map[spec.ProcID]spec.LocalState
	sent  map[spec.Channel]uint64
	got   map[spec.Channel]uint64
	at    map[spec.ProcID]int // the node's step of its recording point
	// logged is each process's record observation, if it logged one.
	logged map[spec.ProcID]obsAt
}

func newSnapCut() *snapCut {
	return &snapCut{state: map[spec.ProcID]spec.LocalState{}, sent: map[spec.Channel]uint64{}, got: map[spec.Channel]uint64{},
		at: map[spec.ProcID]int{}, logged: map[spec.ProcID]obsAt{}}
}

// snapNames maps the implementation's snapshot ids to the spec's: a
// positive integer id is itself, any other (0, a string) a fresh number
// above every integer id, renamed back in the report.
type snapNames struct {
	ids   map[spec.ObsID]spec.SnapID
	names map[spec.SnapID]spec.ObsID
	next  spec.SnapID
}

// freshSnapBase is the first spec id given to an implementation's id
// that is not a positive integer.
const freshSnapBase = 1_000_000_001

func newSnapNames(all []spec.ObsID) *snapNames {
	n := &snapNames{ids: map[spec.ObsID]spec.SnapID{}, names: map[spec.SnapID]spec.ObsID{}, next: freshSnapBase}
	for _, id := range all {
		if v, ok := integerSnapID(id); ok {
			n.ids[id], n.names[v] = v, id
		}
	}
	for _, id := range all {
		if _, ok := n.ids[id]; !ok {
			n.ids[id], n.names[n.next] = n.next, id
			n.next++
		}
	}
	return n
}

// integerSnapID is id as a spec id if it is a positive integer below
// freshSnapBase written in canonical form (no sign, no leading zero).
func integerSnapID(id spec.ObsID) (spec.SnapID, bool) {
	v, err := strconv.ParseUint(string(id), 10, 64)
	ok := err == nil && v > 0 && v < freshSnapBase && strconv.FormatUint(v, 10) == string(id)
	return spec.SnapID(v), ok
}

// of is the spec id of implementation id id.
func (n *snapNames) of(id spec.ObsID) spec.SnapID { return n.ids[id] }

// name is the implementation's id of spec id s, as it wrote it.
func (n *snapNames) name(s spec.SnapID) string {
	if n == nil {
		return strconv.FormatUint(uint64(s), 10)
	}
	if id, ok := n.names[s]; ok {
		return id.String()
	}
	return strconv.FormatUint(uint64(s), 10)
}

// nodeDeriv derives one node's steps in one incarnation.
type nodeDeriv struct {
	d     *deriver
	p     spec.ProcID
	evs   []dEvent
	st    spec.LocalState
	steps int
	// model is each snapshot's recording point (index into evs).
	model map[spec.SnapID]int
	// markerSent is the observation number of each marker_send, by
	// snapshot and channel.
	markerSent map[spec.SnapID]map[spec.Channel]int
	lastApp    int // the observation number of the last send or recv
	// sentOn and gotOn count the node's messages sent and received on
	// each channel (from the restored cut after a restore).
	sentOn, gotOn map[spec.Channel]uint64
}

// step appends derived step e of observation o.
func (n *nodeDeriv) step(e spec.Event, o obsAt) *dEvent {
	e.Proc, e.Seq = n.p, uint64(len(n.evs)+1)
	e.Payload = o.ev.Payload
	n.evs = append(n.evs, dEvent{e: e, obs: o, step: n.steps, vc: o.ev.VC})
	return &n.evs[len(n.evs)-1]
}

// observe derives observation o of the node.
func (n *nodeDeriv) observe(o obsAt) error {
	n.steps++
	ev := o.ev
	if ev.Step != 0 && ev.Step != uint64(n.steps) {
		return fmt.Errorf("%s: field \"step\": %d, but it is %s's observation number %d", o.where(), ev.Step, string(n.p), n.steps)
	}
	switch ev.Ev {
	case spec.ObsSend:
		return n.send(o)
	case spec.ObsRecv:
		return n.recv(o)
	case spec.ObsRecord:
		return n.record(o)
	case spec.ObsMarkerRecv:
		n.markerRecv(o)
	case spec.ObsMarkerSend:
		n.markerSend(o)
		return n.noStep(o)
	default:
		n.fault(o)
	}
	return nil
}

// noStep files observation o, which is no step of the spec, with the
// node's step before it, whose clock a clock o gives is checked against
// (checkGiven); before any step, o's clock must be all zeros.
func (n *nodeDeriv) noStep(o obsAt) error {
	switch {
	case o.ev.VC == nil:
	case len(n.evs) > 0:
		n.evs[len(n.evs)-1].tail = append(n.evs[len(n.evs)-1].tail, o)
	case slices.Max(o.ev.VC) > 0:
		return fmt.Errorf("%s: field \"vc\": %v, before any step of %s: want every entry 0 (marker_send lines and a record after the first marker are no steps)", o.where(), o.ev.VC, string(n.p))
	}
	return nil
}

// send derives SendApp.
func (n *nodeDeriv) send(o obsAt) error {
	c := spec.Channel{From: n.p, To: o.ev.To}
	seq := n.sentOn[c] + 1
	n.sentOn[c] = seq
	n.d.prov.count("message ids", o.ev.ID != nil)
	amt := *o.ev.Amount
	msg := n.d.givenSeq(o, seq)
	n.st.Bal -= amt
	n.st.Sent++
	n.lastApp = n.steps
	de := n.step(spec.Event{Action: spec.SendApp, From: n.p, To: c.To, Amount: amt, Msg: msg}, o)
	de.produces = depKey{c: c, seq: seq, ok: true}
	n.after(de, o)
	return nil
}

// givenSeq is the seq the log gives o, else derived.
func (d *deriver) givenSeq(o obsAt, derived uint64) uint64 {
	d.prov.count("message seqs", o.ev.Seq != 0)
	if o.ev.Seq != 0 {
		return o.ev.Seq
	}
	return derived
}

// recv derives RecvApp: the message the id names, else the channel's
// oldest not yet received. A message no send gives (an id never sent, a
// receive past the channel's sends) is noted and named (unsentMsgs), and
// the replay judges the receive, as it does a message received twice.
func (n *nodeDeriv) recv(o obsAt) error {
	c := spec.Channel{From: o.ev.From, To: n.p}
	m, ok := sentMsg{seq: n.gotOn[c] + 1}, false
	if o.ev.ID != nil {
		m, ok = n.d.tab.ids[c][*o.ev.ID]
		if !ok {
			m.seq = n.d.unsent.fresh(c, unsentName(o.ev.Amount, o.ev.ID, "never sent", o.where()))
			n.d.note(fmt.Sprintf("%s received message %s on %s at its step %d (%s), but %s never sent a message with that id on it",
				string(n.p), *o.ev.ID, c, n.steps, o.where(), string(c.From)))
		}
	} else {
		m, ok = n.d.tab.seqs[c][m.seq]
		if !ok {
			m.seq = n.gotOn[c] + 1
			n.d.unsent.add(c, m.seq, unsentName(o.ev.Amount, nil, "never sent", o.where()))
			n.d.note(fmt.Sprintf("%s received a message on %s at its step %d (%s), but %s had sent %s on it: in FIFO order it is number %d, which was never sent",
				string(n.p), c, n.steps, o.where(), string(c.From), plural(len(n.d.tab.seqs[c]), "message"), m.seq))
		}
	}
	n.gotOn[c]++
	amt := m.amount
	if o.ev.Amount != nil || !ok {
		amt = derefInt(o.ev.Amount)
	}
	n.d.prov.count("amounts received", o.ev.Amount != nil)
	n.st.Bal += amt
	n.st.Rcvd++
	n.lastApp = n.steps
	de := n.step(spec.Event{Action: spec.RecvApp, From: c.From, To: n.p, Amount: amt, Msg: n.d.givenSeq(o, m.seq)}, o)
	de.dep = depKey{c: c, seq: m.seq, ok: true}
	n.after(de, o)
	return nil
}

func derefInt(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// after sets de's after state: the log's where given (its missing
// counters derived), else derived.
func (n *nodeDeriv) after(de *dEvent, o obsAt) {
	de.e.After = n.st
	n.d.prov.count("after states", o.ev.After != nil)
	if a := o.ev.After; a != nil {
		de.after = true
		de.e.After = withObs(n.st, a)
	}
}

// record derives a record observation: Initiate if it is the node's
// recording point, else only the state it reports.
func (n *nodeDeriv) record(o obsAt) error {
	s := n.d.snaps.of(*o.ev.Snap)
	k := n.d.cut(s)
	if prev, dup := k.logged[n.p]; dup {
		return fmt.Errorf("%s: %s records snapshot %s twice (also %s)", o.where(), string(n.p), n.d.snaps.name(s), prev.where())
	}
	k.logged[n.p] = o
	if _, done := n.model[s]; done {
		if err := n.noStep(o); err != nil {
			return err
		}
		if n.lastApp > k.at[n.p] {
			n.d.note(fmt.Sprintf("%s recorded snapshot %s at its step %d (%s), after its first marker of it (step %d, %s) and %s since: the spec records at the marker",
				string(n.p), n.d.snaps.name(s), n.steps, o.where(), k.at[n.p], n.evs[n.model[s]].obs.where(), plural(n.appSince(k.at[n.p]), "send or receive")))
		}
		return nil
	}
	e := spec.Event{Action: spec.Initiate, Snap: s}
	from := n.d.choices[choiceKey{inc: n.d.inc, p: n.p, s: *o.ev.Snap}]
	if n.d.silent[n.p] && from != "" {
		e = spec.Event{Action: spec.RecvMarker, From: from, To: n.p, Snap: s, First: true}
	}
	de := n.step(e, o)
	if from != "" {
		de.dep = depKey{snap: s, c: spec.Channel{From: from}, ok: true}
	}
	n.recordingPoint(de, s)
	n.after(de, obsAt{})
	return nil
}

// appSince counts the node's sends and receives after observation from.
func (n *nodeDeriv) appSince(from int) int {
	c := 0
	for _, e := range n.evs {
		if e.step > from && (e.e.Action == spec.SendApp || e.e.Action == spec.RecvApp) {
			c++
		}
	}
	return c
}

// recordingPoint notes de, the node's step that records snapshot s in
// the spec: the cut's counters and state there.
func (n *nodeDeriv) recordingPoint(de *dEvent, s spec.SnapID) {
	n.model[s] = len(n.evs) - 1
	k := n.d.cut(s)
	k.state[n.p], k.at[n.p] = n.st, n.steps
	for _, c := range n.d.top.Out(n.p) {
		k.sent[c] = n.sentOn[c]
	}
	for _, c := range n.d.top.In(n.p) {
		k.got[c] = n.gotOn[c]
	}
	de.produces = depKey{snap: s, c: spec.Channel{From: n.p}, ok: true}
}

// markerRecv derives RecvMarker: case 1 if the node has not recorded s.
func (n *nodeDeriv) markerRecv(o obsAt) {
	s := n.d.snaps.of(*o.ev.Snap)
	_, recorded := n.model[s]
	first := !recorded
	n.d.prov.count("first flags", o.ev.First != nil)
	if o.ev.First != nil {
		first = *o.ev.First
	}
	n.d.prov.count("marker receipts", true)
	de := n.step(spec.Event{Action: spec.RecvMarker, From: o.ev.From, To: n.p, Snap: s, First: first}, o)
	de.dep = depKey{snap: s, c: spec.Channel{From: o.ev.From}, ok: true}
	if !recorded {
		n.recordingPoint(de, s)
	}
	n.after(de, o)
}

// markerSend notes a marker_send, checked against the recording point
// later (checkMarkers). The spec sends a snapshot's markers in the
// node's recording step, one on each outgoing channel: a marker_send
// before the node recorded the snapshot, or a second one on a channel,
// is a marker send no step of the model takes. It is reported as the
// check a step the model cannot take fails (Enabled), at the marker_send
// line, and as a divergence, not bad input: the log is well formed, the
// implementation did what the spec does not (a marker sent early lets
// the receiver record before messages its sender counts as sent before
// its recording, which the replay would blame on the receiver).
func (n *nodeDeriv) markerSend(o obsAt) {
	s := n.d.snaps.of(*o.ev.Snap)
	if n.markerSent[s] == nil {
		n.markerSent[s] = map[spec.Channel]int{}
	}
	c := spec.Channel{From: n.p, To: o.ev.To}
	prev, dup := n.markerSent[s][c]
	if !dup {
		n.markerSent[s][c] = n.steps
	}
	_, recorded := n.model[s]
	var why string
	switch {
	case dup:
		why = fmt.Sprintf("%s sent snapshot %s's marker on %s twice (its steps %d and %d): the spec sends one on each channel, in the recording step", string(n.p), n.d.snaps.name(s), c, prev, n.steps)
	case !recorded:
		why = fmt.Sprintf("%s sent snapshot %s's marker on %s at its step %d, before recording the snapshot: the spec sends the markers in the recording step, after the state is recorded", string(n.p), n.d.snaps.name(s), c, n.steps)
	default:
		return
	}
	if n.d.finding == nil {
		n.d.finding = &Divergence{Property: spec.CheckEnabled, Detail: why, Action: fmt.Sprintf("%s's step %d (%s)", string(n.p), n.steps, o.where()), Line: o.line, File: o.file}
	}
}

// fault derives the failure handling's steps.
func (n *nodeDeriv) fault(o obsAt) {
	e := spec.Event{Peer: o.ev.Peer, From: o.ev.From}
	switch o.ev.Ev {
	case spec.ObsSuspect:
		e.Action = spec.Suspect
	case spec.ObsUnsuspect:
		e.Action = spec.Unsuspect
	case spec.ObsAbort:
		e.Action, e.Snap = spec.Abort, n.d.snaps.of(*o.ev.Snap)
	case spec.ObsMarkerDrop:
		e.Action, e.Snap, e.To = spec.DropMarker, n.d.snaps.of(*o.ev.Snap), n.p
	}
	de := n.step(e, o)
	if e.Action == spec.DropMarker {
		de.dep = depKey{snap: e.Snap, c: spec.Channel{From: o.ev.From}, ok: true}
	}
	n.after(de, o)
}

// withObs is l with the fields a state given in the log holds.
func withObs(l spec.LocalState, a *spec.ObsState) spec.LocalState {
	l.Bal = *a.Bal
	if a.Sent != nil {
		l.Sent = *a.Sent
	}
	if a.Rcvd != nil {
		l.Rcvd = *a.Rcvd
	}
	return l
}

// checkMarkers checks the node's marker_send lines against the spec's
// Marker Sending Rule: after its recording point of s, the node sends
// s's marker on every outgoing channel before any other message on it.
// A marker never sent is a divergence (the snapshot cannot complete:
// SnapshotsComplete, as MCNoForward finds); a message sent first is
// explained (the replay then finds what it breaks). A marker the node
// has no marker_send line of but whose receiver logs receiving it (inc's
// logs) was sent: the log lacks the line, an error.
func (n *nodeDeriv) checkMarkers(inc outsiderInc) (*Divergence, error) {
	for range n.model {
		n.d.prov.count("marker sends", n.d.logsMarkerSends[n.p])
	}
	if !n.d.logsMarkerSends[n.p] {
		return nil, nil
	}
	for _, s := range slices.Sorted(maps.Keys(n.model)) {
		at := n.d.cut(s).at[n.p]
		for _, c := range n.d.top.Out(n.p) {
			if d, err := n.checkMarkerOn(inc, s, c, at); d != nil || err != nil {
				return d, err
			}
		}
	}
	return nil, nil
}

// checkMarkerOn checks the Marker Sending Rule for snapshot s, recorded
// at the node's step at, on its outgoing channel c: the marker sent (a
// divergence if not, unless the node was killed right after recording;
// an error if c's receiver logs receiving it), and no message before it
// (explained if one was).
func (n *nodeDeriv) checkMarkerOn(inc outsiderInc, s spec.SnapID, c spec.Channel, at int) (*Divergence, error) {
	m, ok := n.markerSent[s][c]
	if !ok {
		rp := n.evs[n.model[s]].obs
		if got, arrived := n.d.markerArrival(inc, s, c); arrived {
			return nil, fmt.Errorf("%s: %s logs no marker_send of snapshot %s on %s after recording it here (its step %d), but %s logs receiving that marker (%s): the log lacks the marker_send line (%s)",
				rp.where(), string(n.p), n.d.snaps.name(s), c, at, string(c.To), got.where(), n.whyLogsSends())
		}
		if n.d.crashed[n.p] && n.steps == at {
			return nil, nil // killed right after recording
		}
		return &Divergence{Property: spec.PropSnapshotsComplete,
			Detail: fmt.Sprintf("%s never sent snapshot %s's marker on %s after recording at its step %d", string(n.p), n.d.snaps.name(s), c, at),
			Action: fmt.Sprintf("%s's step %d (%s)", string(n.p), at, rp.where()), Line: rp.line, File: rp.file}, nil
	}
	if a, o := n.firstSendAfter(c, at); a > 0 && a < m {
		n.d.note(fmt.Sprintf("%s sent a message on %s at its step %d (%s), after recording snapshot %s at its step %d (%s) and before that snapshot's marker on %s (its step %d)",
			string(n.p), c, a, o.where(), n.d.snaps.name(s), at, n.evs[n.model[s]].obs.where(), c, m))
	}
	return nil, nil
}

// whyLogsSends says why the node is taken to log its marker sends
// (deriver.scan).
func (n *nodeDeriv) whyLogsSends() string {
	for _, m := range n.markerSent {
		if len(m) > 0 {
			return fmt.Sprintf("%s logs its other marker sends", string(n.p))
		}
	}
	return fmt.Sprintf("%s logs marker receipts and the run logs marker_send lines: its sends are taken as logged", string(n.p))
}

// markerArrival is the observation in inc's logs of c's receiver that
// receives (or drops) snapshot s's marker on c, if it logs one.
func (d *deriver) markerArrival(inc outsiderInc, s spec.SnapID, c spec.Channel) (obsAt, bool) {
	for _, o := range inc.nodes[c.To] {
		e := o.ev
		if (e.Ev == spec.ObsMarkerRecv || e.Ev == spec.ObsMarkerDrop) && e.From == c.From && d.snaps.of(*e.Snap) == s {
			return o, true
		}
	}
	return obsAt{}, false
}

// firstSendAfter is the node's observation number of its first send on
// c after observation at, and that observation; 0 if none.
func (n *nodeDeriv) firstSendAfter(c spec.Channel, at int) (int, obsAt) {
	for _, e := range n.evs {
		if e.step > at && e.e.Action == spec.SendApp && e.e.To == c.To {
			return e.step, e.obs
		}
	}
	return 0, obsAt{}
}

// cut is snapshot s's cut record, created on first use.
func (d *deriver) cut(s spec.SnapID) *snapCut {
	k, ok := d.cuts[s]
	if !ok {
		k = newSnapCut()
		d.cuts[s] = k
	}
	return k
}

// note records a fact about the run, in its terms, once.
func (d *deriver) note(s string) {
	if !slices.Contains(d.notes, s) {
		d.notes = append(d.notes, s)
	}
}

// insertMarkers places, for a node that logs no marker receipts, the
// receipt of every marker the spec delivers it other than its first:
// for each snapshot it recorded and each incoming channel whose sender
// recorded it too, after the node's recording point and just before its
// receipt of the first message sent on the channel after the sender
// recorded, else at the end of its log: FIFO order puts it after the
// messages sent before, and as late as that allows it waits for nothing
// the node does (its place among the node's other steps changes nothing
// the spec observes).
func (n *nodeDeriv) insertMarkers() {
	var add []markerIns
	for _, s := range slices.Sorted(maps.Keys(n.model)) {
		at := n.model[s]
		first := n.evs[at].e
		for _, c := range n.d.top.In(n.p) {
			if sender := n.d.nodesOf[s][c.From]; sender == nil || (first.Action == spec.RecvMarker && first.From == c.From) {
				continue
			}
			k := n.d.cut(s)
			pos := max(at+1, min(n.beforeRecv(c, k.sent[c]), n.beforeMarker(c, k.at[c.From])))
			e := spec.Event{Proc: n.p, Action: spec.RecvMarker, From: c.From, To: n.p, Snap: s, After: n.evs[pos-1].e.After}
			add = append(add, markerIns{at: pos, order: k.at[c.From], e: dEvent{e: e, obs: n.evs[pos-1].obs, step: n.evs[pos-1].step, dep: depKey{snap: s, c: spec.Channel{From: c.From}, ok: true}, inserted: true}})
		}
	}
	// From the back, and at one place the later-recorded sender's first:
	// each insertion then lands before the ones made before it.
	slices.SortStableFunc(add, func(a, b markerIns) int { return cmp.Or(b.at-a.at, b.order-a.order) })
	for _, a := range add {
		n.evs = slices.Insert(n.evs, a.at, a.e)
		n.d.prov.count("marker receipts", false)
	}
	n.renumber()
}

// renumber numbers the node's steps afresh and finds its recording
// points again, after insertions.
func (n *nodeDeriv) renumber() {
	for i := range n.evs {
		n.evs[i].e.Seq = uint64(i + 1)
		if e := n.evs[i].e; e.Action == spec.Initiate || (e.Action == spec.RecvMarker && e.First) {
			n.model[e.Snap] = i
		}
	}
}

// markerIns is a marker receipt to insert at index at; order is the
// sender's step that recorded its snapshot.
type markerIns struct {
	at, order int
	e         dEvent
}

// beforeMarker is the index of the node's first marker receipt on c of
// a snapshot c's sender recorded after its step senderAt, len(evs) if
// none: FIFO keeps the markers of one channel in recording order.
func (n *nodeDeriv) beforeMarker(c spec.Channel, senderAt int) int {
	for i, e := range n.evs {
		if e.e.Action == spec.RecvMarker && e.e.From == c.From && n.d.cut(e.e.Snap).at[c.From] > senderAt {
			return i
		}
	}
	return len(n.evs)
}

// beforeRecv is the index of the node's receipt of the first message on
// c numbered above upTo, len(evs) if none.
func (n *nodeDeriv) beforeRecv(c spec.Channel, upTo uint64) int {
	for i, e := range n.evs {
		if e.e.Action == spec.RecvApp && e.e.From == c.From && e.e.Msg > upTo {
			return i
		}
	}
	return len(n.evs)
}
