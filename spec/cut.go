package spec

import "fmt"

// The cut analysis: where a snapshot's cut crosses each channel, which
// messages were in flight there, whether the cut is consistent and
// whether a channel's recording is exact. It is the one place these
// questions are answered. tla/ChandyLamport.tla states them as
//
//	ConsistentCut     (lines 283-292): once both ends of c have recorded
//	                  for s, Len(cutGot[s][c]) <= cutSent[s][c] and
//	                  cutGot[s][c] = 1 .. Len(cutGot[s][c]): no orphan;
//	ExactChannelState (lines 294-302): once c's recording is done, its
//	                  recorded messages are numbers Len(cutGot)+1 ..
//	                  cutSent, in order;
//
// over the ghosts cutSent[s][c], nSent[c] when c's sender recorded, and
// cutGot[s][c], got[c] when c's receiver recorded (lines 77-78, set by
// RecordState at lines 209-212).
//
// There are two ways in, for the two things a caller may hold:
//
//  1. A snapshot's record alone, as the nodes report it: each channel's
//     cut seqs (ChanCut) and recorded messages. ChanCut.Check judges one
//     channel (CheckChannel as one error: the runtime's
//     GlobalSnapshot.Validate; RecordedSnapshot.CutProblems: a trace's
//     recorded line).
//  2. A run's events, in a causally consistent order. In order:
//     NewCutIndex matches every message's send and receive and every
//     snapshot's recording points and markers, once; CutIndex.Cut(s) is
//     one snapshot's cut (SnapCut: each process's recording point, and
//     per channel a ChanView with the cut seqs, the messages in flight,
//     the orphans, the events' own recording); then SnapCut.JudgeReport
//     (a reported state) or SnapCut.JudgeEvents (the events' own) judges
//     each channel message by message (ChanVerdict, MsgFinding: orphan,
//     recorded, missing, spurious, pending). The run checks
//     (conformance.CheckRun, what markerwave audit prints) and the
//     space-time diagram (conformance/export) both take their verdicts
//     and colours from these.
//
// On the events, "in flight" is a set: sent before the sender recorded,
// not received before the receiver recorded. When the cut is consistent
// these are exactly numbers Len(cutGot)+1 .. cutSent.

// Orphan reports whether the record breaks ConsistentCut's first
// conjunct, Len(cutGot) <= cutSent: the receiver had received more
// messages on the channel when it recorded than the sender had sent when
// it recorded.
func (k ChanCut) Orphan() bool { return k.Got > k.Sent }

// InFlight is the number of messages ExactChannelState wants recorded:
// numbers Got+1 .. Sent (none for an orphan cut).
func (k ChanCut) InFlight() uint64 {
	if k.Got >= k.Sent {
		return 0
	}
	return k.Sent - k.Got
}

// Check checks one channel's record, the cut seqs k of channel c and its
// recorded messages ms, against ConsistentCut and ExactChannelState.
// orphan is non-nil if k.Orphan(); inexact is non-nil if ms are not
// exactly numbers Got+1 .. Sent in order (so a record with an orphan cut
// and messages fails both). The errors name neither the snapshot nor the
// channel: the caller prefixes them.
func (k ChanCut) Check(c Channel, ms []AppMsg) (orphan, inexact error) {
	if k.Orphan() {
		orphan = fmt.Errorf("orphan messages: %s received up to seq %d when it recorded, but %s had sent only up to seq %d when it recorded",
			string(c.To), k.Got, string(c.From), k.Sent)
	}
	if want := k.InFlight(); uint64(len(ms)) != want {
		inexact = fmt.Errorf("%d messages recorded, but %d were in flight across the cut (%s)", len(ms), want, k.inFlightRange())
		return orphan, inexact
	}
	for i, m := range ms {
		if want := k.Got + 1 + uint64(i); m.Seq != want {
			return orphan, fmt.Errorf("message %d has seq %d, want %d", i, m.Seq, want)
		}
	}
	return orphan, nil
}

// CheckChannel is ChanCut.Check as one error: the orphan if any, else
// the inexact recording.
func CheckChannel(c Channel, k ChanCut, ms []AppMsg) error {
	orphan, inexact := k.Check(c, ms)
	if orphan != nil {
		return orphan
	}
	return inexact
}

// inFlightRange describes numbers Got+1 .. Sent: "seq 5", "seqs 5..9",
// or, if there are none, the seqs each end expected next.
func (k ChanCut) inFlightRange() string {
	switch n := k.InFlight(); {
	case n == 0:
		return fmt.Sprintf("none: the receiver expected seq %d, the sender's next was seq %d", k.Got+1, k.Sent+1)
	case n == 1:
		return fmt.Sprintf("seq %d", k.Sent)
	}
	return fmt.Sprintf("seqs %d..%d", k.Got+1, k.Sent)
}
