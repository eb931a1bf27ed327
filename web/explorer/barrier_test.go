package explorer

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/tla"
)

// runBarrier starts barrier scenario id under v, takes schedule and
// renders it.
func runBarrier(t *testing.T, id string, v barrier.Variant, schedule string) (*BarrierSession, BarrierView) {
	t.Helper()
	s, err := NewBarrierScenario(id, v)
	require.NoError(t, err)
	require.NoError(t, s.Replay(schedule), "%s under %s", id, v)
	view, err := s.View()
	require.NoError(t, err)
	return s, view
}

func barrierProp(t *testing.T, v BarrierView, p spec.Property) PropView {
	t.Helper()
	for _, pv := range v.Properties {
		if pv.Name == p {
			return pv
		}
	}
	require.Failf(t, "no property", "%s is not shown under %s", p, v.Variant)
	return PropView{}
}

func barrierNode(v BarrierView, name string) NodeView {
	for _, n := range v.Nodes {
		if n.Name == name {
			return n
		}
	}
	return NodeView{}
}

func barrierEdge(v BarrierView, name string) EdgeView {
	for _, e := range v.Edges {
		if e.Name == name {
			return e
		}
	}
	return EdgeView{}
}

// TestBarrierScenarios: each barrier scenario's scripted run replays
// under its own specification with every property holding, the snapshot
// complete, and its trace conforms when audited as markerwave audit
// does; the diagram is drawn.
func TestBarrierScenarios(t *testing.T) {
	all, err := BarrierScenarios()
	require.NoError(t, err)
	require.NotEmpty(t, all)
	for _, sc := range all {
		t.Run(sc.ID, func(t *testing.T) {
			s, v := runBarrier(t, sc.ID, "", sc.Article)
			assert.Equal(t, sc.Variant, v.Variant)
			assert.Empty(t, v.Violated)
			for _, p := range v.Properties {
				assert.Equal(t, DocumentedAnchor(p.Name), p.Anchor, "%s is documented", p.Name)
			}
			if sc.Article == "" {
				assert.NotEmpty(t, v.Enabled)
				return
			}
			assert.True(t, v.Complete, v.Snapshot)
			assert.Contains(t, v.Diagram, "<svg")
			rep := conformance.AuditBarrier(s.Trace(), conformance.Options{})
			assert.True(t, rep.OK(), rep.String())
			text, err := s.TraceJSONL()
			require.NoError(t, err)
			l, err := Load("run.jsonl", text, nil)
			require.NoError(t, err)
			assert.True(t, l.View().OK, "the page's audit of its own run conforms")
		})
	}
}

// TestBackpressureSwitch: in the backpressure scenario X aligns behind a
// full output, its alignment times out at step 8, and the page shows
// where alignment ended and what was persisted.
func TestBackpressureSwitch(t *testing.T) {
	sc, ok := barrierScenario("backpressure")
	require.True(t, ok)
	tokens := strings.Split(sc.Article, ".")
	s, v := runBarrier(t, "backpressure", "", strings.Join(tokens[:7], "."))
	x := barrierNode(v, "X")
	assert.Equal(t, []string{"S1->X"}, x.Blocked, "S1's barrier is in: S1 -> X blocked")
	assert.Equal(t, "aligning since step 4: S1->X blocked, waiting for the barrier of S2->X", x.State)
	assert.True(t, barrierEdge(v, "S1->X").Blocked)
	assert.Equal(t, []ItemView{{Text: "S1#1"}}, barrierEdge(v, "X->K").Queue, "X -> K is full: K is slow")
	var timeout bool
	for _, e := range v.Enabled {
		timeout = timeout || e.Token == "T2" && strings.HasPrefix(e.Label, "TimeoutV(\"X\"")
	}
	assert.True(t, timeout, "X's alignment may time out: %v", v.Enabled)
	err := s.Take("P1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the buffer of <<"X", "K">> is full (1 items, Cap = 1): backpressure`)

	require.NoError(t, s.Take("T2"))
	v, err = s.View()
	require.NoError(t, err)
	x = barrierNode(v, "X")
	assert.True(t, x.Switched)
	assert.Equal(t, 8, x.SwitchedAt)
	assert.Equal(t, "unaligned", x.Mode)
	assert.Equal(t, "unaligned", x.Reported)
	assert.Empty(t, x.Blocked)
	assert.Equal(t, "aligned from step 4 until its alignment timed out at step 8: switched to unaligned, recorded there; reported a snapshot of type unaligned", x.State)
	assert.Equal(t, []ItemView{{Text: "barrier", Barrier: true}, {Text: "S1#1", Persisted: true}}, barrierEdge(v, "X->K").Queue, "X's barrier overtook S1#1, persisted")
	assert.Equal(t, []string{"S1#1"}, barrierEdge(v, "X->K").ChannelState)
	assert.Equal(t, "recording", barrierEdge(v, "S2->X").Status)
	assert.Equal(t, "done", barrierEdge(v, "S1->X").Status)
	assert.Contains(t, v.Diagram, `class="event timeout"`, "the switch is drawn, a diamond")
	assert.Contains(t, v.Diagram, `class="blocked" data-edge="S1-&gt;X"`, "S1 -> X's blocking is shaded up to the switch")
	assert.Contains(t, v.Diagram, "when its alignment timed out and it switched to unaligned", "where alignment ended")

	_, v = runBarrier(t, "backpressure", "", sc.Article)
	assert.Equal(t, "complete at step 12; X's alignment timed out at step 8 and it switched to unaligned; channel state: S2#1 on S2->X (logged by X at step 11), S1#1 on X->K (overtaken by X's barrier, persisted at step 8)", v.Snapshot)
	assert.Contains(t, v.Diagram, `data-cat="overtaken"`, "the overtaken record is drawn as channel state")
	assert.Contains(t, v.Diagram, `data-cat="logged"`, "so is the logged one")
	assert.Contains(t, v.Notes, "switched to unaligned (the diamonds: where an alignment timed out, or a barrier waiting in a full output buffer overtook it): X")
	ecs := barrierProp(t, v, spec.PropBarrierExactChannelState)
	assert.Equal(t, []int{8, 11}, ecs.Why.Steps)
	assert.Equal(t, []int{8, 9}, barrierProp(t, v, spec.PropReportedTypeTaken).Why.Steps)
	cut := barrierProp(t, v, spec.PropBarrierConsistentCut)
	assert.Contains(t, cut.Why.Text, "S1->X: X had taken 1 at its cut (step 8), S1 had sent 1 at its own (step 2)")
	assert.Equal(t, []int{2, 7, 8, 9}, cut.Why.Steps)
}

// TestBarrierNegatives: under each broken specification its
// counter-example run (the scenario's run, or the one it needs) fails
// the property TLC's model of the variant fails (tla/manifest.json), and
// the page names the steps that break it and the cause: the step the
// positive specification would take otherwise, the rule dropped.
func TestBarrierNegatives(t *testing.T) {
	man, err := tla.Embedded()
	require.NoError(t, err)
	expect := map[string]spec.Property{}
	for _, m := range man.Models {
		expect[m.Name] = m.ExpectViolation
	}
	cases := []struct {
		scenario string
		variant  barrier.Variant
		model    string // the variant's TLC model
		prop     spec.Property
		steps    []int
		text     []string
	}{
		{"backpressure", barrier.VariantAdaptiveStaleType, "MCBarrierAdaptiveStaleType", spec.PropReportedTypeTaken, []int{8},
			[]string{"X reported a snapshot of type aligned at step 8 although it took an unaligned one: its alignment timed out and it switched at step 8",
				"The cause: at step 8, TimeoutV(\"X\",TRUE,TRUE,FALSE,TRUE), SpecAdaptive would have X report unaligned; SpecAdaptiveStaleType reports aligned",
				"SpecAdaptiveStaleType drops reporting the type taken, unaligned after the switch (IF stale THEN mode[n] ELSE \"unaligned\", BarrierAdaptive.tla line 121)"}},
		{"backpressure", barrier.VariantAdaptiveNoPersist, "MCBarrierAdaptiveNoPersist", spec.PropBarrierExactChannelState, []int{8, 9},
			[]string{"X->K's channel state was closed at step 9 holding nothing, but 1 record crossed the cut: sent before X recorded (step 8), taken after K did (step 9)",
				"The cause: at step 8, TimeoutV(\"X\",FALSE,TRUE,FALSE,FALSE), SpecAdaptive would record S1#1 as X->K's channel state; SpecAdaptiveNoPersist records nothing"}},
		{"backpressure", barrier.VariantAdaptiveNoPersist, "MCBarrierAdaptiveNoPersist", spec.PropBarrierExactlyOnce, []int{8, 16, 19},
			[]string{"the run has drained and S1#1 never reached K, the graph restored at step 16"}},
		{"backpressure", barrier.VariantAdaptiveLateTimeout, "MCBarrierAdaptiveLateTimeout", spec.PropBarrierConsistentCut, []int{2, 13, 14},
			[]string{"X's cut (step 14) counts 2 records taken off S1->X, but S1 had sent 1 when it recorded (step 2): record #2 on S1->X, taken at step 13, was sent after S1's cut",
				"which SpecAdaptive does not enable (X has already recorded: IF late THEN TRUE ELSE n \\notin recorded, BarrierAdaptive.tla line 108)"}},
		{"force-aligned", barrier.VariantAdaptiveForceSwitch, "MCBarrierAdaptiveForceSwitch", spec.PropForceAlignedNoChannelState, []int{8},
			[]string{"X->K is force-aligned, but holds channel state: S1#1 (overtaken by X's barrier, persisted at step 8)",
				"which SpecAdaptive does not enable (X feeds a force-aligned edge: it aligns however long it takes"}},
		{"aligned", barrier.VariantNoBlock, "MCBarrierNoBlock", spec.PropBarrierConsistentCut, []int{2, 7, 12},
			[]string{"record #2 on S1->X, taken at step 7, was sent after S1's cut", "<<\"S1\", \"X\">> is blocked: its barrier has arrived and X has not recorded (alignment)"}},
		{"aligned", barrier.VariantNoBlock, "MCBarrierNoBlock", spec.PropBarrierExactlyOnce, []int{7, 10, 15, 18},
			[]string{"S1#2 reached K twice (steps 10 and 18), the graph restored at step 15"}},
		{"unaligned", barrier.VariantNoPersist, "MCBarrierNoPersist", spec.PropBarrierExactChannelState, []int{2, 3},
			[]string{"S1->X's channel state was closed at step 3 holding nothing", "Spec would record S1#1 as S1->X's channel state; SpecNoPersist records nothing"}},
		{"aligned-cycle", barrier.VariantNoLog, "MCBarrierNoLog", spec.PropBarrierExactChannelState, []int{7, 9, 10, 17},
			[]string{"B->A's channel state was closed at step 17 holding nothing, but 2 records crossed the cut", "SpecNoLog drops logging the records taken off an input being recorded (the back-edge)"}},
		{"aligned-cycle", barrier.VariantAlignAll, "MCBarrierAlignAll", spec.PropBarriersComplete, []int{7, 14},
			[]string{"at step 7, RecvBarrierV(<<\"S\", \"A\">>,TRUE,FALSE), Spec would have A record here; under SpecAlignAll it waits"}},
	}
	for _, c := range cases {
		t.Run(string(c.variant)+"/"+string(c.prop), func(t *testing.T) {
			sc, ok := barrierScenario(c.scenario)
			require.True(t, ok)
			_, v := runBarrier(t, c.scenario, c.variant, sc.RunFor(c.variant))
			var names []spec.Property
			for _, p := range v.Violated {
				names = append(names, p.Name)
			}
			assert.Contains(t, names, expect[c.model], "TLC's violation of %s is named", c.model)
			p := barrierProp(t, v, c.prop)
			assert.False(t, p.Holds)
			assert.Equal(t, c.steps, p.Why.Steps)
			for _, s := range c.text {
				assert.Contains(t, p.Why.Text, s)
			}
			if c.prop != spec.PropBarriersComplete {
				assert.Equal(t, Anchor(c.prop), DocumentedAnchor(c.prop), "its argument is in docs/properties.md")
			}
		})
	}
}

// TestBarrierSchedule: the same schedule replays under another
// specification of the family; one not of the family is refused, named;
// a step not enabled names the conjunct; seeded random runs repeat and
// conform.
func TestBarrierSchedule(t *testing.T) {
	_, err := NewBarrierScenario("backpressure", barrier.VariantNoBlock)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want one of SpecAdaptive, SpecAdaptiveNoPersist")
	_, err = NewBarrierScenario("nowhere", "")
	assert.ErrorContains(t, err, `no barrier scenario "nowhere"`)

	s, err := NewBarrierScenario("force-aligned", "")
	require.NoError(t, err)
	err = s.Replay(backpressureRun)
	require.Error(t, err, "SpecAdaptive never switches X, which feeds a force-aligned edge")
	assert.Contains(t, err.Error(), "step 8, T2: not enabled in SpecAdaptive")
	assert.Contains(t, err.Error(), "Out(n) \\cap ForceAligned = {}, BarrierAdaptive.tla line 112")
	assert.Equal(t, 7, len(s.steps), "the steps that replayed are kept")
	assert.ErrorContains(t, s.Take("Q9"), "no action of SpecAdaptive is named so (enabled: ")
	assert.True(t, s.Back())
	assert.Equal(t, "E0.I0.P0.B0.E0.E1", s.Schedule())

	for _, id := range []string{"backpressure", "adaptive-cycle", "aligned-cycle", "unaligned"} {
		a, _ := NewBarrierScenario(id, "")
		b, _ := NewBarrierScenario(id, "")
		n := a.Random(3, MaxSteps)
		assert.Equal(t, n, b.Random(3, MaxSteps))
		assert.Equal(t, a.Schedule(), b.Schedule())
		v, err := a.View()
		require.NoError(t, err)
		assert.Empty(t, v.Violated, "%s: a random run of the spec breaks nothing", id)
		rep := conformance.AuditBarrier(a.Trace(), conformance.Options{})
		assert.True(t, rep.OK(), "%s: %s", id, rep.String())
	}
}

// TestBarrierVariantRules: every broken specification quotes the rule it
// drops where the spec writes it, and the positive ones drop none.
func TestBarrierVariantRules(t *testing.T) {
	for _, bv := range BarrierVariants {
		if bv.Drops == "" {
			assert.Equal(t, positive(bv.Variant), bv.Variant, "%s drops a rule", bv.Variant)
			continue
		}
		b, err := os.ReadFile("../../tla/" + bv.Rule.Module)
		require.NoError(t, err)
		lines := strings.Split(string(b), "\n")
		require.Less(t, bv.Rule.Line-1, len(lines), bv.Variant)
		assert.Contains(t, lines[bv.Rule.Line-1], bv.Rule.TLA, "%s: %s is not at %s line %d", bv.Variant, bv.Rule.TLA, bv.Rule.Module, bv.Rule.Line)
	}
}
