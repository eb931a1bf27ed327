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

// TestSinkAuditManyRecords: a trace naming more than the model's 64
// keys is replayed in parts, and a record committed twice among them is
// still caught, by name.
func TestSinkAuditManyRecords(t *testing.T) {
	var recs []spec.BarrierRecord
	for i := 1; i <= 150; i++ {
		recs = append(recs, spec.BarrierRecord{Src: "S1", I: i})
	}
	txn := func(i, ck int, rs []spec.BarrierRecord) *spec.SinkTxn {
		return &spec.SinkTxn{Txn: i, Ckpt: ck, Recs: rs}
	}
	tr := &spec.SinkTrace{Header: spec.SinkHeader{Format: spec.SinkTraceFormat, MaxCkpt: 2, Drained: true}, Events: []spec.SinkEvent{
		{Action: spec.SinkPreCommit, Ckpt: 1, Txn: txn(1, 1, recs[:100])},
		{Action: spec.SinkComplete, Ckpt: 1},
		{Action: spec.SinkCommit, Txn: txn(1, 1, recs[:100])},
		{Action: spec.SinkPreCommit, Ckpt: 2, Txn: txn(2, 2, recs[100:])},
		{Action: spec.SinkComplete, Ckpt: 2},
		{Action: spec.SinkCommit, Txn: txn(2, 2, recs[100:])},
	}}
	r := AuditSink(tr, Options{})
	require.True(t, r.OK(), "%s", r)
	assert.Equal(t, 6, r.Steps)
	// The second transaction also claims record 70 (in the second part).
	tr.Events[3].Txn.Recs = append(tr.Events[3].Txn.Recs, recs[69])
	tr.Events[5].Txn.Recs = tr.Events[3].Txn.Recs
	r = AuditSink(tr, Options{})
	assert.Equal(t, spec.PropNoDuplicateOutput, r.Property(), "%s", r)
	// A drained run that never commits its last complete checkpoint.
	tr.Events = tr.Events[:5]
	tr.Events[3].Txn.Recs = recs[100:]
	r = AuditSink(tr, Options{})
	assert.Equal(t, spec.PropCompleteCommitted, r.Property(), "%s", r)
}

// TestReadSinkTraceErrors: bad sink traces are refused naming the line
// and what is wrong.
func TestReadSinkTraceErrors(t *testing.T) {
	const h = `{"format":"markerwave-sink-trace/1","max_ckpt":2,"max_restores":1,"max_aborts":0}` + "\n"
	for in, want := range map[string]string{
		"":                            "empty, no header line",
		`{"format":"x","max_ckpt":1}`: `trace line 1: header: format "x"`,
		`{"format":"markerwave-sink-trace/1","max_ckpt":0}`:            "max_ckpt 0",
		h + `{"action":"Take"}`:                                        `trace line 2: action "Take"`,
		h + `{"action":"Commit"}`:                                      "trace line 2: Commit: txn missing",
		h + `{"action":"Complete","ckpt":1,"txn":{"txn":1}}`:           "Complete: txn not allowed",
		h + `{"action":"PreCommit","txn":{"txn":1,"ckpt":1}}`:          "PreCommit: ckpt missing",
		h + `{"action":"PreCommit","ckpt":2,"txn":{"txn":1,"ckpt":1}}`: "txn's ckpt 1 is not the event's 2",
		h + `{"action":"Commit","txn":{"txn":0}}`:                      "txn from 1",
		h + `{"action":"Complete","ckpt":1,"extra":1}`:                 "extra",
	} {
		_, err := spec.ReadSinkTrace(bytes.NewReader([]byte(in)))
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want, in)
		}
	}
}
