package barrier

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/tla"
)

// TLC's manifest (tla/manifest.json) sits beside the models it lists.
const tlaDir = "../../tla"

func loadTLA(t *testing.T, name string) *Config {
	t.Helper()
	cfg, err := Load(filepath.Join(tlaDir, name+".cfg"))
	require.NoError(t, err)
	return cfg
}

// The explorer reproduces TLC's counts for every positive model of
// tla/BarrierSnapshots.tla in the manifest and fails every negative one
// with the property TLC reports; for every model it reproduces the counts
// the manifest recorded for it.
func TestParityWithTLC(t *testing.T) {
	man, err := tla.Load(filepath.Join(tlaDir, "manifest.json"))
	require.NoError(t, err, "the parity test needs TLC's numbers")
	n := 0
	for _, e := range man.Models {
		path := filepath.Join(tlaDir, e.Cfg)
		mod, err := tlcmodel.SpecModule(path)
		require.NoError(t, err)
		if !IsSpecModule(mod) {
			continue // package model checks the Chandy-Lamport models
		}
		n++
		t.Run(e.Name, func(t *testing.T) {
			cfg, err := Load(path)
			require.NoError(t, err)
			res, err := Explore(cfg, engine.Options{})
			require.NoError(t, err)
			t.Logf("%s: %d generated, %d distinct, depth %d (TLC: %d, %d, %d)", e.Name,
				res.Generated, res.Distinct, res.Depth, e.TLC.Generated, e.TLC.Distinct, e.TLC.Depth)
			got := tla.Measure{Distinct: res.Distinct, Generated: res.Generated, Depth: int64(res.Depth)}
			if res.Violation != nil {
				got.Violation = res.Violation.Property
			}
			assert.Empty(t, e.GoMismatches(got, &e.Go))
			assert.Equal(t, e.GoUnchecked, cfg.Unchecked, "the manifest's go_unchecked are the properties of the .cfg the explorer does not evaluate")
			switch e.Kind {
			case tla.Positive:
				require.Nil(t, res.Violation, "a positive model must hold")
				assert.True(t, res.Passed())
			case tla.Negative:
				if slices.Contains(e.GoUnchecked, e.ExpectViolation) {
					require.Nil(t, res.Violation, "the explorer does not evaluate %s: it finds nothing", e.ExpectViolation)
					return
				}
				require.NotNil(t, res.Violation, "a negative model must fail")
				assert.Equal(t, e.ExpectViolation, res.Violation.Property)
				assertTraceValid(t, cfg, res.Violation)
			}
		})
	}
	assert.GreaterOrEqual(t, n, 12, "the manifest lists the six positive and six negative barrier models")
}

// assertTraceValid replays a counterexample: it starts in Init, each step
// is its labelled action, and only its last state breaks the invariant.
func assertTraceValid(t *testing.T, cfg *Config, v *Violation) {
	t.Helper()
	require.NotEmpty(t, v.Trace)
	assert.Equal(t, Key(Init(cfg)), Key(v.Trace[0].State))
	for i := 1; i < len(v.Trace); i++ {
		require.NotNil(t, v.Trace[i].Action)
		n, err := v.Trace[i].Action.Apply(cfg, v.Trace[i-1].State)
		require.NoError(t, err, "step %d (%s)", i+1, v.Trace[i].Label)
		assert.Equal(t, Key(v.Trace[i].State), Key(n), "step %d", i+1)
	}
	last := v.Trace[len(v.Trace)-1].State
	if v.Kind == engine.KindProperty {
		// A fair behaviour stutters forever in the last state, Injected
		// and not Complete.
		assert.True(t, v.Stutter)
		assert.Equal(t, spec.PropBarriersComplete, v.Property)
		assert.True(t, liveViolated(cfg, last))
		return
	}
	require.Equal(t, engine.KindInvariant, v.Kind)
	f, ok := InvariantByName(v.Property)
	require.True(t, ok)
	for _, s := range v.Trace[:len(v.Trace)-1] {
		assert.True(t, f(cfg, s.State), "the counterexample should stop at the first violation")
	}
	assert.False(t, f(cfg, last))
}

// Shortest counterexamples, as long as TLC's for the invariants
// (-workers 1: 13, 16, 11, 7 and 7 states), and what each shows. For the
// liveness property TLC's counterexample has 4 states before stuttering
// (it takes an Emit first: TLC's liveness search does not look for the
// shortest); the explorer's breadth-first search finds the 3-state one.
func TestShortestCounterexamples(t *testing.T) {
	want := map[string][]string{
		// A record S1 emits after its barrier passes X before X records,
		// reaches the sink before the sink's barrier, and S1 emits it
		// again after the restore.
		"MCBarrierNoBlock": {"", `InjectV("S1",TRUE)`, `InjectV("S2",TRUE)`, `RecvBarrierV(<<"S1", "X">>,TRUE,TRUE)`,
			`Emit("S1")`, `ProcessV(<<"S1", "X">>,FALSE,TRUE)`, `ProcessV(<<"X", "K">>,FALSE,TRUE)`,
			`RecvBarrierV(<<"S2", "X">>,TRUE,TRUE)`, `RecvBarrierV(<<"X", "K">>,TRUE,TRUE)`, "Restore",
			`Emit("S1")`, `ProcessV(<<"S1", "X">>,FALSE,TRUE)`, `ProcessV(<<"X", "K">>,FALSE,TRUE)`},
	}
	lens := map[string]int{"MCBarrierNoBlock": 13, "MCBarrierNoLog": 16, "MCBarrierNoPersist": 11, "MCBarrierAlignAll": 3,
		"MCBarrierNoBlockCut": 7, "MCBarrierNoPersistReach": 7}
	// The cut and the theorem break at the snapshot itself, before any
	// restore.
	beforeRestore := map[string]bool{"MCBarrierAlignAll": true, "MCBarrierNoBlockCut": true, "MCBarrierNoPersistReach": true}
	for name, n := range lens {
		res, err := Explore(loadTLA(t, name), engine.Options{})
		require.NoError(t, err)
		require.NotNil(t, res.Violation, name)
		assert.Len(t, res.Violation.Trace, n, name)
		if w, ok := want[name]; ok {
			var got []string
			for _, s := range res.Violation.Trace {
				got = append(got, s.Label)
			}
			assert.Equal(t, w, got, name)
		}
		if beforeRestore[name] {
			continue
		}
		assert.True(t, slices.ContainsFunc(res.Violation.Trace, func(s TraceStep) bool { return s.Label == "Restore" }),
			"%s: the record is lost or counted twice by the restore", name)
	}
}

// The result, counterexamples included, does not depend on the number of
// workers.
func TestExploreDeterministic(t *testing.T) {
	for _, name := range []string{"MCBarrierUnalignedDAG", "MCBarrierNoBlock", "MCBarrierNoLog", "MCBarrierNoPersist", "MCBarrierAlignAll"} {
		cfg := loadTLA(t, name)
		r1, err := Explore(cfg, engine.Options{Workers: 1})
		require.NoError(t, err)
		r4, err := Explore(cfg, engine.Options{Workers: 4})
		require.NoError(t, err)
		assert.Equal(t, r1.Counts.Generated, r4.Counts.Generated, name)
		assert.Equal(t, r1.Distinct, r4.Distinct, name)
		assert.Equal(t, r1.Depth, r4.Depth, name)
		if r1.Violation != nil {
			require.NotNil(t, r4.Violation)
			assert.Equal(t, traceText(cfg, r1.Violation), traceText(cfg, r4.Violation), name)
		}
	}
}

func traceText(cfg *Config, v *Violation) string {
	var b bytes.Buffer
	for _, s := range v.Trace {
		fmt.Fprintf(&b, "%s %x\n", s.Label, AppendEncode(nil, s.State))
	}
	return b.String()
}
