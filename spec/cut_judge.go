package spec

import (
	"slices"
	"sort"
)

// MsgStatus is what an application message is with respect to one
// snapshot's cut and recorded state.
type MsgStatus string

const (
	// MsgOrphan: received before the receiver recorded, but sent after
	// the sender recorded, or never sent: ConsistentCut fails.
	MsgOrphan MsgStatus = "orphan"
	// MsgRecorded: in flight at the cut and in the recorded state of its
	// channel, as ExactChannelState wants.
	MsgRecorded MsgStatus = "recorded"
	// MsgMissing: in flight at the cut, but not in the recorded state of
	// its channel, whose recording is over: ExactChannelState fails.
	MsgMissing MsgStatus = "missing"
	// MsgSpurious: in the recorded state of its channel, but not in
	// flight at the cut: ExactChannelState fails.
	MsgSpurious MsgStatus = "spurious"
	// MsgPending: in flight at the cut, not recorded yet, and its
	// channel's recording still open when the run ends.
	MsgPending MsgStatus = "pending"
)

// Fault reports whether the status breaks a property: orphan, missing
// or spurious.
func (st MsgStatus) Fault() bool {
	return st == MsgOrphan || st == MsgMissing || st == MsgSpurious
}

// MsgFinding is one message's status for one snapshot.
type MsgFinding struct {
	Chan   Channel
	Msg    AppMsg
	Status MsgStatus
}

// ChanVerdict judges one channel's recorded state against a snapshot's
// cut.
type ChanVerdict struct {
	Chan Channel
	// View is the cut on the channel; nil if the recorded state names a
	// channel the topology does not have.
	View *ChanView
	// Recorded is the channel's recorded state that was judged.
	Recorded []AppMsg
	// Exact: Recorded is the messages in flight, in order
	// (ExactChannelState, once the recording is done).
	Exact bool
	// Findings lists the channel's messages of note: the orphans, then
	// the messages in flight (recorded, missing or pending) in send
	// order, then the spurious ones in recorded order.
	Findings []MsgFinding
}

// Want is the channel's messages in flight, as ExactChannelState wants
// them recorded.
func (v ChanVerdict) Want() []AppMsg {
	if v.View == nil {
		return nil
	}
	out := make([]AppMsg, len(v.View.InFlight))
	for i, m := range v.View.InFlight {
		out[i] = m.AppMsg
	}
	return out
}

// JudgeReport judges the channel states chans an implementation reported
// for the snapshot: a message in flight at the cut is recorded if chans
// holds it, else missing (the report is final); a message chans holds
// that was not in flight is spurious. It returns one verdict per channel
// of the topology, in its order, then one per other channel chans names
// with messages.
func (k SnapCut) JudgeReport(chans map[Channel][]AppMsg) []ChanVerdict {
	return k.judge(chans, true)
}

// JudgeEvents judges the events' own recording (ChanView.Received): as
// JudgeReport, except that a message in flight and not received yet on a
// channel whose recording is still open is pending, not missing.
func (k SnapCut) JudgeEvents() []ChanVerdict {
	chans := map[Channel][]AppMsg{}
	for _, v := range k.Chans {
		for _, m := range v.Received {
			chans[v.Chan] = append(chans[v.Chan], m.AppMsg)
		}
	}
	return k.judge(chans, false)
}

func (k SnapCut) judge(chans map[Channel][]AppMsg, final bool) []ChanVerdict {
	out := make([]ChanVerdict, 0, len(k.Chans))
	for i := range k.Chans {
		out = append(out, k.Chans[i].judge(chans[k.Chans[i].Chan], final))
	}
	var other []Channel
	for c, ms := range chans {
		if len(ms) > 0 && k.Chan(c) == nil {
			other = append(other, c)
		}
	}
	sort.Slice(other, func(i, j int) bool { return ChannelLess(other[i], other[j]) })
	for _, c := range other {
		out = append(out, ChanVerdict{Chan: c, Recorded: chans[c], Findings: spurious(c, chans[c], nil)})
	}
	return out
}

// judge is ChanVerdict for recorded state ms: final says the recording is
// over even if the channel's marker has not arrived in the events.
func (v *ChanView) judge(ms []AppMsg, final bool) ChanVerdict {
	cv := ChanVerdict{Chan: v.Chan, View: v, Recorded: ms, Exact: slices.Equal(ms, ChanVerdict{View: v}.Want())}
	for _, m := range v.Orphans {
		cv.Findings = append(cv.Findings, MsgFinding{Chan: v.Chan, Msg: m.AppMsg, Status: MsgOrphan})
	}
	used := make([]bool, len(ms))
	for _, m := range v.InFlight {
		st := MsgPending
		switch {
		case take(ms, used, m.AppMsg):
			st = MsgRecorded
		case final || v.Marker >= 0:
			st = MsgMissing
		}
		cv.Findings = append(cv.Findings, MsgFinding{Chan: v.Chan, Msg: m.AppMsg, Status: st})
	}
	cv.Findings = append(cv.Findings, spurious(v.Chan, ms, used)...)
	return cv
}

// take marks the first unused occurrence of m in ms used, and reports
// whether there was one.
func take(ms []AppMsg, used []bool, m AppMsg) bool {
	for i := range ms {
		if !used[i] && ms[i] == m {
			used[i] = true
			return true
		}
	}
	return false
}

// spurious lists the messages of ms not marked used (all if used is nil).
func spurious(c Channel, ms []AppMsg, used []bool) []MsgFinding {
	var out []MsgFinding
	for i, m := range ms {
		if used == nil || !used[i] {
			out = append(out, MsgFinding{Chan: c, Msg: m, Status: MsgSpurious})
		}
	}
	return out
}

// Findings gathers the findings of verdicts, in order.
func Findings(verdicts []ChanVerdict) []MsgFinding {
	var out []MsgFinding
	for _, v := range verdicts {
		out = append(out, v.Findings...)
	}
	return out
}
