package barrier

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/spec"
)

// A timeout, step by step (tla/BarrierAdaptive.tla lines 107-123): X,
// blocked on S1's barrier with a record of S2 queued on X -> K, switches.
func TestTimeoutSwitches(t *testing.T) {
	cfg := loadTLA(t, "MCBarrierAdaptiveDAG")
	s1, s2, x := node(t, cfg, "S1"), node(t, cfg, "S2"), node(t, cfg, "X")
	s1x, s2x, xk := edge(t, cfg, "S1", "X"), edge(t, cfg, "S2", "X"), edge(t, cfg, "X", "K")
	st := run(t, cfg, Action{Kind: ActEmit, Node: s2}, Action{Kind: ActProcess, Edge: s2x},
		Action{Kind: ActInject, Node: s1}, Action{Kind: ActRecvBarrier, Edge: s1x})
	require.False(t, st.Has(x), "X aligns: S2's barrier is still to come")
	assert.Equal(t, TypeNone, st.Reported[x])

	to := Action{Kind: ActTimeout, Node: x}
	assert.Equal(t, `TimeoutV("X",TRUE,TRUE,FALSE,FALSE)`, to.Label(cfg))
	ns, err := to.Apply(cfg, st)
	require.NoError(t, err)
	assert.True(t, ns.Has(x))
	assert.Equal(t, uint64(1)<<x, ns.Switched)
	assert.Equal(t, TypeUnaligned, ns.Reported[x])
	assert.Zero(t, ns.CutAligned&(1<<x), "S2's barrier had not arrived: the snapshot is unaligned")
	assert.Equal(t, Done, ns.RecChan[s1x], "blocked: what it held back is after S1's cut")
	assert.Equal(t, Recording, ns.RecChan[s2x], "S2's barrier is still to come: the receiving rule")
	assert.Equal(t, []Item{{Barrier: true}, st.Q[xk][0]}, ns.Q[xk], "the barrier overtakes X -> K")
	assert.Equal(t, st.Q[xk], ns.RecQ[xk], "and what it overtook is persisted")
	for _, f := range []Invariant{AdaptiveTypeOK, UnswitchedNoChannelState, ForceAlignedNoChannelState, ReportedTypeTaken} {
		assert.True(t, f(cfg, ns))
	}

	_, err = to.Apply(cfg, ns)
	var ne *NotEnabled
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, AlreadyRecorded, ne.Conjunct)
	assert.Equal(t, 108, ne.Source.Line)
	assert.Equal(t, "BarrierAdaptive.tla", ne.Source.Module)
}

// Every refusal of TimeoutV names its false conjunct and line.
func TestTimeoutNotEnabled(t *testing.T) {
	dag := loadTLA(t, "MCBarrierAdaptiveDAG")
	forced := loadTLA(t, "MCBarrierAdaptiveForced")
	plain := loadTLA(t, "MCBarrierAlignedDAG")
	cases := []struct {
		name string
		cfg  *Config
		path func(cfg *Config) []Action
		n    string
		k    Conjunct
		line int
		why  string
	}{
		{"nothing blocked", dag, func(*Config) []Action { return nil }, "X", NotBlocked, 109, "no input of X is blocked"},
		{"a source", dag, func(*Config) []Action { return nil }, "S1", NoNonSrc, 184, "S1 is a source"},
		{"not adaptive", plain, func(*Config) []Action { return nil }, "X", NoNonSrc, 184, "Spec has no timeouts"},
		{"feeds a force-aligned edge", forced, func(c *Config) []Action {
			return []Action{{Kind: ActInject, Node: node(t, c, "S1")}, {Kind: ActRecvBarrier, Edge: edge(t, c, "S1", "X")}}
		}, "X", FeedsForceAligned, 112, "X feeds a force-aligned edge"},
		{"force-aligned input pending", forced, func(c *Config) []Action {
			return []Action{{Kind: ActInject, Node: node(t, c, "S3")}, {Kind: ActRecvBarrier, Edge: edge(t, c, "S3", "Z")}}
		}, "Z", ForceAlignedPending, 113, "force-aligned input of Z has not arrived"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := run(t, c.cfg, c.path(c.cfg)...)
			_, err := Action{Kind: ActTimeout, Node: node(t, c.cfg, c.n)}.Apply(c.cfg, st)
			var ne *NotEnabled
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, c.k, ne.Conjunct)
			assert.Equal(t, c.line, ne.Source.Line)
			assert.Contains(t, ne.Why, c.why)
		})
	}

	// The second switch of MCBarrierAdaptiveDAG's one.
	st := run(t, dag, Action{Kind: ActInject, Node: node(t, dag, "S1")}, Action{Kind: ActRecvBarrier, Edge: edge(t, dag, "S1", "X")})
	assert.Equal(t, TimeoutsSpent, timeoutEnabled(&Config{MaxTimeouts: 0}, st, node(t, dag, "X"), adaptiveFlags{}))
}

// The timeout in the output buffer, step by step (tla/BarrierAdaptive.tla
// lines 159-173): on the pipeline, X records aligned on S's barrier with
// a record queued on X -> K; its barrier, queued behind it, overtakes it,
// persisted, and X reports unaligned. Every refusal names its conjunct.
func TestTimeoutOutSwitches(t *testing.T) {
	cfg := loadTLA(t, "MCBarrierAdaptivePipe")
	s, x := node(t, cfg, "S"), node(t, cfg, "X")
	sx, xk := edge(t, cfg, "S", "X"), edge(t, cfg, "X", "K")
	to := Action{Kind: ActTimeoutOut, Node: x}
	assert.Equal(t, `TimeoutOutV("X",TRUE,TRUE,FALSE)`, to.Label(cfg))
	refused := func(st *State, k Conjunct, line int, why string) {
		t.Helper()
		_, err := to.Apply(cfg, st)
		var ne *NotEnabled
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, k, ne.Conjunct)
		assert.Equal(t, line, ne.Source.Line)
		assert.Equal(t, "BarrierAdaptive.tla", ne.Source.Module)
		assert.Contains(t, ne.Why, why)
	}
	st := run(t, cfg, Action{Kind: ActEmit, Node: s}, Action{Kind: ActProcess, Edge: sx})
	refused(st, NotRecorded, 161, "X has not recorded")
	st = run(t, cfg, Action{Kind: ActEmit, Node: s}, Action{Kind: ActInject, Node: s},
		Action{Kind: ActProcess, Edge: sx}, Action{Kind: ActRecvBarrier, Edge: sx})
	require.True(t, st.Has(x))
	assert.Equal(t, TypeAligned, st.Reported[x])
	require.Len(t, st.Q[xk], 2, "a record, then X's barrier")

	ns, err := to.Apply(cfg, st)
	require.NoError(t, err)
	assert.Equal(t, []Item{{Barrier: true}, st.Q[xk][0]}, ns.Q[xk], "the barrier overtakes the record")
	assert.Equal(t, st.Q[xk][:1], ns.RecQ[xk], "which is persisted")
	assert.Equal(t, uint64(1)<<x, ns.Switched)
	assert.Equal(t, TypeUnaligned, ns.Reported[x])
	assert.Zero(t, ns.CutAligned&(1<<x))
	assert.Equal(t, st.RecCnt, ns.RecCnt, "X's recorded state is unchanged")
	for _, f := range []Invariant{AdaptiveTypeOK, UnswitchedNoChannelState, ForceAlignedNoChannelState, ReportedTypeTaken, ExactChannelState, ConsistentCut} {
		assert.True(t, f(cfg, ns))
	}
	refused(ns, AlreadySwitched, 162, "X has already switched")
	refused(run(t, cfg, Action{Kind: ActInject, Node: s}, Action{Kind: ActRecvBarrier, Edge: sx}), NothingQueued, 164, "no output of X")
	assert.Equal(t, TimeoutsSpent, timeoutOutEnabled(&Config{MaxTimeouts: 0}, st, x, adaptiveFlags{}))
}

// The positive models reach what they are there to show: X switches in
// the DAG (and a switched snapshot logs a record off an input whose
// barrier was still to come), A in the cycle, and in the forced model Z
// switches while X, feeding the force-aligned X -> Z, never does.
func TestAdaptiveModelsSwitch(t *testing.T) {
	for _, c := range []struct {
		model, sw, never string
		logged           [2]string
	}{
		{"MCBarrierAdaptiveDAG", "X", "", [2]string{"S2", "X"}},
		{"MCBarrierAdaptiveCycle", "A", "", [2]string{"S2", "A"}},
		{"MCBarrierAdaptiveForced", "Z", "X", [2]string{"S3", "Z"}},
	} {
		cfg := loadTLA(t, c.model)
		sw := node(t, cfg, c.sw)
		e := edge(t, cfg, c.logged[0], c.logged[1])
		var switched, logged, neverSwitched bool
		neverSwitched = true
		for _, st := range reachable(cfg) {
			switched = switched || st.Switched&(1<<sw) != 0
			logged = logged || st.Switched&(1<<sw) != 0 && st.RecChan[e] == Done && len(st.RecQ[e]) > 0
			if c.never != "" && st.Switched&(1<<node(t, cfg, c.never)) != 0 {
				neverSwitched = false
			}
		}
		assert.True(t, switched, "%s: %s switches", c.model, c.sw)
		assert.True(t, logged, "%s: %s logs a record off %s", c.model, c.sw, cfg.EdgeName(e))
		assert.True(t, neverSwitched, "%s: %s never switches", c.model, c.never)
	}
}

// The counterexamples are as long as TLC's (-workers 1) and end in the
// step that breaks the rule.
func TestAdaptiveCounterexamples(t *testing.T) {
	for _, c := range []struct {
		model string
		prop  spec.Property
		n     int
		last  string
	}{
		{"MCBarrierAdaptiveNoPersist", spec.PropBarrierExactlyOnce, 15, `ProcessA(<<"X", "K">>,FALSE)`},
		{"MCBarrierAdaptiveOutNoPersist", spec.PropBarrierExactlyOnce, 10, `ProcessA(<<"X", "K">>,FALSE)`},
		{"MCBarrierAdaptiveOutForced", spec.PropForceAlignedNoChannelState, 6, `TimeoutOutV("X",TRUE,FALSE,FALSE)`},
		{"MCBarrierAdaptiveOutStaleType", spec.PropReportedTypeTaken, 6, `TimeoutOutV("X",TRUE,TRUE,TRUE)`},
		{"MCBarrierAdaptiveForceSwitch", spec.PropForceAlignedNoChannelState, 6, `TimeoutV("X",TRUE,FALSE,FALSE,FALSE)`},
		{"MCBarrierAdaptiveStaleType", spec.PropReportedTypeTaken, 4, `TimeoutV("X",TRUE,TRUE,FALSE,TRUE)`},
		{"MCBarrierAdaptiveLateTimeout", spec.PropBarrierConsistentCut, 9, `TimeoutV("X",TRUE,TRUE,TRUE,FALSE)`},
	} {
		cfg := loadTLA(t, c.model)
		res, err := Explore(cfg, engine.Options{})
		require.NoError(t, err)
		require.NotNil(t, res.Violation, c.model)
		assert.Equal(t, c.prop, res.Violation.Property, c.model)
		assert.Len(t, res.Violation.Trace, c.n, c.model)
		assert.Equal(t, c.last, res.Violation.Trace[len(res.Violation.Trace)-1].Label, c.model)
		assertTraceValid(t, cfg, res.Violation)
		if c.model == "MCBarrierAdaptiveStaleType" {
			var b strings.Builder
			WriteTrace(&b, cfg, res.Violation)
			assert.Contains(t, b.String(), `/\ mode = [S1 |-> "aligned", S2 |-> "aligned", X |-> "unaligned", K |-> "aligned"]`)
			assert.Contains(t, b.String(), `/\ reported = [X |-> "aligned", K |-> "none"]`, "the stale type")
			assert.Contains(t, b.String(), `/\ cutAligned = [X |-> FALSE, K |-> FALSE]`)
		}
	}
}

// The constants of tla/BarrierAdaptive.tla are checked against its
// ASSUME, and are not constants of tla/BarrierSnapshots.tla.
func TestAdaptiveConstants(t *testing.T) {
	k := Constants{Src: []string{"S"}, Op: []string{"A", "B"}, Snk: "K",
		Edge:   [][2]string{{"S", "A"}, {"A", "B"}, {"B", "A"}, {"B", "K"}},
		Back:   [][2]string{{"B", "A"}},
		Budget: map[string]int{"S": 1}, Cap: 1, Iter: 1, Mode: Aligned, MaxTimeouts: 1}
	_, err := NewConfig(k, VariantAdaptive, nil, nil)
	require.NoError(t, err)

	bad := k
	bad.ForceAligned = [][2]string{{"B", "A"}}
	_, err = NewConfig(bad, VariantAdaptive, nil, nil)
	var ce *ConstantError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ForceAligned", ce.Constant)

	bad = k
	bad.Mode = Unaligned
	_, err = NewConfig(bad, VariantAdaptive, nil, nil)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Mode", ce.Constant)

	_, err = NewConfig(k, VariantSpec, nil, nil)
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Msg, "constants of tla/BarrierAdaptive.tla")

	_, err = NewConfig(Constants{Src: k.Src, Op: k.Op, Snk: k.Snk, Edge: k.Edge, Back: k.Back, Budget: k.Budget, Cap: 1, Iter: 1},
		VariantSpec, []spec.Property{spec.PropReportedTypeTaken}, nil)
	assert.ErrorContains(t, err, "unknown invariant ReportedTypeTaken")

	cfg, err := NewConfig(k, VariantAdaptive, nil, []spec.Property{spec.PropSnapshotRefinement, spec.PropBarriersComplete})
	require.NoError(t, err)
	assert.Equal(t, []spec.Property{spec.PropBarriersComplete}, cfg.Properties)
	assert.Equal(t, []spec.Property{spec.PropSnapshotRefinement}, cfg.Unchecked, "the refinement is named, not evaluated")
}
