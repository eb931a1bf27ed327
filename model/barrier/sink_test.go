package barrier

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/tla"
)

func loadSink(t *testing.T, name string) *SinkConfig {
	t.Helper()
	cfg, err := LoadSink(filepath.Join(tlaDir, name+".cfg"))
	require.NoError(t, err)
	return cfg
}

// The sink explorer reproduces TLC's counts for every positive model of
// tla/BarrierSink.tla in the manifest and fails every negative one with
// the property TLC reports; for every model it reproduces the counts the
// manifest recorded for it.
func TestSinkParityWithTLC(t *testing.T) {
	man, err := tla.Load(filepath.Join(tlaDir, "manifest.json"))
	require.NoError(t, err)
	n := 0
	for _, e := range man.Models {
		path := filepath.Join(tlaDir, e.Cfg)
		mod, err := tlcmodel.SpecModule(path)
		require.NoError(t, err)
		if !IsSinkModule(mod) {
			continue
		}
		n++
		t.Run(e.Name, func(t *testing.T) {
			if testing.Short() && e.TLC.Distinct > 10000 {
				t.Skipf("-short: %d states (make test checks it)", e.TLC.Distinct)
			}
			cfg, err := LoadSink(path)
			require.NoError(t, err)
			res, err := SinkExplore(cfg, engine.Options{})
			require.NoError(t, err)
			t.Logf("%s: %d generated, %d distinct, depth %d (TLC: %d, %d, %d)", e.Name,
				res.Generated, res.Distinct, res.Depth, e.TLC.Generated, e.TLC.Distinct, e.TLC.Depth)
			got := tla.Measure{Distinct: res.Distinct, Generated: res.Generated, Depth: int64(res.Depth)}
			if res.Violation != nil {
				got.Violation = res.Violation.Property
			}
			assert.Empty(t, e.GoMismatches(got, &e.Go))
			assert.Empty(t, e.GoUnchecked, "the explorer checks every property of a sink model")
			switch e.Kind {
			case tla.Positive:
				require.Nil(t, res.Violation, "a positive model must hold")
				assert.True(t, res.Stop == engine.StopDone)
			case tla.Negative:
				require.NotNil(t, res.Violation, "a negative model must fail")
				assert.Equal(t, e.ExpectViolation, res.Violation.Property)
				assertSinkTraceValid(t, cfg, res.Violation)
			}
		})
	}
	assert.GreaterOrEqual(t, n, 9, "the manifest lists three positive and six negative sink models")
}

// assertSinkTraceValid replays a counterexample: it starts in SinkInit,
// each step is its labelled action, and only its last state breaks the
// property.
func assertSinkTraceValid(t *testing.T, cfg *SinkConfig, v *SinkViolation) {
	t.Helper()
	require.NotEmpty(t, v.Trace)
	assert.Equal(t, SinkKey(SinkInit(cfg)), SinkKey(v.Trace[0].State))
	for i := 1; i < len(v.Trace); i++ {
		require.NotNil(t, v.Trace[i].Action)
		n, err := v.Trace[i].Action.Apply(cfg, v.Trace[i-1].State)
		require.NoError(t, err, "step %d (%s)", i+1, v.Trace[i].Label)
		assert.Equal(t, SinkKey(v.Trace[i].State), SinkKey(n), "step %d", i+1)
	}
	last := v.Trace[len(v.Trace)-1].State
	if v.Kind == engine.KindProperty {
		assert.True(t, v.Stutter)
		assert.Equal(t, spec.PropCompleteCommitted, v.Property)
		assert.True(t, sinkLiveViolated(cfg, last))
		return
	}
	require.Equal(t, engine.KindInvariant, v.Kind)
	f, ok := SinkInvariantByName(v.Property)
	require.True(t, ok)
	for _, s := range v.Trace[:len(v.Trace)-1] {
		assert.True(t, f(cfg, s.State), "the counterexample should stop at the first violation")
	}
	assert.False(t, f(cfg, last))
}

// Each negative model's shortest counterexample shows the broken rule.
// For the invariants it is TLC's (-workers 1), step for step; for the
// liveness property TLC's has an EmitS first (its liveness search does
// not look for the shortest).
func TestSinkShortestCounterexamples(t *testing.T) {
	for name, want := range map[string][]string{
		// The transaction is committed when the barrier arrives.
		"MCBarrierSinkArrival": {"", `InjectS("S1")`, `RecvBarrierSV(<<"S1", "K">>,TRUE)`},
		// Committed at arrival, the failure before completion replays the
		// record, committed again at the next arrival.
		"MCBarrierSinkArrivalDup": {"", `EmitS("S1")`, `InjectS("S1")`, `ProcessS(<<"S1", "K">>)`, `RecvBarrierSV(<<"S1", "K">>,TRUE)`,
			"RestoreSV(FALSE,FALSE,FALSE)", `EmitS("S1")`, `InjectS("S1")`, `ProcessS(<<"S1", "K">>)`, `RecvBarrierSV(<<"S1", "K">>,TRUE)`},
		// The interrupted checkpoint's transaction 1 survives the restore
		// and is committed with the replay's transaction 3.
		"MCBarrierSinkNoAbort": {"", `EmitS("S1")`, `InjectS("S1")`, `ProcessS(<<"S1", "K">>)`, `RecvBarrierSV(<<"S1", "K">>,FALSE)`,
			"RestoreSV(TRUE,FALSE,FALSE)", `InjectS("S1")`, `RecvBarrierSV(<<"S1", "K">>,FALSE)`, "CompleteCkpt", "Commit(1)", "Commit(3)"},
		// The sink fails between pre-commit and commit; the restore
		// aborts the complete checkpoint's transaction.
		"MCBarrierSinkForget": {"", `EmitS("S1")`, `InjectS("S1")`, `ProcessS(<<"S1", "K">>)`, `RecvBarrierSV(<<"S1", "K">>,FALSE)`,
			"CompleteCkpt", "RestoreSV(FALSE,TRUE,FALSE)"},
		// The store times the transaction out; the sink takes it for
		// committed.
		"MCBarrierSinkSilent": {"", `EmitS("S1")`, `InjectS("S1")`, `ProcessS(<<"S1", "K">>)`, `RecvBarrierSV(<<"S1", "K">>,FALSE)`,
			"CompleteCkpt", "StoreAbort(1)", "ReportLossV(1,TRUE)"},
		// The checkpoint completes and no notification ever arrives: the
		// behaviour stutters with transaction 1 pre-committed.
		"MCBarrierSinkNoNotify": {"", `InjectS("S1")`, `RecvBarrierSV(<<"S1", "K">>,FALSE)`, "CompleteCkpt"},
	} {
		res, err := SinkExplore(loadSink(t, name), engine.Options{})
		require.NoError(t, err)
		require.NotNil(t, res.Violation, name)
		var got []string
		for _, s := range res.Violation.Trace {
			got = append(got, s.Label)
		}
		assert.Equal(t, want, got, name)
	}
}

// Each conjunct tla/BarrierSink.tla adds is quoted from the line it
// cites.
func TestSinkConjunctSourcesQuoteTheSpec(t *testing.T) {
	f, err := os.Open(filepath.Join(tlaDir, modSink))
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.NoError(t, sc.Err())
	for kind, m := range sinkConjunctText {
		for k, src := range m {
			assert.Equal(t, modSink, src.Module)
			require.Less(t, src.Line, len(lines)+1)
			assert.Contains(t, lines[src.Line-1], src.TLA, "action %d conjunct %d", kind, k)
		}
	}
	// Every definition a SinkActionKind's comment names is where it says.
	for name, line := range map[string]int{"EmitS(s)": 128, "InjectS(s)": 129, "ProcessS(e) ==": 131,
		"RecvBarrierSV(e, arrival) ==": 143, "CompleteCkpt ==": 157, "Commit(i) ==": 170, "StoreAbort(i) ==": 179,
		"ReportLossV(i, silent) ==": 194, "RestoreSV(noabort, forget, silent) ==": 226, "NextS(": 250,
		"SinkTypeOK ==": 293, "ExactlyOnceOutput ==": 313, "CompleteCommitted ==": 324} {
		assert.True(t, strings.HasPrefix(lines[line-1], name), "line %d: %q is not %s", line, lines[line-1], name)
	}
}

// Not enabled: the conjunct at fault, quoted, for the sink's conjuncts
// and for those of the base actions it wraps.
func TestSinkNotEnabled(t *testing.T) {
	cfg := loadSink(t, "MCBarrierSinkTimeout")
	st := SinkInit(cfg)
	var ne *NotEnabled
	_, err := SinkAction{Kind: SinkCommitTxn, Txn: 1}.Apply(cfg, st)
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, NotPending, ne.Conjunct)
	assert.Equal(t, "Pending(i)", ne.Source.TLA)
	_, err = SinkAction{Kind: SinkCompleteCkpt}.Apply(cfg, st)
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, NotComplete, ne.Conjunct)
	_, err = SinkAction{Kind: SinkProcess, Edge: 0}.Apply(cfg, st)
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, EmptyQueue, ne.Conjunct)
	assert.Equal(t, modBarrier, ne.Source.Module)
	assert.Contains(t, err.Error(), "ProcessS(<<\"S1\", \"K\">>)")
}

// sinkReachable lists every state reachable in cfg, breadth first.
func sinkReachable(cfg *SinkConfig) []*SinkState {
	init := SinkInit(cfg)
	seen := map[string]bool{SinkKey(init): true}
	out := []*SinkState{init}
	for i := 0; i < len(out); i++ {
		for _, s := range SinkNext(cfg, out[i]) {
			if k := SinkKey(s.State); !seen[k] {
				seen[k] = true
				out = append(out, s.State)
			}
		}
	}
	return out
}

// On every reachable state of the timeout model: the encoding round-trips
// and no action modifies the state it is given; and the model reaches
// what it is there to show: a reported loss, a record committed after a
// restore, every record in the store.
func TestSinkReachable(t *testing.T) {
	cfg := loadSink(t, "MCBarrierSinkTimeout")
	states := sinkReachable(cfg)
	require.Len(t, states, 8446)
	var lossReported, committedAfterRestore, allStored bool
	for _, st := range states {
		k := SinkKey(st)
		d, err := SinkDecode(cfg, []byte(k))
		require.NoError(t, err)
		require.Equal(t, k, SinkKey(d))
		for _, a := range cfg.Actions() {
			_, _ = sinkStep(cfg, st, a)
			require.Equal(t, k, SinkKey(st), "%s modified its input", a.Label(cfg))
		}
		lossReported = lossReported || st.ReportedLoss != 0
		committedAfterRestore = committedAfterRestore || st.Restores > 0 &&
			slices.ContainsFunc(st.Txns[1:], func(t Txn) bool { return t.St == spec.TxnCommitted })
		allStored = allStored || !slices.Contains(st.Store, 0)
	}
	assert.True(t, lossReported, "a store timeout of a complete checkpoint is reported")
	assert.True(t, committedAfterRestore)
	assert.True(t, allStored, "every record reaches the store")
	_, err := SinkDecode(cfg, []byte{1, 2, 3})
	assert.Error(t, err)
}

// The liveness argument is asserted, not assumed: on SpecSinkForget, whose
// restore aborts a pending transaction, the explorer refuses to judge
// CompleteCommitted.
func TestSinkLivenessArgumentChecked(t *testing.T) {
	cfg := loadSink(t, "MCBarrierSinkForget")
	cfg.Invariants = nil
	cfg.Properties = []spec.Property{spec.PropCompleteCommitted}
	_, err := SinkExplore(cfg, engine.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unsettles transaction")
}

// A model of tla/BarrierSink.tla with bad constants or names is refused
// with an error naming the file, the line and what is wrong.
func TestLoadSinkErrors(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(tlaDir, "MCBarrierSinkTimeout.tla"))
	require.NoError(t, err)
	cfgText, err := os.ReadFile(filepath.Join(tlaDir, "MCBarrierSinkTimeout.cfg"))
	require.NoError(t, err)
	for _, c := range []struct{ name, from, to, inCfg, want string }{
		{"unaligned", `MCMode   == "aligned"`, `MCMode   == "unaligned"`, "", `Mode must be "aligned"`},
		{"noCkpt", "MCMaxCkpt     == 2", "MCMaxCkpt     == 0", "", "MaxCkpt"},
		{"negRestores", "MCMaxRestores == 1", "MCMaxRestores == -1", "", "MaxRestores"},
		{"spec", "", "", "SPECIFICATION SpecSinkOops", `unknown specification "SpecSinkOops"`},
		{"invariant", "", "", "    BarrierExactlyOnce", "unknown invariant BarrierExactlyOnce"},
	} {
		dir := t.TempDir()
		mod := strings.Replace(string(base), "MCBarrierSinkTimeout", "MCBad", 1)
		if c.from != "" {
			require.Contains(t, mod, c.from)
			mod = strings.Replace(mod, c.from, c.to, 1)
		}
		cf := string(cfgText)
		switch {
		case strings.HasPrefix(c.inCfg, "SPECIFICATION"):
			cf = strings.Replace(cf, "SPECIFICATION SpecSink", c.inCfg, 1)
		case c.inCfg != "":
			cf = strings.Replace(cf, "INVARIANTS\n", "INVARIANTS\n"+c.inCfg+"\n", 1)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "MCBad.tla"), []byte(mod), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "MCBad.cfg"), []byte(cf), 0o644))
		_, err := LoadSink(filepath.Join(dir, "MCBad.cfg"))
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
		assert.Contains(t, err.Error(), "MCBad", c.name)
	}
	_, err = LoadSink(filepath.Join(tlaDir, "MCBarrierAlignedDAG.cfg"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not extend BarrierSink")
}
