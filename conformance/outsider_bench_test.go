package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/markerwave/markerwave/spec"
)

// benchOutsiderTraces are the traces BenchmarkAuditOutsider audits as
// stripped outsider logs: $MARKERWAVE_OUTSIDER_BENCH (comma-separated
// trace files, such as the demo's out/demo-*/trace.jsonl), else the
// conforming traces of traces/ with the most events.
func benchOutsiderTraces(b *testing.B) []string {
	if env := os.Getenv("MARKERWAVE_OUTSIDER_BENCH"); env != "" {
		return strings.Split(env, ",")
	}
	return []string{filepath.Join("..", "traces", "conforms", "concurrent-snapshots.jsonl"), filepath.Join("..", "traces", "conforms", "kill9-abort-real-run.jsonl")}
}

// BenchmarkAuditOutsider audits each trace converted to an outsider log
// with every optional field removed (read, derive, replay), and reports
// events/s. With $MARKERWAVE_OUTSIDER_DERIVED set to a directory it
// writes there each derived trace (markerwave-trace/3), for `markerwave
// export --tlc --run-tlc` to validate the same partial trace with TLC
// (docs/conformance.md, "Partial traces against TLC").
func BenchmarkAuditOutsider(b *testing.B) {
	for _, p := range benchOutsiderTraces(b) {
		tr, _, err := ReadTraceFile(p)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := spec.WriteOutsider(&buf, ToOutsider(tr, true)); err != nil {
			b.Fatal(err)
		}
		in := buf.Bytes()
		name := strings.TrimSuffix(filepath.Base(filepath.Dir(p))+"-"+filepath.Base(p), ".jsonl")
		b.Run(name, func(b *testing.B) {
			var rep OutsiderReport
			for b.Loop() {
				rep = auditOutsiderBytes(b, in)
			}
			if !rep.OK() {
				b.Fatalf("%s does not conform:\n%s", p, rep.String())
			}
			b.ReportMetric(float64(len(tr.Events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			writeDerived(b, name, rep.Derived.TraceFile())
		})
	}
}

// auditOutsiderBytes reads and audits one outsider log.
func auditOutsiderBytes(b *testing.B, in []byte) OutsiderReport {
	l, err := spec.ReadOutsider(bytes.NewReader(in))
	if err != nil {
		b.Fatal(err)
	}
	run, err := NewOutsiderRun([]spec.OutsiderLog{l}, nil)
	if err != nil {
		b.Fatal(err)
	}
	rep, err := AuditOutsider(run, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return rep
}

// writeDerived writes derived trace tr as NAME.jsonl under
// $MARKERWAVE_OUTSIDER_DERIVED, if set.
func writeDerived(b *testing.B, name string, tr spec.Trace) {
	dir := os.Getenv("MARKERWAVE_OUTSIDER_DERIVED")
	if dir == "" {
		return
	}
	if err := spec.WriteTraceFile(filepath.Join(dir, name+".jsonl"), tr); err != nil {
		b.Fatal(err)
	}
}
