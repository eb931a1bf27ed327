package export

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/spec"
)

func TestTLCModelText(t *testing.T) {
	mod, cfg, err := TLCModel(twoBank(t))
	require.NoError(t, err)
	for _, want := range []string{
		"EXTENDS TraceChandyLamport, TLC",
		`MCProc == {"P1", "P2"}`,
		`MCChan == {<<"P1", "P2">>, <<"P2", "P1">>}`,
		`MCInitBal == ("P1" :> 100 @@ "P2" :> 50)`,
		"MCAmount == {20, 30}",
		`MCBudget == ("P1" :> 1 @@ "P2" :> 1)`,
		"MCSnap == {1}",
		`MCInitiator == (1 :> "P1")`,
		`[action |-> "Initiate", pid |-> "P1", from |-> "", to |-> "", snap |-> 1, amount |-> 0, msg |-> 0, first |-> FALSE, bal |-> 70, sent |-> 1, rcvd |-> 0],`,
		`[action |-> "RecvMarker", pid |-> "P2", from |-> "P1", to |-> "P2", snap |-> 1, amount |-> 0, msg |-> 0, first |-> TRUE, bal |-> 60, sent |-> 1, rcvd |-> 1],`,
	} {
		assert.Contains(t, mod, want)
	}
	for _, want := range []string{"Trace     <- MCTrace", "INIT TraceInit", "NEXT TraceNext", "TraceMatched", string(spec.PropConsistentCut),
		string(spec.PropExactChannelState), string(spec.PropConservation), string(spec.PropChandyLamportTheorem), "POSTCONDITION TraceAccepted", "ALIAS TraceAlias",
		"Recorded  <- MCRecorded", "Drained   <- MCDrained", "ReportedConsistentCut", "ReportedExactChannelState",
		"ReportedConservation", "ReportedRecordedState", "ReportedComplete", "ReportedSnapshotsComplete"} {
		assert.Contains(t, cfg, want)
	}

	// The reported snapshots and the drained claim go into the model.
	f, err := os.Open(filepath.Join("..", "..", "traces", "conforms", "two-account-transfer.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	rep, err := spec.ReadTrace(f)
	require.NoError(t, err)
	require.Len(t, rep.Recorded, 1)
	mod, _, err = TLCModel(rep)
	require.NoError(t, err)
	for _, want := range []string{
		"MCRecorded == <<\n  [snap |-> 1,\n",
		`   procs |-> ("P1" :> [bal |-> 70, sent |-> 1, rcvd |-> 0] @@ "P2" :> [bal |-> 50, sent |-> 0, rcvd |-> 0]),`,
		`   msgs |-> (<<"P1", "P2">> :> <<[amt |-> 30, seq |-> 1]>> @@ <<"P2", "P1">> :> <<>>),`,
		`   sent |-> (<<"P1", "P2">> :> 1 @@ <<"P2", "P1">> :> 0),`,
		`   got |-> (<<"P1", "P2">> :> 0 @@ <<"P2", "P1">> :> 0)]`,
		"MCDrained == TRUE",
	} {
		assert.Contains(t, mod, want)
	}

	// Without a header budget or snapshot list, they come from the events;
	// an empty trace has empty sets and functions.
	tr := twoBank(t)
	tr.Header.Budget, tr.Header.Snaps = nil, nil
	mod, _, err = TLCModel(tr)
	require.NoError(t, err)
	assert.Contains(t, mod, `MCBudget == ("P1" :> 1 @@ "P2" :> 1)`)
	assert.Contains(t, mod, `MCInitiator == (1 :> "P1")`)
	mod, _, err = TLCModel(spec.Trace{Header: spec.Header{Topology: spec.Complete(2)}})
	require.NoError(t, err)
	assert.Contains(t, mod, "MCSnap == {}")
	assert.Contains(t, mod, "MCInitiator == <<>>")
	assert.Contains(t, mod, "MCAmount == {}")
	_, _, err = TLCModel(spec.Trace{})
	assert.Error(t, err)

	// A run with failures is refused, naming the first fault event:
	// tla/TraceChandyLamport.tla's actions are the algorithm's only.
	tr = readTraceFile(t, "traces/conforms/crash-abort.jsonl")
	_, _, err = TLCModel(tr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "event 3 is Suspect(P2) at P3, an action of the failure handling")
}

func TestExportTLCWritesModel(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, ExportTLC(twoBank(t), dir))
	for _, f := range append([]string{"MCTrace.tla", "MCTrace.cfg"}, SpecFiles...) {
		_, err := os.Stat(filepath.Join(dir, f))
		assert.NoError(t, err, f)
	}
	assert.Error(t, ExportTLCFrom(twoBank(t), t.TempDir(), t.TempDir()), "no spec modules there")
}

// tlcJar is $TLA2TOOLS; TLC tests skip without it.
func tlcJar(t *testing.T) string {
	jar := os.Getenv("TLA2TOOLS")
	if jar == "" {
		t.Skip("TLA2TOOLS is unset: set it to the path of tla2tools.jar to run TLC trace validation (e.g. TLA2TOOLS=/opt/tla/tla2tools.jar)")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("TLA2TOOLS is set but java is not on PATH: %v", err)
	}
	return jar
}

func runTLC(t *testing.T, tr spec.Trace) TLCVerdict {
	t.Helper()
	jar := tlcJar(t)
	dir := t.TempDir()
	require.NoError(t, ExportTLC(tr, dir))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v, err := RunTLC(ctx, "java", jar, dir)
	require.NoError(t, err, "TLC output:\n%s", v.Output)
	for _, l := range strings.Split(v.Output, "\n") {
		if strings.Contains(l, "TraceAccepted") || strings.HasPrefix(l, "Error:") || strings.Contains(l, "Model checking completed") {
			t.Logf("TLC: %s", l)
		}
	}
	return v
}

// TLC accepts the traces of real Chandy-Lamport runs...
func TestTLCAcceptsGoodTraces(t *testing.T) {
	for name, mk := range map[string]func(*testing.T) spec.Trace{"twoBank": twoBank, "tokenRing": tokenRing} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := mk(t)
			v := runTLC(t, tr)
			assert.True(t, v.Accepted, "TLC output:\n%s", v.Output)
			assert.Equal(t, len(tr.Events), v.Consumed)
			assert.Empty(t, v.Errors)
		})
	}
}

// ...and rejects tampered ones, naming how far they matched.
func TestTLCRejectsTamperedTraces(t *testing.T) {
	cases := map[string]struct {
		mk       func(*testing.T) spec.Trace
		consumed int
	}{
		// P2's balance after receiving the $30 is $61, not $60.
		"balance": {func(t *testing.T) spec.Trace {
			tr := twoBank(t)
			tr.Events[4].After.Bal = 61
			return tr
		}, 4},
		// P2 receives the $30 before P1 sent it.
		"recv-before-send": {func(t *testing.T) spec.Trace {
			tr := twoBank(t)
			recv := tr.Events[4]
			tr.Events = append([]spec.Event{recv}, append(tr.Events[:4:4], tr.Events[5:]...)...)
			return tr
		}, 0},
		// A transfer overtakes the marker: the orphan run ($180).
		"non-fifo-orphan": {nonFIFO, 2},
		// A later marker claiming to be the first one.
		"first-flag": {func(t *testing.T) spec.Trace {
			tr := twoBank(t)
			tr.Events[6].First = true
			return tr
		}, 6},
		// More sends than the header's budget allows.
		"over-budget": {func(t *testing.T) spec.Trace {
			tr := twoBank(t)
			tr.Header.Budget = map[spec.ProcID]int{"P1": 0, "P2": 1}
			return tr
		}, 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := c.mk(t)
			v := runTLC(t, tr)
			assert.False(t, v.Accepted, "TLC output:\n%s", v.Output)
			// "...is violated." or, when not even the first event matches,
			// "...is violated by the initial state:".
			assert.True(t, strings.HasPrefix(strings.Join(v.Errors, "\n"), "Error: Invariant TraceMatched is violated"), "TLC output:\n%s", v.Output)
			assert.Equal(t, c.consumed, v.Consumed, "events matched before the first that does not")
			assert.Equal(t, len(tr.Events), v.Events)
		})
	}
}

// TLC decides every trace file in traces/ as the audit does (export
// --tlc and audit agree): a trace the audit accepts TLC accepts, and a
// reject (named PROPERTY-name, with the audit's property) TLC rejects by
// the trace invariant that checks PROPERTY (the reported snapshots and
// the drained claim included, not the events alone). A trace TLC trace
// validation cannot express, one with failure events or one of several
// incarnations, is refused by name, never exported as a run TLC would
// decide otherwise.
func TestTLCDecidesEveryTraceFile(t *testing.T) {
	tlcJar(t)
	paths, err := filepath.Glob(filepath.Join("..", "..", "traces", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		rel, err := filepath.Rel(filepath.Join("..", "..", "traces"), p)
		require.NoError(t, err)
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			var want spec.Property
			if dir := filepath.Dir(rel); dir != "conforms" {
				name, _, ok := strings.Cut(filepath.Base(rel), "-")
				require.True(t, ok, "%s: a reject's name starts with its property", rel)
				want = spec.Property(name)
			}
			rep, err := conformance.AuditFile(p, conformance.Options{})
			require.NoError(t, err)
			require.Equal(t, want, rep.Property(), "the audit's verdict on %s:\n%s", rel, rep)
			tr, _, err := conformance.ReadTraceFile(p)
			require.NoError(t, err)
			if _, _, err := TLCModel(tr); err != nil {
				assert.Regexp(t, `failure handling|incarnations \(restore 1: Restore\(\d+\) to incarnation 2`, err.Error(), "%s is refused, by name", rel)
				assert.True(t, len(tr.Restores) > 0 || slices.ContainsFunc(tr.Events, func(e spec.Event) bool { return e.Action.Fault() }),
					"%s is refused, but it has neither failure events nor restores: %v", rel, err)
				t.Logf("refused: %v", err)
				return
			}
			v := runTLC(t, tr)
			assert.Equal(t, want, v.Property(), "TLC output:\n%s", v.Output)
		})
	}
}

// TLC holds a trace's reported snapshot to the spec: a tampered report of
// a conforming run is rejected by the invariant of the property it breaks.
func TestTLCRejectsTamperedReports(t *testing.T) {
	tlcJar(t)
	read := func(t *testing.T) spec.Trace {
		f, err := os.Open(filepath.Join("..", "..", "traces", "conforms", "two-account-transfer.jsonl"))
		require.NoError(t, err)
		defer f.Close()
		tr, err := spec.ReadTrace(f)
		require.NoError(t, err)
		return tr
	}
	p1, p2 := spec.ProcID("P1"), spec.ProcID("P2")
	c12 := spec.Channel{From: p1, To: p2}
	cases := map[string]struct {
		tamper func(r *spec.RecordedSnapshot)
		want   spec.Property
	}{
		// $1 more in P1's recorded balance: the report holds $151.
		"balance": {func(r *spec.RecordedSnapshot) { l := r.Procs[p1]; l.Bal++; r.Procs[p1] = l }, spec.PropConservation},
		// P2 recorded one receive it had not made: not the spec's recProc.
		"rcvd": {func(r *spec.RecordedSnapshot) { l := r.Procs[p2]; l.Rcvd++; r.Procs[p2] = l }, spec.CheckRecordedState},
		// The $30 in flight moved out of the channel and into P2's balance,
		// with the cut seqs saying P2 got it: a consistent, conserving
		// report that is not the cut the spec recorded.
		"cut": {func(r *spec.RecordedSnapshot) {
			l := r.Procs[p2]
			l.Bal += 30
			r.Procs[p2] = l
			r.Chans[c12] = nil
			r.Cut[c12] = spec.ChanCut{Sent: 1, Got: 1}
		}, spec.PropConsistentCut},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := read(t)
			c.tamper(&tr.Recorded[0])
			v := runTLC(t, tr)
			assert.Equal(t, c.want, v.Property(), "TLC output:\n%s", v.Output)
		})
	}
}
