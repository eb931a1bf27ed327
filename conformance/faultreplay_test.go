package conformance

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// The crash rule: a process some node still suspects at the end crashed
// just after its last step.
func TestCrashRule(t *testing.T) {
	ev := func(p spec.ProcID, a spec.Action, peer spec.ProcID) spec.Event {
		return spec.Event{Proc: p, Action: a, Peer: peer}
	}
	for _, tc := range []struct {
		name string
		evs  []spec.Event
		want map[int][]spec.ProcID
	}{
		{"log ends before the suspicion", []spec.Event{ev(p2, spec.Initiate, ""), ev(p1, spec.Initiate, ""), ev(p1, spec.Suspect, p2), ev(p3, spec.Suspect, p2)}, map[int][]spec.ProcID{1: {p2}}},
		{"falsely suspected, then crashed", []spec.Event{ev(p1, spec.Suspect, p2), ev(p2, spec.Initiate, ""), ev(p3, spec.Initiate, "")}, map[int][]spec.ProcID{2: {p2}}},
		{"the suspicion withdrawn", []spec.Event{ev(p1, spec.Suspect, p2), ev(p1, spec.Unsuspect, p2)}, map[int][]spec.ProcID{}},
		{"withdrawn by one node, held by another", []spec.Event{ev(p1, spec.Suspect, p2), ev(p3, spec.Suspect, p2), ev(p1, spec.Unsuspect, p2)}, map[int][]spec.ProcID{0: {p2}}},
		{"two that never stepped", []spec.Event{ev(p1, spec.Suspect, p3), ev(p1, spec.Suspect, p2)}, map[int][]spec.ProcID{0: {p2, p3}}},
	} {
		assert.Equal(t, tc.want, crashes(tc.evs), tc.name)
	}
}

// A false suspicion, withdrawn: P1 suspects P2, which goes on sending;
// P1 refuses nothing to P2 once it withdraws the suspicion. The replay
// takes FalseSuspect(P2) and lets P1's later transfer to P2 through.
func TestReplayFalseSuspicionWithdrawn(t *testing.T) {
	s := threeAccounts()
	s.suspect(p1, p2)
	s.send(p2, p1, 5)
	s.deliverApp(c21, 5)
	require.NoError(t, s.err)
	st, err := s.n.Nodes[p1].Unsuspect(p2)
	require.NoError(t, err)
	s.n.Events = append(s.n.Events, st.Event) // no frames to queue
	s.send(p1, p2, 3)
	s.deliverApp(c12, 3)
	sc, err := s.scenario("false suspicion", "", "", true)
	require.NoError(t, err)
	r := Replay(sc.Trace, Options{})
	assert.True(t, r.OK(), "%s", r)

	// Without the withdrawal, P1's transfer to P2 is one to a suspected
	// peer.
	tr := withoutClocks(sc.Trace)
	for i, e := range tr.Events {
		if e.Action == spec.Unsuspect {
			tr.Events = append(tr.Events[:i], tr.Events[i+1:]...)
			break
		}
	}
	r = Replay(tr, Options{})
	require.NotNil(t, r.Divergence, "%s", r)
	assert.Equal(t, spec.CheckEnabled, r.Property(), "%s", r)
	assert.Contains(t, r.Divergence.Detail, "SendAppF")
}

// The spec's guards are read at the node that takes the step: P3's
// suspicion of P2 does not let P1 abort for P2.
func TestReplayAbortNeedsTheNodesOwnSuspicion(t *testing.T) {
	sc, err := crashAbort(true).scenario("crash-abort", "", "", true)
	require.NoError(t, err)
	tr := withoutClocks(sc.Trace)
	dropped := false
	for i, e := range tr.Events {
		if e.Action == spec.Suspect && e.Proc == p1 {
			tr.Events, dropped = append(tr.Events[:i], tr.Events[i+1:]...), true
			break
		}
	}
	require.True(t, dropped)
	r := Replay(tr, Options{})
	require.NotNil(t, r.Divergence, "%s", r)
	assert.Equal(t, spec.CheckEnabled, r.Property(), "%s", r)
	assert.Equal(t, "Abort(1, P2) at P1", r.Divergence.Action)
	assert.Contains(t, r.Divergence.Detail, "Abort")
	assert.Contains(t, r.Divergence.Expected, "P1 suspects {}")
}

// Unsuspecting a peer the node does not suspect is refused.
func TestReplayUnsuspectWithoutSuspicion(t *testing.T) {
	sc, err := threeAccounts().scenario("empty", "", "", true)
	require.NoError(t, err)
	tr := cloneTrace(sc.Trace)
	tr.Events = append(tr.Events, spec.Event{Proc: p1, Seq: 1, Action: spec.Unsuspect, Peer: p2, After: spec.LocalState{Bal: 100}})
	r := Replay(tr, Options{})
	require.NotNil(t, r.Divergence, "%s", r)
	assert.Equal(t, spec.CheckEnabled, r.Property())
	assert.Contains(t, r.Divergence.Detail, "P1 withdraws a suspicion of P2 it does not hold")
}
