package model

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/tla"
)

// TLC's manifest (tla/manifest.json) sits beside the models it lists.
const tlaDir = "../tla"

// The explorer reproduces TLC's counts for every positive model of the
// manifest and fails every negative model with the property TLC reports;
// for every model it reproduces the counts the manifest recorded for it
// (cmd/tlcrun -go-only -update measures them).
func TestParityWithTLC(t *testing.T) {
	man, err := tla.Load(filepath.Join(tlaDir, "manifest.json"))
	require.NoError(t, err, "the parity test needs TLC's numbers")
	for _, e := range ownModels(t, man) {
		t.Run(e.Name, func(t *testing.T) {
			cfg, err := Load(filepath.Join(tlaDir, e.Cfg))
			require.NoError(t, err)
			res, err := Explore(cfg, Options{})
			require.NoError(t, err)
			t.Logf("%s: %d generated, %d distinct, depth %d in %s (TLC: %d, %d, %d)", e.Name,
				res.Generated, res.Distinct, res.Depth, res.Duration, e.TLC.Generated, e.TLC.Distinct, e.TLC.Depth)
			got := tla.Measure{Distinct: res.Distinct, Generated: res.Generated, Depth: int64(res.Depth)}
			if res.Violation != nil {
				got.Violation = res.Violation.Property
			}
			assert.Empty(t, e.Mismatches(got, &e.Go))
			switch e.Kind {
			case tla.Positive:
				require.Nil(t, res.Violation, "a positive model must hold")
				assert.Zero(t, res.Left)
			case tla.Negative:
				assertExpectedCounterexample(t, cfg, e, res.Violation)
			}
		})
	}
}

// assertTraceValid replays a counterexample: it starts in Init, each step
// is its labelled action, and its last state breaks the property.
func assertTraceValid(t *testing.T, cfg *Config, v *Violation) {
	t.Helper()
	require.NotEmpty(t, v.Trace)
	assert.Equal(t, Key(cfg, Init(cfg)), Key(cfg, v.Trace[0].State))
	for i := 1; i < len(v.Trace); i++ {
		require.NotNil(t, v.Trace[i].Action)
		n, err := v.Trace[i].Action.Apply(cfg, v.Trace[i-1].State)
		require.NoError(t, err, "step %d (%s)", i+1, v.Trace[i].Label)
		assert.Equal(t, Key(cfg, v.Trace[i].State), Key(cfg, n), "step %d", i+1)
	}
	last := v.Trace[len(v.Trace)-1].State
	switch v.Kind {
	case "invariant":
		f, _ := InvariantByName(v.Property)
		assert.False(t, f(cfg, last))
		for _, st := range v.Trace[:len(v.Trace)-1] {
			assert.True(t, f(cfg, st.State), "the counterexample should stop at the first violation")
		}
	case "property":
		assert.True(t, v.Stutter)
		assert.False(t, fairEnabled(cfg, last))
		prop, s := liveSnapshot(cfg, last)
		assert.Equal(t, v.Property, prop)
		assert.GreaterOrEqual(t, s, 0)
	}
}

// The result, counterexamples included, does not depend on the number of
// workers.
func TestExploreDeterministic(t *testing.T) {
	for _, name := range []string{"MCTwoBank", "MCNonFIFO", "MCNoRecord", "MCNoForward", "MCLossy", "MCFaultsTwoBank", "MCFaultsNoDetector", "MCFaultsRecoverAny"} {
		cfg := loadTLA(t, name)
		r1, err := Explore(cfg, Options{Workers: 1})
		require.NoError(t, err)
		r4, err := Explore(cfg, Options{Workers: 4})
		require.NoError(t, err)
		assert.Equal(t, r1.Generated, r4.Generated, name)
		assert.Equal(t, r1.Distinct, r4.Distinct, name)
		assert.Equal(t, r1.Depth, r4.Depth, name)
		if r1.Violation != nil {
			require.NotNil(t, r4.Violation)
			var b1, b4 bytes.Buffer
			WriteTrace(&b1, cfg, r1.Violation)
			WriteTrace(&b4, cfg, r4.Violation)
			assert.Equal(t, b1.String(), b4.String(), name)
		}
	}
}

// Shortest counterexamples: BFS finds the orphan message in 5 states (as
// TLC does), the vanished $30 in 6, and the lost marker in 3.
func TestShortestCounterexamples(t *testing.T) {
	want := map[string][]string{
		"MCNonFIFO":   {"", "Initiate(1)", `SendApp("P1","P2",30)`, `RecvAppAt("P1","P2",2)`, `RecvMarkerAt("P1","P2",1)`},
		"MCNoForward": {"", "Initiate(1)", `RecvMarkerNoForward("P1","P2")`},
		"MCLossy":     {"", "Initiate(1)", `Lose("P1","P2")`},
	}
	for name, labels := range want {
		cfg := loadTLA(t, name)
		res, err := Explore(cfg, Options{})
		require.NoError(t, err)
		require.NotNil(t, res.Violation)
		var got []string
		for _, s := range res.Violation.Trace {
			got = append(got, s.Label)
		}
		assert.Equal(t, labels, got, name)
	}
	cfg := loadTLA(t, "MCNoRecord")
	res, err := Explore(cfg, Options{})
	require.NoError(t, err)
	require.NotNil(t, res.Violation)
	assert.Len(t, res.Violation.Trace, 6)
	var b bytes.Buffer
	WriteTrace(&b, cfg, res.Violation)
	assert.True(t, strings.HasPrefix(b.String(), "State 1: <Initial predicate>\n/\\ proc = "), b.String())
}

// With CHECK_DEADLOCK TRUE every model deadlocks once budgets are spent
// and channels drained.
func TestDeadlock(t *testing.T) {
	cfg := loadTLA(t, "MCRing")
	d := *cfg
	d.CheckDeadlock = true
	res, err := Explore(&d, Options{})
	require.NoError(t, err)
	require.NotNil(t, res.Violation)
	assert.Equal(t, "deadlock", res.Violation.Kind)
	last := res.Violation.Trace[len(res.Violation.Trace)-1].State
	assert.Empty(t, Next(&d, last))
}

// Fingerprint mode (engine.Options.Fingerprint) gives every positive
// model TLC's counts, and fails every negative model with the property
// TLC reports and a valid counterexample rebuilt from its trace file. A
// frontier budget of 4 KiB makes every level past the first few spill to
// disk.
func TestFingerprintParityWithTLC(t *testing.T) {
	man, err := tla.Load(filepath.Join(tlaDir, "manifest.json"))
	require.NoError(t, err)
	for _, e := range ownModels(t, man) {
		t.Run(e.Name, func(t *testing.T) {
			cfg, err := Load(filepath.Join(tlaDir, e.Cfg))
			require.NoError(t, err)
			res, err := Explore(cfg, Options{Fingerprint: true, FrontierMemory: 4 << 10, TempDir: t.TempDir()})
			require.NoError(t, err)
			assert.True(t, res.Fingerprints)
			switch e.Kind {
			case tla.Positive:
				require.Nil(t, res.Violation, "a positive model must hold")
				got := tla.Measure{Distinct: res.Distinct, Generated: res.Generated, Depth: int64(res.Depth)}
				assert.Empty(t, e.Mismatches(got, nil))
				assert.Less(t, res.Collision, 1e-6)
			case tla.Negative:
				assertExpectedCounterexample(t, cfg, e, res.Violation)
			}
		})
	}
}

// ownModels are the manifest's models this package checks: those of the
// Chandy-Lamport specs (model/barrier checks BarrierSnapshots'), large
// ones left out (checked on request: go run ./cmd/tlcrun -go-only -large).
func ownModels(t *testing.T, man *tla.Manifest) []tla.Model {
	var out []tla.Model
	for _, e := range man.Models {
		mod, err := tlcmodel.SpecModule(filepath.Join(tlaDir, e.Cfg))
		require.NoError(t, err)
		if strings.HasPrefix(mod, "ChandyLamport") && !e.Large {
			out = append(out, e)
		}
	}
	return out
}

// assertExpectedCounterexample requires v to be e's expected violation,
// with a valid trace, the one the exact mode's default search reports.
func assertExpectedCounterexample(t *testing.T, cfg *Config, e tla.Model, v *Violation) {
	t.Helper()
	require.NotNil(t, v, "a negative model must fail")
	assert.Equal(t, e.ExpectViolation, v.Property)
	assertTraceValid(t, cfg, v)
	exact, err := Explore(cfg, Options{})
	require.NoError(t, err)
	var b1, b2 bytes.Buffer
	WriteTrace(&b1, cfg, exact.Violation)
	WriteTrace(&b2, cfg, v)
	assert.Equal(t, b1.String(), b2.String(), "the same shortest counterexample as the exact mode")
}
