package explorer

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// prop is property p of view v.
func prop(t *testing.T, v View, p spec.Property) PropView {
	t.Helper()
	for _, pv := range v.Properties {
		if pv.Name == p {
			return pv
		}
	}
	require.Failf(t, "no property", "%s is not shown", p)
	return PropView{}
}

// TestWhy: for known runs, the steps shown make each property hold or
// fail, as the model's states say.
func TestWhy(t *testing.T) {
	// The orphan: P1 initiates (step 1), sends $30 #1 after recording
	// (step 2); P2 receives it ahead of the marker (step 3), then records
	// on the marker (step 4).
	_, v := run(t, "two-accounts", model.VariantNonFIFO, "I1.S0x30.R0@2.M0.M1")
	cc := prop(t, v, spec.PropConsistentCut)
	assert.False(t, cc.Holds)
	assert.Equal(t, []int{2, 3}, cc.Why.Steps)
	assert.Equal(t, "the orphan #1 on P1->P2: sent at step 2, after P1 recorded for snapshot 1 (step 1); received at step 3, before P2 recorded (step 4)", cc.Why.Text)
	assert.Equal(t, "consistentcut", cc.Anchor)

	// The same sends under FIFO channels: the $30 travels behind the
	// marker, so P2 records (step 3) before it receives it (step 4).
	_, v = run(t, "two-accounts", model.VariantSpec, "I1.S0x30.M0.R0.M1")
	cc = prop(t, v, spec.PropConsistentCut)
	assert.True(t, cc.Holds)
	assert.Equal(t, []int{2, 3}, cc.Why.Steps)
	assert.Equal(t, "#1 on P1->P2 was sent at step 2, after P1 recorded for snapshot 1 (step 1): it travels behind that marker, so P2 recorded at step 3, before it could receive it (it did at step 4)", cc.Why.Text)

	// The article's run: P2->P1 is closed by P2's marker at step 5 with
	// the $30 #1; the snapshot completes there with $150.
	_, v = run(t, "two-accounts", model.VariantSpec, "S1x30.I1.M0.R1.M1")
	ecs := prop(t, v, spec.PropExactChannelState)
	assert.Equal(t, []int{5}, ecs.Why.Steps)
	assert.Contains(t, ecs.Why.Text, "P2->P1's recording for snapshot 1 was closed by the marker at step 5")
	assert.Contains(t, ecs.Why.Text, "#1..#1")
	cons := prop(t, v, spec.PropConservation)
	assert.Equal(t, []int{5}, cons.Why.Steps)
	assert.Contains(t, cons.Why.Text, "recorded $150, the system's $150")
	cc = prop(t, v, spec.PropConsistentCut)
	assert.Equal(t, []int{2, 3}, cc.Why.Steps, "both ends of P1->P2 recorded at steps 2 and 3")
	assert.True(t, prop(t, v, spec.PropTypeOK).Why.Text != "")

	// No recording: Conservation fails from the step that completed the
	// snapshot without the $30.
	_, v = run(t, "two-accounts", model.VariantNoRecord, "S1x30.I1.M0.R1.M1")
	cons = prop(t, v, spec.PropConservation)
	assert.False(t, cons.Holds)
	assert.Equal(t, []int{5}, cons.Why.Steps)

	// A lost marker: SnapshotsComplete fails at the Lose step.
	_, v = run(t, "two-accounts", model.VariantLossy, "I1.L0")
	live := prop(t, v, spec.PropSnapshotsComplete)
	assert.False(t, live.Holds)
	assert.Equal(t, []int{2}, live.Why.Steps)
	assert.Contains(t, live.Detail, "its marker was lost on P1->P2 (step 2)")

	// A crash nothing suspects: SnapshotsEnd fails at the crash.
	_, v = run(t, "crash", model.VariantNoDetector, "I1.C1")
	live = prop(t, v, spec.PropSnapshotsEnd)
	assert.Equal(t, []int{2}, live.Why.Steps)
	// With the detector the snapshot is aborted at step 4: it ended.
	_, v = run(t, "crash", model.VariantFaults, "I1.C1.X1.A1p1")
	live = prop(t, v, spec.PropSnapshotsEnd)
	assert.True(t, live.Holds)
	assert.Equal(t, []int{4}, live.Why.Steps)
}

// TestScenarioVariant: a scenario opens under the specification whose
// actions it needs; the crash scenario offers Crash.
func TestScenarioVariant(t *testing.T) {
	s, err := NewScenario("crash", "")
	require.NoError(t, err)
	v, err := s.View()
	require.NoError(t, err)
	assert.Equal(t, model.VariantFaults, v.Variant)
	var crash bool
	for _, e := range v.Enabled {
		crash = crash || strings.HasPrefix(e.Label, "Crash")
	}
	assert.True(t, crash, "the crash scenario offers Crash: %v", v.Enabled)
	s, err = NewScenario("two-accounts", "")
	require.NoError(t, err)
	assert.Equal(t, model.VariantSpec, s.cfg.Variant)
}

// TestPropertyDocs: every property the page shows has its section in
// docs/properties.md, and its TLA+ definition is where PropertyDocs
// says.
func TestPropertyDocs(t *testing.T) {
	f, err := os.Open("../../" + DocsFile)
	require.NoError(t, err)
	defer f.Close()
	anchors, err := DocAnchors(f)
	require.NoError(t, err)
	for _, d := range PropertyDocs {
		assert.True(t, anchors[d.Anchor], "docs/properties.md has no heading for %s (#%s)", d.Name, d.Anchor)
		file, line, ok := strings.Cut(d.Where, ":")
		require.True(t, ok, d.Where)
		b, err := os.ReadFile("../../" + file)
		require.NoError(t, err)
		lines := strings.Split(string(b), "\n")
		var n int
		_, err = fmt.Sscan(line, &n)
		require.NoError(t, err)
		require.Less(t, n-1, len(lines), d.Where)
		assert.True(t, strings.HasPrefix(lines[n-1], string(d.Name)+" =="), "%s: %q is not %s's definition", d.Where, lines[n-1], d.Name)
	}
	// Every property a variant's view shows is documented.
	documented := map[spec.Property]bool{}
	for _, d := range PropertyDocs {
		documented[d.Name] = true
	}
	for _, x := range Variants {
		id := "two-accounts"
		if x.Variant.Faults() {
			id = "crash"
		}
		_, v := run(t, id, x.Variant, "")
		for _, p := range v.Properties {
			assert.True(t, documented[p.Name], "%s shows %s, which PropertyDocs lacks", x.Variant, p.Name)
		}
	}
}

// TestWhyHeldAgain: an invariant true now but false earlier in the run
// says so, with the step, rather than claiming it held throughout (a
// run made of the orphan run's states: its initial state, the state
// after the orphan's cut, the initial state again).
func TestWhyHeldAgain(t *testing.T) {
	s, _ := run(t, "two-accounts", model.VariantNonFIFO, "I1.S0x30.R0@2.M0.M1")
	require.False(t, model.ConsistentCut(s.cfg, s.states[4]))
	back := &Session{k: s.k, cfg: s.cfg, walk: walk[model.Transition, *model.State]{states: []*model.State{s.states[0], s.states[4], s.states[0]}, steps: []model.Transition{s.steps[3], s.steps[0]}}}
	why := back.why(spec.PropConsistentCut, true)
	assert.Equal(t, []int{1}, why.Steps)
	assert.Equal(t, `holds now, but was false after step 1, RecvMarkerAt("P1","P2",1)`, why.Text)
	assert.Equal(t, "holds in every state of the run (3 states)", back.why(spec.PropTypeOK, true).Text)
}
