package conformance

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/spec"
)

// TestBarrierTraceAudit runs the dataflow core on random DAGs and cyclic
// graphs, both protocols, with a tracer: random emits, injects and
// hand-overs, then every source injects and the run drains, restored
// from its complete snapshot half the time and drained again. The trace
// it writes must conform under the audit (what markerwave audit runs):
// every step an enabled action of model/barrier with the same effect,
// and every barrier property holding. A failing run's trace is written
// to FailDir, the file the failure names ("barrier trace written to
// PATH"): markerwave audit on it shows the failure.
func TestBarrierTraceAudit(t *testing.T) {
	seen := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		bg := drawBarrierGraph(t, rapid.Bool().Draw(t, "cyclic"))
		g := bg.g
		var b bytes.Buffer
		tr, err := dataflow.NewTracer(&b, g, spec.BarrierHeader{Drained: true, Source: "conformance TestBarrierTraceAudit"})
		if err != nil {
			t.Fatal(err)
		}
		c := dataflow.NewCluster(g, nil)
		tr.Attach(c)
		takeAny := func(e int) bool {
			_, err := c.Take(e, dataflow.ActProcess)
			if errors.Is(err, dataflow.ErrNotRecord) {
				_, err = c.Take(e, dataflow.ActRecvBarrier)
			}
			return err == nil
		}
		drain := func() { c.RunOut(takeAny) }
		for range rapid.IntRange(0, 40).Draw(t, "steps") {
			n := c.Nodes[rapid.IntRange(0, len(c.Nodes)-1).Draw(t, "node")]
			switch rapid.IntRange(0, 4).Draw(t, "what") {
			case 0:
				_, _ = n.Emit() // a refused step changes nothing
			case 1:
				if rapid.IntRange(0, 3).Draw(t, "inject") == 0 {
					_, _ = n.Inject()
				}
			default:
				takeAny(rapid.IntRange(0, len(g.Edges)-1).Draw(t, "edge"))
			}
		}
		for _, n := range c.Nodes {
			_, _ = n.Inject()
		}
		drain()
		if rapid.Bool().Draw(t, "restore") {
			snap, err := c.Snapshot()
			if err != nil {
				t.Fatalf("the drained run's snapshot: %v", err)
			}
			if c, err = dataflow.RestoreCluster(g, snap, nil); err != nil {
				t.Fatalf("restore: %v", err)
			}
			tr.Restore(c)
			seen["restore"]++
			drain()
		}
		if err := tr.Flush(); err != nil {
			t.Fatal(err)
		}
		trace, err := spec.ReadBarrierTrace(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("the trace the core wrote does not read: %v", err)
		}
		for _, ev := range trace.Events {
			if ev.Logged {
				seen["logged"]++
			}
			if ev.Part != nil && len(ev.Part.Overtaken) > 0 {
				seen["overtaken"]++
			}
		}
		if rep := AuditBarrier(trace, Options{}); !rep.OK() {
			p := filepath.Join(FailDir(), "barrier-trace-audit.jsonl")
			err := os.MkdirAll(FailDir(), 0o755)
			if err == nil {
				err = os.WriteFile(p, b.Bytes(), 0o644)
			}
			if err != nil {
				t.Fatalf("the audit rejects the core's trace (it could not be written: %v):\n%s", err, rep)
			}
			t.Fatalf("the audit rejects the core's trace; barrier trace written to %s\n%s", p, rep)
		}
	})
	for _, k := range []string{"restore", "logged", "overtaken"} {
		if seen[k] == 0 {
			t.Errorf("the runs never exercised %q", k)
		}
	}
}
