package conformance

import (
	"fmt"
	"maps"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// The recorded snapshots of an outsider run, as the replay compares them
// with the model: what the implementation reported ({"snapshot": ...}
// lines, whole or by node) for the snapshots it reported; without any
// snapshot line, every snapshot the log completes, from the states its
// record lines give and the channel states the log implies. What was not
// reported is derived from the log, and counted as derived.

// reportedPart gathers the snapshot lines of one snapshot.
type reportedPart struct {
	initiator   spec.ProcID
	initiatorAt string // the line that named the initiator first
	procs       map[spec.ProcID]spec.ObsState
	chans       map[spec.Channel]spec.ObsChan
	// procAt and chanAt are where each process's and each channel's
	// state was reported; where the part's first line.
	procAt map[spec.ProcID]string
	chanAt map[spec.Channel]string
	where  string
}

// recorded builds the recorded snapshots the replay checks.
func (d *deriver) recorded() ([]spec.RecordedSnapshot, error) {
	parts, order, err := d.reportedParts()
	if err != nil {
		return nil, err
	}
	if len(order) == 0 {
		order = d.loggedComplete()
		for _, s := range order {
			parts[s] = newReportedPart("")
		}
	}
	var out []spec.RecordedSnapshot
	for _, s := range order {
		out = append(out, d.recordedSnapshot(s, parts[s]))
	}
	return out, nil
}

// reportedParts merges the snapshot lines by snapshot; a process's or
// channel's part given twice must agree.
func (d *deriver) reportedParts() (map[spec.SnapID]*reportedPart, []spec.SnapID, error) {
	parts := map[spec.SnapID]*reportedPart{}
	var order []spec.SnapID
	for _, sa := range d.run.snaps {
		s := d.snaps.of(*sa.s.Snap)
		where := fmt.Sprintf("%s: trace line %d", sa.file, sa.line)
		p := parts[s]
		if p == nil {
			p = newReportedPart(where)
			parts[s] = p
			order = append(order, s)
		}
		if err := p.add(d.top, sa.s, where); err != nil {
			return nil, nil, err
		}
	}
	return parts, order, nil
}

// newReportedPart is an empty part whose first line is where ("" for
// none: the snapshot was not reported).
func newReportedPart(where string) *reportedPart {
	return &reportedPart{procs: map[spec.ProcID]spec.ObsState{}, chans: map[spec.Channel]spec.ObsChan{}, procAt: map[spec.ProcID]string{}, chanAt: map[spec.Channel]string{}, where: where}
}

// add merges one snapshot line into the part.
func (p *reportedPart) add(t *spec.Topology, s spec.OutsiderSnapshot, where string) error {
	if err := p.addInitiator(s, where); err != nil {
		return err
	}
	if err := p.addProcs(s, where); err != nil {
		return err
	}
	return p.addChans(t, s, where)
}

// addInitiator takes the initiator the line names, if it names one: the
// same one as earlier lines, if they named one.
func (p *reportedPart) addInitiator(s spec.OutsiderSnapshot, where string) error {
	if s.Initiator == "" {
		return nil
	}
	if p.initiator != "" && p.initiator != s.Initiator {
		return fmt.Errorf("%s: field \"snapshot.initiator\": %s, but %s says %s", where, string(s.Initiator), p.initiatorAt, string(p.initiator))
	}
	if p.initiator == "" {
		p.initiator, p.initiatorAt = s.Initiator, where
	}
	return nil
}

// addProcs takes the line's process states; one reported again must be
// the same.
func (p *reportedPart) addProcs(s spec.OutsiderSnapshot, where string) error {
	for q, st := range s.Procs {
		if prev, ok := p.procs[q]; ok && !sameObsState(prev, st) {
			return fmt.Errorf("%s: field \"snapshot.procs.%s\": reported twice, differently (also %s)", where, string(q), p.procAt[q])
		}
		p.procs[q], p.procAt[q] = st, where
	}
	return nil
}

// addChans takes the line's channel states; none may be reported twice.
func (p *reportedPart) addChans(t *spec.Topology, s spec.OutsiderSnapshot, where string) error {
	for k, c := range s.Chans {
		ch, _ := spec.ParseChanKey(t, k)
		if _, ok := p.chans[ch]; ok {
			return fmt.Errorf("%s: field \"snapshot.chans.%s\": reported twice (also %s)", where, k, p.chanAt[ch])
		}
		p.chans[ch], p.chanAt[ch] = c, where
	}
	return nil
}

func sameObsState(a, b spec.ObsState) bool {
	eq := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return *a.Bal == *b.Bal && eq(a.Sent, b.Sent) && eq(a.Rcvd, b.Rcvd)
}

// loggedComplete lists the snapshots every process logged a recorded
// state of and whose every channel's marker the log shows received: what
// stands for the implementation's report when it reported none.
func (d *deriver) loggedComplete() []spec.SnapID {
	var out []spec.SnapID
	for _, s := range slices.Sorted(maps.Keys(d.cuts)) {
		k := d.cuts[s]
		if len(k.logged) == len(d.top.Procs) && allStates(k) && d.markersIn(s) {
			out = append(out, s)
		}
	}
	return out
}

func allStates(k *snapCut) bool {
	for _, o := range k.logged {
		if o.ev.State == nil {
			return false
		}
	}
	return true
}

// markersIn reports whether every channel's marker of s is received in
// the derived run.
func (d *deriver) markersIn(s spec.SnapID) bool {
	for _, c := range d.top.Chans {
		if _, ok := d.chanRecording(s, c); !ok {
			return false
		}
	}
	return true
}

// chanRecording is what the log implies c recorded for s: the messages
// its receiver took after its recording point and before s's marker on
// c; ok if the marker arrived (or c's first marker was s's).
func (d *deriver) chanRecording(s spec.SnapID, c spec.Channel) ([]spec.AppMsg, bool) {
	n := d.nodesOf[s][c.To]
	if n == nil {
		return nil, false
	}
	var msgs []spec.AppMsg
	for _, e := range n.evs[n.model[s]:] {
		switch {
		case e.e.Action == spec.RecvMarker && e.e.Snap == s && e.e.From == c.From:
			return msgs, true
		case e.e.Action == spec.RecvApp && e.e.From == c.From:
			msgs = append(msgs, spec.AppMsg{Amt: e.e.Amount, Seq: e.e.Msg})
		}
	}
	return msgs, false
}

// recordedSnapshot is snapshot s as reported by part p, what it leaves
// out derived from the log.
func (d *deriver) recordedSnapshot(s spec.SnapID, p *reportedPart) spec.RecordedSnapshot {
	k := d.cut(s)
	r := spec.RecordedSnapshot{Snap: s, Initiator: p.initiator, Procs: map[spec.ProcID]spec.LocalState{},
		Chans: map[spec.Channel][]spec.AppMsg{}, Cut: map[spec.Channel]spec.ChanCut{}}
	if r.Initiator == "" {
		r.Initiator = d.initiated[s]
	}
	for _, q := range d.top.Procs {
		r.Procs[q] = d.recordedState(s, k, q, p)
	}
	anyCut := false
	for _, c := range d.top.Chans {
		r.Chans[c] = d.recordedChan(s, c, p)
		cut, given := d.recordedCut(k, c, p.chans[c])
		r.Cut[c] = cut
		anyCut = anyCut || given
	}
	d.fullCuts[s] = r.Cut
	if !anyCut {
		r.Cut = nil // not reported: the replay checks the cut from the events (CheckRun), not a derived copy
	}
	return r
}

// recordedState is q's recorded state: reported, else logged at its
// record line, else derived at its recording point; its counters derived
// when not given. A record line and a report that disagree are both the
// implementation's word on what q recorded: the one that differs from the
// state the log derives at q's recording point is the one checked (the
// report if both do), so that a wrong record line is a RecordedState
// violation with the report as without it.
func (d *deriver) recordedState(s spec.SnapID, k *snapCut, q spec.ProcID, p *reportedPart) spec.LocalState {
	derived := k.state[q]
	st, ok := p.procs[q]
	lst, o, lok := k.loggedState(q)
	if !ok {
		st, ok = lst, lok
	}
	d.prov.count("recorded local states", ok)
	if !ok {
		return derived
	}
	rep := withObs(derived, &st)
	if !lok || withObs(derived, &lst) == rep {
		return rep // the same state, one giving counters the other derives
	}
	checked, out := "the report", rep
	if rep == derived {
		checked, out = "the record line, which differs from the state the log derives", withObs(derived, &lst)
	}
	d.note(fmt.Sprintf("%s logged its recorded state of snapshot %s as %s (%s), but reported %s (%s); the audit checks %s",
		string(q), d.snaps.name(s), obsStateText(lst, st), o.where(), obsStateText(st, lst), p.procAt[q], checked))
	return out
}

// obsStateText is state st as the log gives it ("bal=65 sent=3"), with
// the counters other gives and st does not named as not given.
func obsStateText(st, other spec.ObsState) string {
	out := fmt.Sprintf("bal=%d", *st.Bal)
	for _, f := range []struct {
		name string
		v, w *int
	}{{"sent", st.Sent, other.Sent}, {"rcvd", st.Rcvd, other.Rcvd}} {
		switch {
		case f.v != nil:
			out += fmt.Sprintf(" %s=%d", f.name, *f.v)
		case f.w != nil:
			out += fmt.Sprintf(" (%s not given)", f.name)
		}
	}
	return out
}

// loggedState is q's recorded state as its record line logs it, with
// that line; false if q logged no record line or one without a state.
func (k *snapCut) loggedState(q spec.ProcID) (spec.ObsState, obsAt, bool) {
	o, logged := k.logged[q]
	if !logged || o.ev.State == nil {
		return spec.ObsState{}, o, false
	}
	return *o.ev.State, o, true
}

// recordedChan is what c recorded for s: reported (by id or by amount),
// else derived from the log.
func (d *deriver) recordedChan(s spec.SnapID, c spec.Channel, p *reportedPart) []spec.AppMsg {
	rc, ok := p.chans[c]
	_, part := p.procs[c.To]
	d.prov.count("recorded channel states", ok || part)
	if !ok && !part {
		msgs, _ := d.chanRecording(s, c)
		return msgs
	}
	tab := d.tabOf[s]
	if tab == nil {
		tab = d.tab
	}
	if len(rc.Amounts) > 0 {
		return d.byAmounts(s, c, rc.Amounts, tab, p.chanAt[c])
	}
	return d.byIDs(s, c, rc.IDs, tab, p.chanAt[c])
}

// byIDs is the messages a channel state reported by ids (at where)
// stands for, each looked up in tab; an id c's sender never sent is
// noted (and stands for a message no send gives, unsentMsgs, which the
// replay then reports).
func (d *deriver) byIDs(s spec.SnapID, c spec.Channel, ids []spec.ObsID, tab *msgTable, where string) []spec.AppMsg {
	var out []spec.AppMsg
	for _, id := range ids {
		m, known := tab.ids[c][id]
		if !known {
			d.note(fmt.Sprintf("snapshot %s reports message %s recorded on %s (%s), which %s never sent on it", d.snaps.name(s), id, c, where, string(c.From)))
			m.seq = d.unsent.fresh(c, unsentName(nil, &id, "never sent", where))
		}
		out = append(out, spec.AppMsg{Amt: m.amount, Seq: m.seq})
	}
	return out
}

// byAmounts finds the messages a channel state reported by amounts (at
// where) stands for: the run of messages on c from the derived cut (got+1) on
// whose amounts match, else the first run of consecutive messages that
// does (a bounded search over the channel's messages), else the amounts
// each a message no send gives (unsentMsgs, which the replay then
// reports).
func (d *deriver) byAmounts(s spec.SnapID, c spec.Channel, amts []int64, tab *msgTable, where string) []spec.AppMsg {
	k := d.cut(s)
	seqs := slices.Sorted(maps.Keys(tab.seqs[c]))
	starts := append([]uint64{k.got[c] + 1}, seqs...)
	for _, from := range starts {
		if out, ok := matchAmounts(tab, c, from, amts); ok {
			return out
		}
	}
	out := make([]spec.AppMsg, len(amts))
	for i, a := range amts {
		out[i] = spec.AppMsg{Amt: a, Seq: d.unsent.fresh(c, unsentName(&a, nil, "matching no message sent", where))}
	}
	d.note(fmt.Sprintf("snapshot %s reports amounts %v recorded on %s (%s), which match no run of messages %s sent on it", d.snaps.name(s), amts, c, where, string(c.From)))
	return out
}

// matchAmounts is c's messages from seq from on, if their amounts are
// amts.
func matchAmounts(tab *msgTable, c spec.Channel, from uint64, amts []int64) ([]spec.AppMsg, bool) {
	out := make([]spec.AppMsg, len(amts))
	for i, a := range amts {
		m, ok := tab.seqs[c][from+uint64(i)]
		if !ok || m.amount != a {
			return nil, false
		}
		out[i] = spec.AppMsg{Amt: a, Seq: m.seq}
	}
	return out, true
}

// recordedCut is c's cut counts: as reported, the missing ones derived;
// given says whether any was reported.
func (d *deriver) recordedCut(k *snapCut, c spec.Channel, rc spec.ObsChan) (spec.ChanCut, bool) {
	cut := spec.ChanCut{Sent: k.sent[c], Got: k.got[c]}
	d.prov.count("cut counts", rc.Sent != nil || rc.Got != nil)
	if rc.Sent != nil {
		cut.Sent = *rc.Sent
	}
	if rc.Got != nil {
		cut.Got = *rc.Got
	}
	return cut, rc.Sent != nil || rc.Got != nil
}
