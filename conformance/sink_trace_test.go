package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/spec"
)

// sinkRejects are the bundled sink traces written from the negative
// models of tla/BarrierSink.tla: each the sink's part of the shortest
// counterexample the explorer finds, named for the property the audit
// (against SpecSink) names.
var sinkRejects = []struct{ model, file string }{
	{"MCBarrierSinkArrival", "CommittedOnlyComplete-commit-at-arrival.jsonl"},
	{"MCBarrierSinkNoAbort", "ExactlyOnceOutput-no-abort-on-restore.jsonl"},
	{"MCBarrierSinkSilent", "ExactlyOnceOutput-silent-loss.jsonl"},
	{"MCBarrierSinkForget", "ExactlyOnceOutput-forget-complete-on-restore.jsonl"},
}

// TestSinkRejectsUpToDate writes each negative model's counterexample as
// a sink trace and checks it is the bundled one (-update rewrites them)
// and that the audit names the property its file does.
func TestSinkRejectsUpToDate(t *testing.T) {
	for _, r := range sinkRejects {
		t.Run(r.model, func(t *testing.T) {
			cfg, err := barrier.LoadSink(filepath.Join("..", "tla", r.model+".cfg"))
			require.NoError(t, err)
			res, err := barrier.SinkExplore(cfg, engine.Options{})
			require.NoError(t, err)
			require.NotNil(t, res.Violation, "%s: no counterexample", r.model)
			tr := SinkTraceOf(cfg, res.Violation.Trace)
			tr.Header.Source = "the shortest counterexample of tla/" + r.model + ".cfg (" + string(cfg.Variant) + "), the sink's steps"
			var b bytes.Buffer
			require.NoError(t, spec.WriteSinkTrace(&b, tr))
			p := filepath.Join(tracesDir, "sink", "rejects", r.file)
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
			}
			got, err := os.ReadFile(p)
			require.NoError(t, err, "run go test ./conformance -run TestSinkRejectsUpToDate -update")
			assert.Equal(t, b.String(), string(got), "%s is stale: run go test ./conformance -run TestSinkRejectsUpToDate -update", p)
			rep := AuditSink(tr, Options{})
			want, err := WantFromPath(filepath.Join("sink", "rejects", r.file))
			require.NoError(t, err)
			assert.Equal(t, want, rep.Property(), "%s", rep)
		})
	}
}
