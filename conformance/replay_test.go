package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// richRun is a drained bank run with two concurrent snapshots and
// messages in flight across both cuts, with the nodes' recorded states.
func richRun(t *testing.T) spec.Trace {
	t.Helper()
	s := bankScript(spec.Complete(3), map[spec.ProcID]int64{p1: 100, p2: 50, p3: 10})
	s.send(p1, p2, 30)
	s.send(p2, p3, 20)
	s.initiate(p1, 1)
	s.send(p3, p1, 5)
	s.initiate(p3, 2)
	s.send(p1, p3, 10)
	s.deliver(c12) // 30, recorded by no one yet
	s.deliver(spec.Channel{From: p3, To: p1})
	s.deliver(spec.Channel{From: p2, To: p3})
	require.NoError(t, s.err)
	require.NoError(t, s.n.Drain())
	tr := s.n.Trace("")
	tr.Header.Drained = true
	require.Len(t, tr.Recorded, 2)
	return tr
}

func TestReplayConforms(t *testing.T) {
	tr := richRun(t)
	r := Replay(tr, Options{})
	require.True(t, r.OK(), "%s", r)
	assert.Equal(t, len(tr.Events), r.Steps)
	assert.Equal(t, 2, r.Snapshots)
	assert.Equal(t, fmt.Sprintf("conforms: %d steps, 2 snapshots, all properties hold\n", len(tr.Events)), r.String())
	// Without the reported states they are derived from the events.
	derived := tr
	derived.Recorded = nil
	assert.True(t, Replay(derived, Options{}).OK())
	assert.Empty(t, CheckRun(Run{Topo: tr.Header.Topology, InitBal: tr.Header.InitBal, Events: tr.Events, Recorded: tr.RecordedStates()}))
}

// find returns the index of the first event matching f.
func find(t *testing.T, evs []spec.Event, f func(spec.Event) bool) int {
	t.Helper()
	for i, e := range evs {
		if f(e) {
			return i
		}
	}
	t.Fatal("no such event")
	return -1
}

// TestReplayMutations breaks a conforming run in one place at a time and
// checks that Replay reports the right step and check.
func TestReplayMutations(t *testing.T) {
	isRecvApp := func(e spec.Event) bool { return e.Action == spec.RecvApp }
	isRecvMarker := func(e spec.Event) bool { return e.Action == spec.RecvMarker }
	cases := []struct {
		name     string
		mutate   func(tr *spec.Trace) int // returns the diverging event index, -1 for the end
		check    spec.Property            // the divergence's check
		property spec.Property            // Report.Property()
	}{
		{"wrong state after a receive", func(tr *spec.Trace) int {
			i := find(t, tr.Events, isRecvApp)
			tr.Events[i].After.Bal += 30 // credited twice
			return i
		}, spec.CheckState, spec.CheckState},
		{"wrong amount received", func(tr *spec.Trace) int {
			i := find(t, tr.Events, isRecvApp)
			tr.Events[i].Amount++
			return i
		}, spec.CheckMessage, spec.PropChandyLamportTheorem},
		{"wrong message number sent", func(tr *spec.Trace) int {
			tr.Events[0].Msg = 7
			return 0
		}, spec.CheckMessage, spec.CheckWellFormed},
		{"wrong case of the receiving rule", func(tr *spec.Trace) int {
			i := find(t, tr.Events, isRecvMarker)
			tr.Events[i].First = !tr.Events[i].First
			return i
		}, spec.CheckMessage, spec.CheckMessage},
		{"marker of another snapshot", func(tr *spec.Trace) int {
			i := find(t, tr.Events, func(e spec.Event) bool { return e.Action == spec.RecvMarker && e.Snap == 1 })
			tr.Events[i].Snap = 2
			return i
		}, spec.CheckMessage, spec.CheckCompleteClaim},
		{"initiated by another process", func(tr *spec.Trace) int {
			tr.Header.Snaps = map[spec.SnapID]spec.ProcID{1: p2, 2: p3}
			return find(t, tr.Events, func(e spec.Event) bool { return e.Action == spec.Initiate })
		}, spec.CheckEnabled, spec.CheckEnabled},
		{"budget exceeded", func(tr *spec.Trace) int {
			tr.Header.Budget = map[spec.ProcID]int{p1: 1, p2: 1, p3: 1}
			return find(t, tr.Events, func(e spec.Event) bool { return e.Action == spec.SendApp && e.Proc == p1 && e.Msg == 1 && e.To == p3 })
		}, spec.CheckEnabled, spec.PropChandyLamportTheorem},
		{"receive before its send", func(tr *spec.Trace) int {
			*tr = withoutClocks(*tr) // they say the receive follows the send (TestReplayGivenClocks)
			i := find(t, tr.Events, isRecvApp)
			j := find(t, tr.Events, func(e spec.Event) bool { return e.Action == spec.SendApp && e.Chan() == tr.Events[i].Chan() })
			e := tr.Events[i]
			copy(tr.Events[j+1:i+1], tr.Events[j:i])
			tr.Events[j] = e
			return j
		}, spec.CheckEnabled, spec.PropChandyLamportTheorem},
		{"a marker never received", func(tr *spec.Trace) int {
			i := len(tr.Events) - 1
			for tr.Events[i].Action != spec.RecvMarker {
				i--
			}
			tr.Events = append(tr.Events[:i], tr.Events[i+1:]...)
			return -1
		}, spec.PropSnapshotsComplete, spec.CheckCompleteClaim},
		{"recorded balance wrong", func(tr *spec.Trace) int {
			r := recordedOf(t, tr, 2)
			l := r.Procs[p2]
			l.Bal += 1
			r.Procs[p2] = l
			// the step that completes snapshot 2 in the model
			i := len(tr.Events) - 1
			for tr.Events[i].Snap != 2 {
				i--
			}
			return i
		}, spec.CheckRecordedState, spec.PropConservation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := richRun(t)
			i := tc.mutate(&tr)
			r := Replay(tr, Options{})
			require.False(t, r.OK())
			require.NotNil(t, r.Divergence, "%s", r)
			assert.Equal(t, tc.check, r.Divergence.Property, "%s", r)
			assert.Equal(t, i+1, r.Divergence.Step, "%s", r)
			assert.Equal(t, tc.property, r.Property(), "%s", r)
			assert.Contains(t, r.String(), "property: "+tc.property)
		})
	}
}

// TestCheckRunTheoremAlone shows the constructive theorem check catching
// what the other checks cannot see: a recorded state whose total is right
// but that no reordering of the run reaches (money moved between balances).
func TestCheckRunTheoremAlone(t *testing.T) {
	tr := richRun(t)
	rec := tr.RecordedStates()
	g := rec[1]
	a, b := g.Procs[p1], g.Procs[p2]
	a.Bal, b.Bal = a.Bal-1, b.Bal+1
	g.Procs[p1], g.Procs[p2] = a, b
	rec[1] = g
	vs := CheckRun(Run{Topo: tr.Header.Topology, InitBal: tr.Header.InitBal, Events: tr.Events, Recorded: rec})
	require.Len(t, vs, 1, "%v", vs)
	assert.Equal(t, spec.PropChandyLamportTheorem, vs[0].Property)
	assert.Equal(t, spec.SnapID(1), vs[0].Snap)
	assert.Contains(t, vs[0].Detail, "pre-recording steps end in another state")
}

// TestCheckRunStable: a snapshot that claims termination while the run
// had not terminated violates StableCatalogue.
func TestCheckRunStable(t *testing.T) {
	s := twoAccounts()
	s.send(p1, p2, 30)
	s.initiate(p1, 1)
	require.NoError(t, s.err)
	require.NoError(t, s.n.Drain())
	tr := s.n.Trace("")
	rec := s.n.Recorded()
	// Budget 1 each: P2 has not sent, so nothing has terminated; claim P2
	// spent its budget in the snapshot.
	g := rec[1].Clone()
	l := g.Procs[p2]
	l.Sent = 1
	g.Procs[p2] = l
	rec[1] = g
	vs := CheckRun(Run{Topo: tr.Header.Topology, InitBal: tr.Header.InitBal, Budget: map[spec.ProcID]int{p1: 1, p2: 1}, Events: tr.Events, Recorded: rec})
	var props []spec.Property
	for _, v := range vs {
		props = append(props, v.Property)
	}
	assert.Contains(t, props, spec.PropStableCatalogue, "%v", vs)
}

func TestConfigFromTrace(t *testing.T) {
	tr := richRun(t)
	cfg, err := ConfigFromTrace(tr)
	require.NoError(t, err)
	assert.Equal(t, []int64{5, 10, 20, 30}, cfg.Amount)
	assert.Equal(t, []int{2, 1, 1}, cfg.Budget) // P1 sent twice
	assert.Equal(t, []spec.SnapID{1, 2}, []spec.SnapID(cfg.Snap))
	// Without the header's snaps, initiators come from Initiate events.
	tr.Header.Snaps = nil
	cfg, err = ConfigFromTrace(tr)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2}, cfg.Initiator)
	// A header missing a balance cannot be replayed.
	delete(tr.Header.InitBal, p3)
	r := Replay(tr, Options{})
	require.Error(t, r.Err)
	assert.Contains(t, r.String(), "cannot replay")
}

// recordedOf is trace tr's recorded snapshot s, to mutate in place.
func recordedOf(t *testing.T, tr *spec.Trace, s spec.SnapID) *spec.RecordedSnapshot {
	t.Helper()
	for i := range tr.Recorded {
		if tr.Recorded[i].Snap == s {
			return &tr.Recorded[i]
		}
	}
	t.Fatalf("no recorded snapshot %d", s)
	return nil
}

// A recorded snapshot whose initiator is not the model's diverges when the
// snapshot completes.
func TestReplayRecordedInitiator(t *testing.T) {
	tr := richRun(t)
	recordedOf(t, &tr, 1).Initiator = p2
	r := Replay(tr, Options{})
	require.NotNil(t, r.Divergence, "%s", r)
	assert.Equal(t, spec.CheckRecordedState, r.Divergence.Property)
	assert.Contains(t, r.String(), "model:    initiator P1")
	assert.Contains(t, r.String(), "reported: initiator P2")
}

// The drained claim is the header's; Options.Drained adds it.
func TestReplayDrained(t *testing.T) {
	s := twoAccounts()
	s.initiate(p1, 1)
	s.deliver(c12) // P2's marker to P1 is never delivered
	require.NoError(t, s.err)
	tr := s.n.Trace("")
	assert.True(t, Replay(tr, Options{}).OK())
	assert.Equal(t, spec.PropSnapshotsComplete, Replay(tr, Options{Drained: true}).Property())
	tr.Header.Drained = true
	assert.Equal(t, spec.PropSnapshotsComplete, Replay(tr, Options{}).Property())
}

func TestTraceFileRoundTrip(t *testing.T) {
	tr := richRun(t)
	path := filepath.Join(t.TempDir(), "run.jsonl")
	require.NoError(t, spec.WriteTraceFile(path, tr))
	got, lines, err := ReadTraceFile(path)
	require.NoError(t, err)
	assert.Equal(t, len(tr.Events), len(got.Events))
	assert.True(t, got.Header.Drained)
	assert.Equal(t, 2, lines.Events[0])
	assert.Equal(t, []int{len(tr.Events) + 2, len(tr.Events) + 3}, lines.Recorded)
	require.Len(t, got.Recorded, 2)
	for s, g := range tr.RecordedStates() {
		assert.Empty(t, g.Diff(got.RecordedStates()[s]))
	}
	r, err := AuditFile(path, Options{})
	require.NoError(t, err)
	assert.True(t, r.OK(), "%s", r)
	// Blank lines shift the reported lines.
	b, _ := os.ReadFile(path)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), "\n", "\n\n", 2)), 0o644))
	_, lines, err = ReadTraceFile(path)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 5, 6}, lines.Events[:3])
	// A malformed recorded snapshot is an error naming the file and line.
	require.NoError(t, os.WriteFile(path, append(b, `{"recorded":{"snap":1,"initiator":"P1","procs":{},"chans":{}}}`+"\n"...), 0o644))
	_, _, err = ReadTraceFile(path)
	assert.ErrorContains(t, err, fmt.Sprintf("run.jsonl: trace line %d: recorded snapshot: snapshot 1: no recorded state for P1", len(tr.Events)+4))
}

// TestReplayChecksCutSeqs: a run whose only defect is a recorded
// snapshot's cut seqs (restore would resume a channel at the wrong seq)
// diverges on ConsistentCut when the model completes the snapshot, and
// the run checks name it too, from the events.
func TestReplayChecksCutSeqs(t *testing.T) {
	tr := richRun(t)
	c := spec.Channel{From: p1, To: p2}
	k := tr.Recorded[0].Cut[c]
	require.Equal(t, spec.ChanCut{Sent: 1, Got: 1}, k, "P1 sent the 30 before recording, P2 received it before recording")
	bad := tr
	bad.Recorded = append([]spec.RecordedSnapshot(nil), tr.Recorded...)
	cut := map[spec.Channel]spec.ChanCut{}
	for ch, v := range tr.Recorded[0].Cut {
		cut[ch] = v
	}
	cut[c] = spec.ChanCut{Sent: 2, Got: 1} // a cut seq too late, like the cut-late mutant
	bad.Recorded[0] = spec.NewRecordedSnapshot(tr.Recorded[0].Snap, tr.Recorded[0].Initiator, tr.Recorded[0].State(), cut)
	r := Replay(bad, Options{RecordedLines: []int{40, 41}})
	require.NotNil(t, r.Divergence, "%s", r)
	assert.Equal(t, spec.PropConsistentCut, r.Property(), "%s", r)
	assert.Contains(t, r.Divergence.Detail, "snapshot 1 completes, and the cut seqs the implementation reported (trace line 40) are not the model's cutSent and Len(cutGot): restore would resume P1->P2 at the wrong seq")
	assert.Equal(t, "P1->P2 sent 1, got 1", r.Divergence.Expected)
	assert.Equal(t, "P1->P2 sent 2, got 1", r.Divergence.Reported)
	var props []spec.Property
	for _, v := range r.Violations {
		props = append(props, v.Property)
	}
	assert.Equal(t, []spec.Property{spec.PropConsistentCut, spec.PropExactChannelState}, props, "%s", r)
	assert.Contains(t, r.Violations[0].Detail, "P1->P2's reported cut seqs are sent 2, got 1, the events say sent 1, got 1")

	// Through a file: the line is the recorded line's.
	dir := t.TempDir()
	path := filepath.Join(dir, "cut.jsonl")
	require.NoError(t, spec.WriteTraceFile(path, bad))
	rep, err := AuditFile(path, Options{})
	require.NoError(t, err)
	assert.Equal(t, spec.PropConsistentCut, rep.Property())
	assert.Contains(t, rep.String(), fmt.Sprintf("(trace line %d)", len(bad.Events)+2))
}

// TestNoIncompleteAfterDivergence: a replay that diverges at a step stops
// there, and what the model's state then lacks is no fact of the run (the
// step judged may be the very marker it lacks), so the report lists no
// incomplete snapshot; a replay that reached the end of its trace (a
// divergence at the end, or an incarnation replayed whole before a
// restore) still lists them.
func TestNoIncompleteAfterDivergence(t *testing.T) {
	for _, c := range []struct {
		path string
		want string // an incomplete line the report has, "" for none
	}{
		// Diverges at the marker receipt the stopped replay lacks.
		{"../traces/rejects/ExactChannelState-missing-message.jsonl", ""},
		// Diverges at P2's receive; P2 records at the next line.
		{"../traces/rejects/ConsistentCut-orphan.jsonl", ""},
		{"../traces/rejects/SnapshotsComplete-lost-marker.jsonl", "incomplete: snapshot 1 was initiated but never completed: P1 never received its marker on P2->P1"},
		{"../traces/rejects/RecoveredFromComplete-incomplete-snapshot.jsonl", "incomplete: snapshot 1 was initiated but never completed: incarnation 1: P2 never received its marker on P1->P2"},
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			rep, err := AuditFile(c.path, Options{})
			require.NoError(t, err)
			require.NotNil(t, rep.Divergence)
			out := rep.String()
			if c.want == "" {
				assert.Empty(t, rep.Incomplete, out)
				assert.NotContains(t, out, "incomplete:")
				return
			}
			assert.Contains(t, out, c.want)
		})
	}
}
