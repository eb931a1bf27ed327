package barrier

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/spec"
)

// run applies actions in order from Init, failing the test if one is not
// enabled.
func run(t *testing.T, cfg *Config, as ...Action) *State {
	t.Helper()
	st := Init(cfg)
	for _, a := range as {
		n, err := a.Apply(cfg, st)
		require.NoError(t, err, a.Label(cfg))
		st = n
	}
	return st
}

func node(t *testing.T, cfg *Config, name string) int {
	t.Helper()
	n, ok := cfg.NodeIndex(name)
	require.True(t, ok, name)
	return n
}

func edge(t *testing.T, cfg *Config, from, to string) int {
	t.Helper()
	e, ok := cfg.EdgeIndex(from, to)
	require.True(t, ok, "<<%s, %s>>", from, to)
	return e
}

// Every refusal names the false conjunct, where the .tla writes it, and
// what the state holds instead.
func TestNotEnabledNamesTheConjunct(t *testing.T) {
	cfg := loadTLA(t, "MCBarrierAlignedDAG")
	s1, s2, x := node(t, cfg, "S1"), node(t, cfg, "S2"), node(t, cfg, "X")
	s1x, xk := edge(t, cfg, "S1", "X"), edge(t, cfg, "X", "K")
	emit := func(n int) Action { return Action{Kind: ActEmit, Node: n} }
	inject := func(n int) Action { return Action{Kind: ActInject, Node: n} }
	proc := func(e int) Action { return Action{Kind: ActProcess, Edge: e} }
	recvB := func(e int) Action { return Action{Kind: ActRecvBarrier, Edge: e} }
	cases := []struct {
		name  string
		path  []Action
		a     Action
		k     Conjunct
		why   string
		check string // the .tla text the error quotes
	}{
		{"nothing queued", nil, proc(s1x), EmptyQueue, `<<"S1", "X">> is empty`, "q[e] # <<>>"},
		{"full buffer", []Action{emit(s1)}, emit(s1), NoRoom, `the buffer of <<"S1", "X">> is full (1 items, Cap = 1): backpressure`, "Room(e)"},
		{"budget spent", []Action{emit(s2), proc(edge(t, cfg, "S2", "X"))}, emit(s2), BudgetSpent, "S2 has emitted its budget (emitted[S2] = 1, Budget[S2] = 1)", "emitted[s] < Budget[s]"},
		{"injected twice", []Action{inject(s1)}, inject(s1), AlreadyRecorded, "S1 has already injected its barrier", "s \\notin recorded"},
		{"alignment blocks", []Action{inject(s1), recvB(s1x), emit(s1)}, proc(s1x), Blocked,
			`<<"S1", "X">> is blocked: its barrier has arrived and X has not recorded (alignment)`, `~(block /\ Mode = "aligned" /\ n \notin recorded /\ e \in bar[n])`},
		{"barrier at the head", []Action{inject(s1)}, proc(s1x), NotRecord, `the head of <<"S1", "X">> is a barrier`, `r.kind = "rec"`},
		{"record at the head", []Action{emit(s1)}, recvB(s1x), NotBarrier, `the head of <<"S1", "X">> is a record`, `Head(q[e]).kind = "barrier"`},
		{"downstream full", []Action{emit(s1), proc(s1x), emit(s1)}, proc(s1x), NoRoom, `the buffer of <<"X", "K">> is full (1 items, Cap = 1): backpressure`, "Room(t)"},
		{"restore too early", nil, Action{Kind: ActRestore}, NotComplete, "the snapshot is not complete", "Complete"},
		{"not a source", nil, emit(x), NoSource, "X is not a source", "s \\in Src"},
		{"no such edge", nil, proc(99), NoEdge, "the model has no edge 99 (it has 3)", "e \\in Edge"},
	}
	for _, c := range cases {
		st := run(t, cfg, c.path...)
		before := Key(st)
		_, err := c.a.Apply(cfg, st)
		var ne *NotEnabled
		require.ErrorAs(t, err, &ne, c.name)
		assert.Equal(t, c.k, ne.Conjunct, c.name)
		assert.Equal(t, c.why, ne.Why, c.name)
		assert.Equal(t, c.check, ne.Source.TLA, c.name)
		assert.Contains(t, err.Error(), "BarrierSnapshots.tla line", c.name)
		assert.Equal(t, before, Key(st), "%s: a refused action leaves the state alone", c.name)
	}
	// Restored once only.
	st := run(t, cfg, inject(s1), inject(s2), recvB(s1x), recvB(edge(t, cfg, "S2", "X")), recvB(xk), Action{Kind: ActRestore})
	_, err := Action{Kind: ActRestore}.Apply(cfg, st)
	var ne *NotEnabled
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, AlreadyRestored, ne.Conjunct)
}

// Each conjunct's source is quoted from the line of
// tla/BarrierSnapshots.tla (tla/BarrierAdaptive.tla for TimeoutV) it
// cites.
func TestConjunctSourcesQuoteTheSpec(t *testing.T) {
	lines := map[string][]string{}
	for _, mod := range []string{modBarrier, modAdaptive} {
		f, err := os.Open(filepath.Join(tlaDir, mod))
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines[mod] = append(lines[mod], sc.Text())
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	for kind, m := range conjunctText {
		for k, src := range m {
			want := modBarrier
			if kind == ActTimeout || kind == ActTimeoutOut {
				want = modAdaptive
			}
			assert.Equal(t, want, src.Module)
			ls := lines[src.Module]
			require.Less(t, src.Line, len(ls)+1)
			assert.Contains(t, ls[src.Line-1], src.TLA, "action %d conjunct %d", kind, k)
		}
	}
}

// reachable lists every state reachable in cfg, breadth first.
func reachable(cfg *Config) []*State {
	init := Init(cfg)
	seen := map[string]bool{Key(init): true}
	out := []*State{init}
	for i := 0; i < len(out); i++ {
		for _, s := range Next(cfg, out[i]) {
			if k := Key(s.State); !seen[k] {
				seen[k] = true
				out = append(out, s.State)
			}
		}
	}
	return out
}

// On every reachable state: the encoding round-trips, and no action,
// enabled or not, modifies the state it is given.
func TestEncodingAndPurity(t *testing.T) {
	for _, name := range []string{"MCBarrierUnalignedCycle", "MCBarrierAlignedCycle", "MCBarrierUnalignedDAG", "MCBarrierAdaptiveCycle"} {
		cfg := loadTLA(t, name)
		states := reachable(cfg)
		res, err := Explore(cfg, engine.Options{})
		require.NoError(t, err)
		assert.Equal(t, res.Distinct, int64(len(states)), name)
		for _, st := range states {
			enc := AppendEncode(nil, st)
			back, err := Decode(cfg, enc)
			require.NoError(t, err)
			require.Equal(t, normalize(st.Clone()), normalize(back), name)
			for _, a := range cfg.Actions() {
				_, _ = a.Apply(cfg, st)
				require.Equal(t, string(enc), Key(st), "%s: %s modified its input", name, a.Label(cfg))
			}
		}
		_, err = Decode(cfg, AppendEncode(nil, states[0])[1:])
		assert.Error(t, err, "a truncated encoding is refused")
	}
}

// normalize makes empty queues nil, as the actions leave them, so states
// compare with require.Equal.
func normalize(st *State) *State {
	for _, q := range [][][]Item{st.Q, st.RecQ, st.Pre.Q} {
		for i := range q {
			if len(q[i]) == 0 {
				q[i] = nil
			}
		}
	}
	return st
}

// The liveness check fires in a state a fair behaviour can end in with
// the snapshot incomplete: here S's barrier is gone from S -> A (as if
// lost) and nothing fair is enabled.
func TestLivenessCheckHasTeeth(t *testing.T) {
	cfg := loadTLA(t, "MCBarrierAlignedCycle")
	s, sa := node(t, cfg, "S"), edge(t, cfg, "S", "A")
	st := run(t, cfg, Action{Kind: ActInject, Node: s})
	assert.False(t, liveViolated(cfg, st), "A may still take the barrier")
	st.Q[sa] = nil
	assert.True(t, liveViolated(cfg, st))
	assert.True(t, Injected(cfg, st))
	assert.False(t, Complete(cfg, st))
}

// The invariants the negative models do not name have teeth too: each
// fails on the broken protocol it is about.
func TestInvariantsHaveTeeth(t *testing.T) {
	cases := []struct {
		model string
		prop  spec.Property
	}{
		{"MCBarrierNoBlock", spec.PropBarrierConsistentCut},     // X counts a record sent after S1's cut
		{"MCBarrierNoBlock", spec.PropBarrierSnapshotReachable}, // ... which the pre-recording steps never sent
		{"MCBarrierNoLog", spec.PropBarrierExactChannelState},   // the back-edge's record is missing
		{"MCBarrierNoPersist", spec.PropBarrierExactChannelState},
		{"MCBarrierNoPersist", spec.PropBarrierSnapshotReachable},
	}
	for _, c := range cases {
		cfg := loadTLA(t, c.model)
		cfg.Invariants = []spec.Property{c.prop}
		res, err := Explore(cfg, engine.Options{})
		require.NoError(t, err)
		require.NotNil(t, res.Violation, "%s: %s", c.model, c.prop)
		assert.Equal(t, c.prop, res.Violation.Property)
		assertTraceValid(t, cfg, res.Violation)
	}
	// Aligned snapshots record no channel state off the back-edges.
	cfg := loadTLA(t, "MCBarrierAlignedDAG")
	st := Init(cfg)
	assert.True(t, AlignedNoChannelState(cfg, st))
	st.RecQ[edge(t, cfg, "S1", "X")] = []Item{{Src: node(t, cfg, "S1"), I: 1, ESeq: 1}}
	assert.False(t, AlignedNoChannelState(cfg, st))
}

// An unaligned snapshot can record more records on an edge than its
// buffer holds (tla/README.md, "Why unaligned checkpoints bring it back
// everywhere"): X records on S2's barrier and logs what it then takes off
// S1 -> X, and S1's barrier overtakes the next record.
func TestRecordedStateCanExceedBuffers(t *testing.T) {
	cfg := loadTLA(t, "MCBarrierUnalignedDAG")
	found := false
	for _, st := range reachable(cfg) {
		if !Complete(cfg, st) {
			continue
		}
		for e := range cfg.Edges {
			if !cfg.Back[e] && len(st.RecQ[e]) > cfg.Cap {
				found = true
				assert.True(t, SnapshotReachable(cfg, st), "the theorem holds with the buffers' bound lifted")
			}
		}
	}
	assert.True(t, found)
	// Aligned snapshots never do: they record no channel state at all.
	for _, st := range reachable(loadTLA(t, "MCBarrierAlignedDAG")) {
		for _, q := range st.RecQ {
			require.Empty(t, q)
		}
	}
}

// Label is TLC's rendering of an instance; Named names its parameters as
// the spec does.
func TestActionNamed(t *testing.T) {
	cfg, err := Load("../../tla/MCBarrierNoBlock.cfg")
	require.NoError(t, err)
	e, ok := cfg.EdgeIndex("S1", "X")
	require.True(t, ok)
	s, ok := cfg.NodeIndex("S1")
	require.True(t, ok)
	for _, c := range []struct {
		a            Action
		label, named string
	}{
		{Action{Kind: ActEmit, Node: s}, `Emit("S1")`, `Emit(s = "S1")`},
		{Action{Kind: ActInject, Node: s}, `InjectV("S1",TRUE)`, `InjectV(s = "S1", persist = TRUE)`},
		{Action{Kind: ActProcess, Edge: e}, `ProcessV(<<"S1", "X">>,FALSE,TRUE)`, `ProcessV(e = <<"S1", "X">>, block = FALSE, log = TRUE)`},
		{Action{Kind: ActRecvBarrier, Edge: e}, `RecvBarrierV(<<"S1", "X">>,TRUE,TRUE)`, `RecvBarrierV(e = <<"S1", "X">>, persist = TRUE, cyclic = TRUE)`},
		{Action{Kind: ActRestore}, "Restore", "Restore"},
	} {
		assert.Equal(t, c.label, c.a.Label(cfg))
		assert.Equal(t, c.named, c.a.Named(cfg))
	}
}
