package explorer

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// run starts scenario id under variant v, takes schedule and renders it.
func run(t *testing.T, id string, v model.Variant, schedule string) (*Session, View) {
	t.Helper()
	s, err := NewScenario(id, v)
	require.NoError(t, err)
	require.NoError(t, s.Replay(schedule))
	view, err := s.View()
	require.NoError(t, err)
	return s, view
}

func violated(v View) []spec.Property {
	var ps []spec.Property
	for _, p := range v.Violated {
		ps = append(ps, p.Name)
	}
	return ps
}

// TestArticleRuns takes each scenario's article run under the spec: every
// snapshot completes with the system's money, no property fails, and the
// run's trace conforms when audited.
func TestArticleRuns(t *testing.T) {
	all, err := Scenarios()
	require.NoError(t, err)
	want := map[string]string{"two-accounts": "$150", "token-ring": "$1", "puzzle": "$150"}
	for _, sc := range all {
		if sc.Article == "" {
			continue
		}
		t.Run(sc.ID, func(t *testing.T) {
			s, v := run(t, sc.ID, model.VariantSpec, sc.Article)
			assert.Equal(t, sc.Article, v.Schedule)
			require.Len(t, v.Snapshots, 1)
			assert.True(t, v.Snapshots[0].Complete)
			assert.Equal(t, want[sc.ID], v.Snapshots[0].Total)
			assert.Equal(t, want[sc.ID], v.Snapshots[0].Of)
			assert.Empty(t, v.Violated)
			assert.Contains(t, v.Diagram, "<svg")
			rep := conformance.Audit(s.Trace(), conformance.Options{})
			assert.True(t, rep.OK(), rep.String())
		})
	}
	_, v := run(t, "two-accounts", model.VariantSpec, "S1x30.I1.M0.R1.M1")
	assert.Equal(t, []string{"$30 #1"}, v.Snapshots[0].Chans[1].Msgs, "the $30 in flight on P2->P1 is recorded")
	assert.Equal(t, "P2->P1", v.Snapshots[0].Chans[1].Name)
}

// TestVariants: the same schedules under the counter-example variants
// show what the spec's properties rule out, named.
func TestVariants(t *testing.T) {
	_, v := run(t, "two-accounts", model.VariantNoRecord, "S1x30.I1.M0.R1.M1")
	assert.Equal(t, "$120", v.Snapshots[0].Total, "the $30 in flight vanishes")
	assert.Contains(t, violated(v), spec.PropConservation)
	assert.Empty(t, v.Snapshots[0].Chans[1].Msgs)

	assert.Contains(t, v.Diagram, `class="msg app missing"`, "the diagram draws the $30 missing from the recording")

	_, v = run(t, "two-accounts", model.VariantNonFIFO, "I1.S0x30.R0@2.M0.M1")
	assert.Contains(t, violated(v), spec.PropConsistentCut, "the $30 overtook the marker: an orphan")
	assert.Contains(t, v.Diagram, `class="msg app orphan"`, "the diagram draws the orphan")

	_, v = run(t, "token-ring", model.VariantNoForward, "I1.S1x1.M0.R1")
	assert.Equal(t, []spec.Property{spec.PropSnapshotsComplete}, violated(v), "the snapshot stalls and nothing else fails")
	assert.False(t, v.Snapshots[0].Complete)

	_, v = run(t, "token-ring", model.VariantSpec, "I1.S1x1.M0.R1")
	assert.Empty(t, violated(v), "the spec forwards the marker: a receive is still enabled")
}

// TestSchedule: tokens name instances the same way in every variant, Back
// undoes a step, a step that is not enabled is refused naming what is,
// and a seeded random run repeats.
func TestSchedule(t *testing.T) {
	s, err := NewScenario("two-accounts", model.VariantSpec)
	require.NoError(t, err)
	err = s.Take("M0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "enabled: S0x30 S1x30 I1")
	require.NoError(t, s.Replay("S0x30.I1"))
	assert.True(t, s.Back())
	assert.Equal(t, "S0x30", s.Schedule())
	assert.True(t, s.Back())
	assert.False(t, s.Back())

	a, _ := NewScenario("concurrent", model.VariantSpec)
	b, _ := NewScenario("concurrent", model.VariantSpec)
	n := a.Random(7, 50)
	assert.Equal(t, n, b.Random(7, 50))
	assert.Equal(t, a.Schedule(), b.Schedule())
	assert.Positive(t, n)
	rep := conformance.Audit(a.Trace(), conformance.Options{})
	assert.True(t, rep.OK(), "a random run of the model conforms: %s", rep.String())

	for _, id := range []string{"two-accounts", "token-ring", "puzzle", "concurrent"} {
		for seed := uint64(1); seed <= 5; seed++ {
			s, err := NewScenario(id, model.VariantSpec)
			require.NoError(t, err)
			s.Random(seed, MaxSteps)
			assert.Empty(t, s.Enabled(), "%s seed %d runs to the end", id, seed)
			v, err := s.View()
			require.NoError(t, err)
			assert.Empty(t, v.Violated, "%s seed %d", id, seed)
			rep := conformance.Audit(s.Trace(), conformance.Options{})
			assert.True(t, rep.OK(), "%s seed %d: %s", id, seed, rep.String())
		}
	}
}

// TestConstantsOfOnesOwn: constants are checked against the page's limits
// and the spec's ASSUME, with the fault named.
func TestConstantsOfOnesOwn(t *testing.T) {
	sc, err := scenario("puzzle")
	require.NoError(t, err)
	k := sc.Constants
	_, err = NewSession(k, "SpecLossless")
	assert.ErrorContains(t, err, `no variant "SpecLossless"`)
	k.Budget = map[spec.ProcID]int{"P1": 10, "P2": 10}
	_, err = NewSession(k, model.VariantSpec)
	assert.ErrorContains(t, err, "a total budget of 20 sends")
	k = sc.Constants
	k.Chans = [][2]spec.ProcID{{"P1", "P2"}}
	_, err = NewSession(k, model.VariantSpec)
	assert.Error(t, err, "not strongly connected")
	k = Constants{
		Procs: []spec.ProcID{"A", "B", "C"}, Chans: [][2]spec.ProcID{{"A", "B"}, {"B", "C"}, {"C", "A"}, {"B", "A"}},
		InitBal: map[spec.ProcID]int64{"A": 10, "B": 5, "C": 0}, Amount: []int64{1, 4},
		Budget: map[spec.ProcID]int{"A": 2, "B": 2, "C": 1}, Initiator: map[spec.SnapID]spec.ProcID{1: "A", 2: "C"},
	}
	s, err := NewSession(k, model.VariantSpec)
	require.NoError(t, err, "constants of one's own within the limits")
	s.Random(3, MaxSteps)
	v, err := s.View()
	require.NoError(t, err)
	assert.Empty(t, v.Violated)
	assert.Len(t, v.Snapshots, 2)
	assert.True(t, conformance.Audit(s.Trace(), conformance.Options{}).OK())
	k = sc.Constants
	k.InitBal = map[spec.ProcID]int64{"P1": 100, "P9": 50}
	_, err = NewSession(k, model.VariantSpec)
	assert.ErrorContains(t, err, `"P9"`)
}

// TestLoad audits the project's traces as markerwave audit does.
func TestLoad(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile("../../" + path)
		require.NoError(t, err)
		return string(b)
	}
	l, err := Load("orphan.jsonl", read("traces/rejects/ConsistentCut-orphan.jsonl"), nil)
	require.NoError(t, err)
	v := l.View()
	assert.False(t, v.OK)
	assert.Equal(t, spec.PropConsistentCut, v.Property)
	require.NotNil(t, v.Divergence)
	assert.Positive(t, v.Divergence.Step)
	d, err := l.Diagram(v.Divergence.Step, 0)
	require.NoError(t, err)
	assert.Contains(t, d, "<svg")

	l, err = Load("ring.jsonl", read("traces/conforms/token-ring.jsonl"), nil)
	require.NoError(t, err)
	assert.True(t, l.View().OK)

	_, err = Load("bad.jsonl", "{\"format\":\"nope\"}\n", nil)
	assert.ErrorContains(t, err, "bad.jsonl")
}

// propDetail is the detail of property p in v, failing the test if v
// does not list p.
func propDetail(t *testing.T, v View, p spec.Property) string {
	t.Helper()
	for _, x := range v.Properties {
		if x.Name == p {
			return x.Detail
		}
	}
	t.Fatalf("the view lists no %s: %+v", p, v.Properties)
	return ""
}

// TestLossyAndFaultVariants: the lossy channels and the faults
// specifications in the page, each failure named with its property and
// its cause: a lost marker stalls the snapshot (SnapshotsComplete); a
// crash with no detector leaves it pending (SnapshotsEnd); with the
// detector it is suspected and aborted, and every property holds.
func TestLossyAndFaultVariants(t *testing.T) {
	s, v := run(t, "two-accounts", model.VariantLossy, "I1.L0")
	assert.Equal(t, []spec.Property{spec.PropSnapshotsComplete}, violated(v))
	assert.Contains(t, propDetail(t, v, spec.PropSnapshotsComplete), "snapshot 1 was initiated and is never complete")
	assert.Contains(t, propDetail(t, v, spec.PropSnapshotsComplete), "its marker was lost on P1->P2")
	assert.Empty(t, v.Partial, "a lost marker is a send never received: the trace is whole")
	assert.False(t, conformance.Audit(s.Trace(), conformance.Options{}).OK(), "the run's trace claims it drained, and the marker never arrived")
	assert.Contains(t, v.Diagram, "<svg")

	_, v = run(t, "crash", model.VariantNoDetector, "I1.C1")
	assert.Equal(t, []spec.Property{spec.PropSnapshotsEnd}, violated(v))
	assert.Contains(t, propDetail(t, v, spec.PropSnapshotsEnd), "snapshot 1 was initiated and is never complete or aborted")
	assert.Contains(t, propDetail(t, v, spec.PropSnapshotsEnd), "P2 crashed and nothing suspects it")
	assert.Equal(t, "in progress: $100 recorded so far", v.Snapshots[0].Status)
	assert.NotEmpty(t, v.Partial)

	_, v = run(t, "crash", model.VariantFaults, "I1.C1.X1.A1p1")
	assert.Empty(t, violated(v))
	assert.Equal(t, "aborted: P2 suspected", v.Snapshots[0].Status)
	assert.Contains(t, propDetail(t, v, spec.PropSnapshotsEnd), "every initiated snapshot is complete or aborted")
	for _, p := range []spec.Property{spec.PropMoneyConserved, spec.PropExactlyOnce, spec.PropAbortSound, spec.PropRecoveredFromComplete} {
		propDetail(t, v, p) // the faults invariants are checked
	}

	// Recovering from the aborted snapshot (RecoverAny) breaks
	// RecoveredFromComplete, named.
	_, v = run(t, "crash", model.VariantRecoverAny, "I1.C1.X1.A1p1.V1")
	assert.Contains(t, violated(v), spec.PropRecoveredFromComplete)

	// Random runs of every variant the page offers render: the trace
	// leaves out what it cannot say, and the diagram draws the rest.
	for _, x := range Variants {
		for _, id := range []string{"crash", "concurrent"} {
			for seed := uint64(1); seed <= 20; seed++ {
				s, err := NewScenario(id, x.Variant)
				require.NoError(t, err)
				s.Random(seed, 40)
				_, err = s.View()
				require.NoError(t, err, "%s under %s, seed %d: %s", id, x.Variant, seed, s.Schedule())
			}
		}
	}
}

// TestLoadBarrierTraces: the page opens a barrier trace (auto-detected by
// its header) and audits it as markerwave audit does, with its events
// listed and its diagram drawn.
func TestLoadBarrierTraces(t *testing.T) {
	for _, c := range []struct {
		path string
		want spec.Property
	}{
		{"traces/barrier/conforms/aligned-dag.jsonl", ""},
		{"traces/barrier/rejects/BarrierConsistentCut-no-blocking.jsonl", "BarrierConsistentCut"},
	} {
		b, err := os.ReadFile("../../" + c.path)
		require.NoError(t, err)
		l, err := Load(c.path, string(b), nil)
		require.NoError(t, err, c.path)
		rep, err := conformance.AuditFile("../../"+c.path, conformance.Options{})
		require.NoError(t, err)
		v := l.View()
		assert.Equal(t, rep.OK(), v.OK, c.path)
		assert.Equal(t, c.want, v.Property, c.path)
		assert.Equal(t, rep.Property(), v.Property, c.path)
		assert.Equal(t, rep.String(), v.Verdict, c.path)
		require.Len(t, v.Events, l.Len())
		assert.Positive(t, v.Events[0].Line)
		assert.NotEmpty(t, v.Events[0].Label)
		d, err := l.Diagram(0, 0)
		require.NoError(t, err)
		assert.Contains(t, d, "<svg")
	}
	_, err := Load("bad-barrier.jsonl", `{"format":"markerwave-barrier-trace/1","graph":{}}`+"\n", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad-barrier.jsonl")
}

// TestLoadNodeLogs: several files opened together are one run's node
// logs, merged in causal order and audited as markerwave audit audits
// their directory.
func TestLoadNodeLogs(t *testing.T) {
	f, err := os.Open("../../traces/conforms/concurrent-snapshots.jsonl")
	require.NoError(t, err)
	defer f.Close()
	tr, err := spec.ReadTrace(f)
	require.NoError(t, err)
	var files []TraceFile
	for _, p := range tr.Header.Topology.Procs {
		log := spec.Trace{Header: tr.Header}
		for _, e := range tr.Events {
			if e.Proc == p {
				log.Events = append(log.Events, e)
			}
		}
		var b strings.Builder
		require.NoError(t, spec.WriteTrace(&b, log))
		files = append(files, TraceFile{Name: string(p) + ".jsonl", Text: b.String()})
	}
	l, err := LoadFiles(files, nil)
	require.NoError(t, err)
	v := l.View()
	assert.True(t, v.OK, v.Verdict)
	assert.Equal(t, len(tr.Events), len(v.Events))
	assert.Contains(t, v.Name, fmt.Sprintf("%d node logs merged (P1.jsonl, P2.jsonl", len(files)))
	assert.NotEmpty(t, v.Snapshots)

	// One log alone is incomplete, as markerwave audit says.
	l, err = LoadFiles(files[:1], nil)
	require.NoError(t, err)
	assert.Contains(t, l.View().Verdict, "incomplete")

	// A barrier trace is one run in one file.
	b, err := os.ReadFile("../../traces/barrier/conforms/aligned-dag.jsonl")
	require.NoError(t, err)
	_, err = LoadFiles(append(files[:2:2], TraceFile{Name: "dag.jsonl", Text: string(b)}), nil)
	assert.ErrorContains(t, err, "dag.jsonl is a barrier trace")
	// A broken log is named.
	_, err = LoadFiles(append(files[:2:2], TraceFile{Name: "P9.jsonl", Text: "{nope\n"}), nil)
	assert.ErrorContains(t, err, "P9.jsonl")
	_, err = LoadFiles(nil, nil)
	assert.Error(t, err)
}

// TestFirst: what the page shows before its WebAssembly has started is the
// catalogue the WebAssembly replies with and the first scenario's initial
// view under its own specification, as a session renders it.
func TestFirst(t *testing.T) {
	cat, err := NewCatalogue()
	require.NoError(t, err)
	b, err := First(cat)
	require.NoError(t, err)
	var first struct {
		Catalogue Catalogue `json:"catalogue"`
		View      View      `json:"view"`
	}
	require.NoError(t, json.Unmarshal(b, &first))
	assert.Equal(t, len(cat.Scenarios), len(first.Catalogue.Scenarios))
	assert.Equal(t, len(cat.BarrierScenarios), len(first.Catalogue.BarrierScenarios))
	assert.Equal(t, cat.Limits, first.Catalogue.Limits)
	s, err := NewScenario(cat.Scenarios[0].ID, "")
	require.NoError(t, err)
	want, err := s.View()
	require.NoError(t, err)
	assert.Equal(t, want.Variant, first.View.Variant)
	assert.Equal(t, want.Enabled, first.View.Enabled)
	// The page reads a process's balance as text ("bal"), which hides the
	// embedded LocalState's own in the JSON.
	shown := func(ps []ProcView) (out []string) {
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s %s %d %d", p.ID, p.Bal, p.Sent, p.Rcvd))
		}
		return out
	}
	assert.Equal(t, []string{"P1 $100 0 0", "P2 $50 0 0"}, shown(first.View.Procs))
	assert.Equal(t, shown(want.Procs), shown(first.View.Procs))
	assert.Equal(t, want.Chans, first.View.Chans)
	assert.Len(t, first.View.Properties, len(want.Properties))
	assert.Empty(t, first.View.History, "the initial state: no step taken")
}
