package conformance

import (
	"bytes"
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
//
// The runs on fixed inputs (checkCovering) restore, log records in the
// snapshot's channel state, and persist records an unaligned barrier
// overtook.
func TestBarrierTraceAudit(t *testing.T) {
	checkCovering(t, barrierSeeds, barrierTraceAudit, "restore", "logged", "overtaken", "timeout", "output timeout")
}

// barrierTraceAudit is one run of TestBarrierTraceAudit, a third of
// them in the adaptive mode (random force-aligned edges, random
// timeouts, audited against SpecAdaptive); seen counts the restores,
// the logged records, the overtaken ones and the timeouts. A rejected
// trace is written to barrier-trace-audit.jsonl, or on fixed input
// seed=N to barrier-trace-audit-seed=N.jsonl.
func barrierTraceAudit(t *rapid.T, seen map[string]int, input string) {
	bg := drawBarrierGraph(t, rapid.Bool().Draw(t, "cyclic"), rapid.IntRange(0, 2).Draw(t, "adaptive") == 0)
	g := bg.g
	var b bytes.Buffer
	tr, err := dataflow.NewTracer(&b, g, spec.BarrierHeader{Drained: true, Source: "conformance TestBarrierTraceAudit"})
	if err != nil {
		t.Fatal(err)
	}
	c := dataflow.NewCluster(g, nil)
	tr.Attach(c)
	for range rapid.IntRange(0, 40).Draw(t, "steps") {
		n := c.Nodes[rapid.IntRange(0, len(c.Nodes)-1).Draw(t, "node")]
		switch rapid.IntRange(0, 5).Draw(t, "what") {
		case 0:
			_, _ = n.Emit() // a refused step changes nothing
		case 5:
			if _, err := n.Timeout(); err == nil {
				seen["timeout"]++
			}
		case 1:
			if rapid.IntRange(0, 3).Draw(t, "inject") == 0 {
				_, _ = n.Inject()
			}
		default:
			_, _ = c.TakeAny(rapid.IntRange(0, len(g.Edges)-1).Draw(t, "edge")) // a refused step changes nothing
		}
	}
	for _, n := range c.Nodes {
		_, _ = n.Inject()
	}
	if g.Mode == dataflow.Adaptive {
		drainTimingOut(t, c, seen)
	}
	c.Drain()
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
		c.Drain()
	}
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	trace, err := spec.ReadBarrierTrace(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("the trace the core wrote does not read: %v", err)
	}
	countLogged(trace, seen)
	if rep := AuditBarrier(trace, Options{}); !rep.OK() {
		rejected(t, b.Bytes(), input, rep)
	}
}

// countLogged counts in seen the trace's events that log a record in
// the snapshot's channel state ("logged") and the parts that persist
// records an unaligned barrier overtook ("overtaken").
func countLogged(trace *spec.BarrierTrace, seen map[string]int) {
	for _, ev := range trace.Events {
		if ev.Logged {
			seen["logged"]++
		}
		if ev.Part != nil && len(ev.Part.Overtaken) > 0 {
			seen["overtaken"]++
		}
	}
}

// rejected fails the run whose trace the audit rejected, writing the
// trace to FailDir (named for the fixed input, if any) and naming it.
func rejected(t *rapid.T, trace []byte, input string, rep Report) {
	name := "barrier-trace-audit"
	if input != "" {
		name += "-" + input
	}
	p := filepath.Join(FailDir(), name+".jsonl")
	err := os.MkdirAll(FailDir(), 0o755)
	if err == nil {
		err = os.WriteFile(p, trace, 0o644)
	}
	if err != nil {
		t.Fatalf("the audit rejects the core's trace (it could not be written: %v):\n%s", err, rep)
	}
	t.Fatalf("the audit rejects the core's trace; barrier trace written to %s\n%s", p, rep)
}

// drainTimingOut drains c as Drain does, but before each hand-over a
// node that is aligning may time out (drawn), and the sender whose
// barrier waits behind records in its output buffer may time out there
// (TimeoutOut, drawn), as a runtime's timer would have it.
func drainTimingOut(t *rapid.T, c *dataflow.Cluster, seen map[string]int) {
	c.RunOut(func(e int) bool {
		to := c.Nodes[c.G.Edges[e].To]
		if to.Blocked() && rapid.Bool().Draw(t, "time out") {
			if _, err := to.Timeout(); err == nil {
				seen["timeout"]++
			}
		}
		if from := c.Nodes[c.G.Edges[e].From]; from.CanTimeoutOut() == nil && rapid.Bool().Draw(t, "time out in the output") {
			_, _ = from.TimeoutOut()
			seen["output timeout"]++
		}
		_, err := c.TakeAny(e)
		return err == nil
	})
}
