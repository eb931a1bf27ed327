package sinkdb

import (
	"bytes"
	"flag"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite traces/sink/conforms from the Driver's runs")

// traceRuns are the runs of the Driver over SQLite whose sink traces are
// bundled in traces/sink/conforms (conformance's TestTraces audits
// them): each a sequence of the Driver's calls, crashes and the store's
// own aborts.
var traceRuns = map[string]func(r *sinkRun){
	// A restore: snapshot 2 pre-committed and never complete, the open
	// transaction holding snapshot 3's records; both aborted, replayed.
	"restore-aborts-incomplete": func(r *sinkRun) {
		r.take(1, 2)
		require.NoError(r.t, r.d.Barrier(1))
		r.completeAndSettle(1)
		r.take(3, 4)
		require.NoError(r.t, r.d.Barrier(2))
		r.take(5, 6)
		r.crash(1)
		r.take(3, 6)
		require.NoError(r.t, r.d.Finish())
	},
	// A crash after snapshot 1 completed, before its commit: the
	// restore commits it.
	"restore-commits-complete": func(r *sinkRun) {
		r.take(1, 3)
		require.NoError(r.t, r.d.Barrier(1))
		r.crash(1)
		r.take(4, 5)
		require.NoError(r.t, r.d.Finish())
	},
	// The store aborts snapshot 1's pre-committed transaction: the commit
	// finds it gone and reports the loss; it aborts snapshot 2's too, and
	// the restore after a crash finds it gone and reports it.
	"store-abort-reported": func(r *sinkRun) {
		r.take(1, 2)
		require.NoError(r.t, r.d.Barrier(1))
		r.s.storeAbort(r.t, 1)
		r.completeAndSettle(1)
		r.take(3, 4)
		require.NoError(r.t, r.d.Barrier(2))
		r.s.storeAbort(r.t, 2)
		r.crash(1, 2)
		r.take(5, 6)
		require.NoError(r.t, r.d.Finish())
	},
}

// TestTraceBundled runs each of traceRuns over SQLite with a Trace and
// checks it writes the bundled trace (-update rewrites them).
func TestTraceBundled(t *testing.T) {
	for name, run := range traceRuns {
		t.Run(name, func(t *testing.T) {
			tr := sink.NewTrace([]string{"S1"})
			r := newTracedRun(t, func(t *testing.T) store {
				return openSQLiteStore(t, filepath.Join(t.TempDir(), "out.db"))
			}, tr)
			run(r)
			var b bytes.Buffer
			require.NoError(t, tr.Write(&b, true))
			p := filepath.Join("..", "..", "..", "..", "traces", "sink", "conforms", name+".jsonl")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
			}
			got, err := os.ReadFile(p)
			require.NoError(t, err, "run go test ./impl/dataflow/sink/sinkdb -run TestTraceBundled -update")
			assert.Equal(t, b.String(), string(got), "%s is stale: run go test ./impl/dataflow/sink/sinkdb -run TestTraceBundled -update", p)
		})
	}
}
