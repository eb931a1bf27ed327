package conformance

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

func (s *script) suspect(p, q spec.ProcID) {
	if s.err == nil {
		_, s.err = s.n.Suspect(p, q)
	}
}

func (s *script) abort(p spec.ProcID, id spec.SnapID, cause spec.ProcID) {
	if s.err == nil {
		_, s.err = s.n.Abort(p, id, cause)
	}
}

// threeAccounts is three accounts of $100, every pair connected both
// ways.
func threeAccounts() *script {
	return bankScript(spec.Complete(3), map[spec.ProcID]int64{p1: 100, p2: 100, p3: 100})
}

// crashAbort is the crash-abort run: P1 initiates snapshot 1 and sends P2
// $10; P2 crashes (it takes no more steps: its log ends, and what
// was sent to it stays in its channels); P3 suspects P2 and aborts
// snapshot 1 before P1's marker reaches it, so it drops that marker; P1
// suspects P2 and aborts too (no marker of P3's comes: P3 never
// recorded); the survivors go on transferring between themselves. With
// aborted false nobody aborts: P3 records when P1's marker comes, and
// both wait for P2's markers.
func crashAbort(aborted bool) *script {
	s := threeAccounts()
	s.initiate(p1, 1)  // markers to P2 (lost with it) and P3
	s.send(p1, p2, 10) // never received
	// P2 crashes here.
	s.suspect(p3, p2)
	if aborted {
		s.abort(p3, 1, p2)
		s.deliverMarker(c13, 1) // dropped: snapshot 1 is aborted at P3
	} else {
		s.deliverMarker(c13, 1) // P3 records and waits for P2's marker
		s.deliverMarker(c31, 1)
	}
	s.suspect(p1, p2)
	if aborted {
		s.abort(p1, 1, p2)
	}
	s.send(p1, p3, 5)
	s.deliverApp(c13, 5)
	s.send(p3, p1, 7)
	s.deliverApp(c31, 7)
	return s
}

// faultScenarios are the runs with a crash: suspicions, aborts and
// dropped markers (tla/ChandyLamportFaults.tla), and the mistakes the
// audit rejects.
func faultScenarios() ([]Scenario, error) {
	var out []Scenario
	sc, err := crashAbort(true).scenario("conforms/crash-abort.jsonl",
		"Crash and abort, three accounts of $100: P1 initiates snapshot 1 and sends P2 $10; P2 crashes (its log ends); P3 suspects P2 and aborts snapshot 1, dropping P1's marker when it comes; P1 suspects P2 and aborts; the survivors trade $5 and $7. P1's marker and the $10 stay in P1->P2 (crash-stop); every snapshot ends complete or aborted.", "", true)
	if err != nil {
		return nil, err
	}
	out = append(out, sc)

	// A node reports snapshot 1 complete, though it was aborted.
	bad := sc
	bad.Name = "rejects/AbortSound-reported-after-abort.jsonl"
	bad.Doc = "The crash-abort run, with snapshot 1 reported complete (the initial balances, nothing in flight) though P1 and P3 aborted it: an aborted snapshot is never complete (AbortSound)."
	bad.Trace = cloneTrace(sc.Trace)
	bad.Trace.Header.Note = bad.Doc
	g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{p1: {Bal: 100}, p2: {Bal: 100}, p3: {Bal: 100}}, Chans: map[spec.Channel][]spec.AppMsg{}}
	cut := map[spec.Channel]spec.ChanCut{}
	for _, c := range bad.Trace.Header.Topology.Chans {
		cut[c] = spec.ChanCut{}
	}
	bad.Trace.Recorded = []spec.RecordedSnapshot{spec.NewRecordedSnapshot(1, p1, g, cut)}
	bad.Want = spec.PropAbortSound
	out = append(out, bad)

	// P3 receives the aborted snapshot's marker instead of dropping it.
	bad = sc
	bad.Name = "rejects/Enabled-aborted-marker-received.jsonl"
	bad.Doc = "The crash-abort run, with P3 taking P1's marker of snapshot 1 by the Receiving Rule after it aborted snapshot 1: RecvMarkerF is not enabled for the marker of an aborted snapshot (tla/ChandyLamportFaults.tla line 85); DropMarker is."
	bad.Trace = cloneTrace(sc.Trace)
	bad.Trace.Header.Note = bad.Doc
	found := false
	for i, e := range bad.Trace.Events {
		if e.Action == spec.DropMarker {
			e.Action, e.First = spec.RecvMarker, true
			bad.Trace.Events[i], found = e, true
			break
		}
	}
	if !found { // a broken node took the marker: the verdict is the conforming run's
		bad.Skipped = append(bad.Skipped, "the crash-abort run drops no marker, so none is received instead")
	}
	bad.Want = spec.CheckEnabled
	out = append(out, bad)

	// P1 sends P2 a transfer after suspecting it.
	bad = sc
	bad.Name = "rejects/Enabled-send-to-suspected-peer.jsonl"
	bad.Doc = "The crash-abort run, with P1 suspecting P2 before it sends P2 the $10 (the events swapped): SendAppF is not enabled for a transfer to a suspected process (tla/ChandyLamportFaults.tla line 66)."
	bad.Trace = cloneTrace(sc.Trace)
	bad.Trace.Header.Note = bad.Doc
	if err := suspectFirst(&bad.Trace, p1, p2); err != nil { // a broken node: the events are not there to swap
		bad.Skipped = append(bad.Skipped, err.Error())
	}
	bad.Want = spec.CheckEnabled
	out = append(out, bad)

	// Recovery from an aborted snapshot: P2 initiates snapshot 1 and P1
	// crashes before its marker arrives; P2 suspects P1 and aborts
	// snapshot 1; the nodes restart from it anyway.
	first := twoAccounts()
	first.send(p1, p2, 30)
	first.initiate(p2, 1) // the marker to P1 is never received
	// P1 crashes here.
	first.suspect(p2, p1)
	first.abort(p2, 1, p1)
	second := restoreNet(first, 1)
	second.send(p2, p1, 15)
	second.deliver(c21)
	sc, err = history(first, second, 1, "rejects/RecoveredFromComplete-aborted-snapshot.jsonl",
		"Recovery from an aborted snapshot: two accounts; P1 sends P2 $30, P2 initiates snapshot 1, P1 crashes before P2's marker reaches it; P2 suspects P1 and aborts snapshot 1; the nodes restart from snapshot 1 anyway, each from its initial balance for want of a part: the $30 P1 had sent is lost to P2 and restored to P1, and the audit stops at the restore line (an aborted snapshot is never used for recovery).", spec.PropRecoveredFromComplete, true)
	if err != nil {
		return nil, err
	}
	out = append(out, sc)

	// Suspicions but no abort: snapshot 1 stays pending at the end.
	sc, err = crashAbort(false).scenario("rejects/SnapshotsEnd-crash-not-aborted.jsonl",
		"Crash without abort: P1 initiates snapshot 1, P2 crashes, P1 and P3 suspect it but abort nothing, and the trace claims a drained run: snapshot 1 is neither complete nor aborted (SnapshotsEnd).", spec.PropSnapshotsEnd, true)
	if err != nil {
		return nil, err
	}
	return append(out, sc), nil
}

// cloneTrace copies tr's events and recorded snapshots, so that a
// rejected variant can edit them.
func cloneTrace(tr spec.Trace) spec.Trace {
	tr.Events = append([]spec.Event(nil), tr.Events...)
	tr.Recorded = append([]spec.RecordedSnapshot(nil), tr.Recorded...)
	return tr
}

// withoutClocks is a copy of tr whose events give no vector clock, as a
// trace whose order in the file is causal may be written: a test that
// edits events and not the clocks counting them replays its edit so,
// else the audit refuses the clocks first (checkClocks).
func withoutClocks(tr spec.Trace) spec.Trace {
	tr = cloneTrace(tr)
	for i := range tr.Events {
		tr.Events[i].VC = nil
	}
	return tr
}

// suspectFirst moves p's Suspect(q) before p's first transfer to q, as
// a node that kept sending after suspecting would log it: the two
// events swap their places, step numbers and clocks, and each reports
// the state after it in its new place.
func suspectFirst(tr *spec.Trace, p, q spec.ProcID) error {
	send, sus := -1, -1
	for i, e := range tr.Events {
		switch {
		case send < 0 && e.Action == spec.SendApp && e.From == p && e.To == q:
			send = i
		case send >= 0 && e.Action == spec.Suspect && e.Proc == p && e.Peer == q:
			sus = i
		}
	}
	if send < 0 || sus < 0 {
		return fmt.Errorf("no transfer %s->%s followed by Suspect(%s) at %s", p, q, q, p)
	}
	before := spec.LocalState{Bal: tr.Header.InitBal[p]}
	for _, e := range tr.Events[:send] {
		if e.Proc == p {
			before = e.After
		}
	}
	a, b := tr.Events[send], tr.Events[sus]
	a.Seq, b.Seq = b.Seq, a.Seq
	a.VC, b.VC = b.VC, a.VC
	b.After = before
	ev := append([]spec.Event(nil), tr.Events[:send]...)
	ev = append(ev, b)
	ev = append(ev, tr.Events[send+1:sus]...)
	ev = append(ev, a)
	tr.Events = append(ev, tr.Events[sus+1:]...)
	return nil
}
