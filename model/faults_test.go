package model

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/markerwave/markerwave/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// must returns the successor an exported action returned, failing the
// test if the action was not enabled: st = must(t)(Crash(cfg, st, "P1")).
func must(t *testing.T) func(*State, error) *State {
	return func(st *State, err error) *State {
		t.Helper()
		require.NoError(t, err)
		return st
	}
}

// A behaviour of MCFaultsTwoSnap: snapshot 1 completes with $30 in flight
// on P1 -> P2, then P1 sends again and P2 crashes before receiving; the
// detector suspects P2; the system rolls back to snapshot 1: the balances
// and channels it recorded, the recorded transfer first and renumbered 1,
// a new incarnation reachable from the initial state.
func TestRecoverRestoresLatestComplete(t *testing.T) {
	cfg := loadTLA(t, "MCFaultsTwoSnap")
	st := Init(cfg)
	st = must(t)(InitiateF(cfg, st, 1))
	st = must(t)(SendAppF(cfg, st, "P1", "P2", 30)) // after P1's cut: not in snapshot 1
	st = must(t)(SendAppF(cfg, st, "P2", "P1", 30)) // before P2's cut: recorded on P2 -> P1
	st = must(t)(RecvMarkerF(cfg, st, "P1", "P2"))
	st = must(t)(RecvAppF(cfg, st, "P2", "P1"))
	st = must(t)(RecvMarkerF(cfg, st, "P2", "P1"))
	require.True(t, Complete(cfg, st, 0))
	rec := RecordedApp(st, 0)
	assert.Equal(t, []spec.AppMsg{{Amt: 30, Seq: 1}}, rec.Chan[cfg.ChanIndex("P2", "P1")])

	st = must(t)(Crash(cfg, st, "P2"))
	_, err := RecvAppF(cfg, st, "P1", "P2")
	assertNotEnabled(t, err, NotAlive, 71)
	st = must(t)(Detect(cfg, st, "P2"))
	_, err = SendAppF(cfg, st, "P1", "P2", 30)
	assertNotEnabled(t, err, ReceiverSuspected, 66) // before SendApp's own conjuncts (P1 has spent its budget)
	st = must(t)(Recover(cfg, st))

	assert.Equal(t, 1, st.Inc)
	assert.Equal(t, OriginComplete, st.RestoredFrom)
	assert.True(t, st.Base.OK, "the restored state is reachable")
	assert.Equal(t, rec.Proc, st.Proc)
	for c := range cfg.Topo.Chans {
		var apps []spec.AppMsg
		for _, m := range st.Chan[c] {
			require.Equal(t, KindApp, m.Kind, "no marker survives a recovery")
			apps = append(apps, m.AppMsg)
		}
		assert.Equal(t, Renumber(rec.Chan[c]), apps)
		assert.Equal(t, uint64(len(rec.Chan[c])), st.NSent[c])
	}
	assert.Equal(t, allProcs(cfg), st.Alive)
	assert.Zero(t, st.Suspected)
	for _, inv := range cfg.Invariants {
		f, _ := InvariantByName(inv)
		assert.True(t, f(cfg, st), inv)
	}
	// The replayed transfer is delivered first, and counted once.
	st = must(t)(RecvAppF(cfg, st, "P2", "P1"))
	assert.Equal(t, int64(130), st.Proc[cfg.Topo.ProcIndex("P1")].Bal)
	assert.True(t, ExactlyOnce(cfg, st))
	assert.True(t, MoneyConserved(cfg, st))
}

// assertNotEnabled checks the conjunct an exported action reports and the
// line of tla/ChandyLamportFaults.tla it cites.
func assertNotEnabled(t *testing.T, err error, k Conjunct, line int) {
	t.Helper()
	var ne *NotEnabled
	require.True(t, errors.As(err, &ne), "%v", err)
	assert.Equal(t, k, ne.Conjunct, ne.Error())
	assert.Equal(t, line, ne.Source.Line, ne.Error())
	assert.NotEmpty(t, ne.Why)
}

// Each faults action names the conjunct that is false, with its line.
func TestFaultsNotEnabled(t *testing.T) {
	cfg := loadTLA(t, "MCFaultsTwoBank") // MaxCrash 1, MaxRecover 1, FalseSuspicion FALSE
	st := Init(cfg)
	_, err := Recover(cfg, st)
	assertNotEnabled(t, err, NoneSuspected, 189)
	_, err = Detect(cfg, st, "P1")
	assertNotEnabled(t, err, StillAlive, 111)
	_, err = FalseSuspect(cfg, st, "P1")
	assertNotEnabled(t, err, NoFalseSuspicion, 119)
	_, err = Abort(cfg, st, 1, "P1")
	assertNotEnabled(t, err, NotPending, 133)
	_, err = Crash(cfg, st, "P9")
	assertNotEnabled(t, err, NoProc, 210)

	st = must(t)(InitiateF(cfg, st, 1))
	st = must(t)(Crash(cfg, st, "P2"))
	_, err = Crash(cfg, st, "P1")
	assertNotEnabled(t, err, CrashesSpent, 103)
	_, err = Abort(cfg, st, 1, "P2")
	assertNotEnabled(t, err, NotSuspected, 134)
	st = must(t)(Detect(cfg, st, "P2"))
	_, err = Detect(cfg, st, "P2")
	assertNotEnabled(t, err, AlreadySuspected, 112)
	_, err = Recover(cfg, st)
	assertNotEnabled(t, err, SnapshotPending, 191)
	_, err = Abort(cfg, st, 1, "P1")
	assertNotEnabled(t, err, NotSuspected, 134)
	st = must(t)(Abort(cfg, st, 1, "P2"))
	assert.Equal(t, ProcSet{}.With(cfg.Topo.ProcIndex("P2")), st.AbortedBy[0], "the cause is recorded")
	_, err = RecvMarkerF(cfg, st, "P1", "P2")
	assertNotEnabled(t, err, NotAlive, 82)
	st = must(t)(Recover(cfg, st)) // no complete snapshot: back to the incarnation's start
	assert.Equal(t, OriginInit, st.RestoredFrom)
	assert.Equal(t, InitLocal(cfg), st.Proc)
	_, err = Recover(cfg, st)
	assertNotEnabled(t, err, NoneSuspected, 189)
}

// A marker of an aborted snapshot is dropped, never received.
func TestDropMarker(t *testing.T) {
	cfg := loadTLA(t, "MCFaultsRing") // FalseSuspicion TRUE
	st := Init(cfg)
	st = must(t)(InitiateF(cfg, st, 1))
	st = must(t)(FalseSuspect(cfg, st, "P3"))
	st = must(t)(Abort(cfg, st, 1, "P3"))
	_, err := RecvMarkerF(cfg, st, "P1", "P2")
	assertNotEnabled(t, err, MarkerAborted, 85)
	st = must(t)(DropMarker(cfg, st, "P1", "P2"))
	assert.Empty(t, st.Chan[cfg.ChanIndex("P1", "P2")])
	assert.False(t, st.Recorded[0].Has(cfg.Topo.ProcIndex("P2")))
	_, err = DropMarker(cfg, st, "P1", "P2")
	assertNotEnabled(t, err, NoPosition, 92)
	assert.Equal(t, -1, SnapshotEnded(cfg, st), "an aborted snapshot has ended")
}

// Without a failure detector the shortest fair behaviour with a pending
// snapshot forever: P2 crashes before recording.
func TestNoDetectorCounterexample(t *testing.T) {
	cfg := loadTLA(t, "MCFaultsNoDetector")
	res, err := Explore(cfg, Options{})
	require.NoError(t, err)
	require.NotNil(t, res.Violation)
	assert.Equal(t, spec.PropSnapshotsEnd, res.Violation.Property)
	var got []string
	for _, s := range res.Violation.Trace {
		got = append(got, s.Label)
	}
	assert.Equal(t, []string{"", "InitiateF(1)", `Crash("P2")`}, got)
}

// The faults properties are the faults module's: NewConfig refuses them
// for the other specifications, and SnapshotsComplete for the faults ones.
func TestFaultsNames(t *testing.T) {
	base := loadTLA(t, "MCTwoBank")
	k := Constants{Topo: base.Topo, InitBal: map[spec.ProcID]int64{"P1": 1, "P2": 0}, Amount: []int64{1},
		Budget: map[spec.ProcID]int{"P1": 1, "P2": 1}, Initiator: map[spec.SnapID]spec.ProcID{1: "P1"}}
	_, err := NewConfig(k, VariantSpec, []spec.Property{spec.PropMoneyConserved}, nil)
	assert.Error(t, err)
	_, err = NewConfig(k, VariantSpec, nil, []spec.Property{spec.PropSnapshotsEnd})
	assert.Error(t, err)
	_, err = NewConfig(k, VariantFaults, nil, []spec.Property{spec.PropSnapshotsComplete})
	assert.Error(t, err)
	_, err = NewConfig(k, VariantFaults, []spec.Property{spec.PropTypeOK, spec.PropMoneyConserved}, []spec.Property{spec.PropSnapshotsEnd})
	assert.NoError(t, err)
}

// Each conjunct's source is quoted from the line of the .tla module it
// cites, so that a spec edit that moves a line is caught here. Two
// quotes are spelled out rather than copied: NoChannel's <<p, q>> \in Chan
// is the \E c \in Chan of the Next disjunct it cites, and Initiate's
// Initiator[s] is its LET p == Initiator[s].
func TestConjunctSourcesQuoteTheSpec(t *testing.T) {
	spelled := strings.NewReplacer(`<<p, q>> \in Chan`, `\E c \in Chan`, `Initiator[s] \notin`, `p \notin`)
	lines := map[string][]string{}
	for kind, m := range conjunctText {
		for k, src := range m {
			ls, ok := lines[src.Module]
			if !ok {
				b, err := os.ReadFile(filepath.Join(tlaDir, src.Module))
				require.NoError(t, err)
				ls = strings.Split(string(b), "\n")
				lines[src.Module] = ls
			}
			require.LessOrEqual(t, src.Line, len(ls), "action %v conjunct %v: %s", kind, k, src)
			assert.Contains(t, ls[src.Line-1], spelled.Replace(src.TLA), "action %v conjunct %v: %s", kind, k, src)
		}
	}
}
