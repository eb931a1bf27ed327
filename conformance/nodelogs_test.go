package conformance

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// nodeLogs splits tr into the per-node logs the runtime would write: one
// per process and incarnation, a restored incarnation's logs naming the
// snapshot it was restored from.
func nodeLogs(tr spec.Trace) []spec.Trace {
	var logs []spec.Trace
	for k, seg := range tr.Segments() {
		for _, p := range tr.Header.Topology.Procs {
			h := tr.Header
			h.Source = "node " + string(p)
			if k > 0 {
				h.RestoredFrom = tr.Restores[k-1].Snap
			}
			l := spec.Trace{Header: h}
			for _, e := range seg {
				if e.Proc == p {
					l.Events = append(l.Events, e)
				}
			}
			logs = append(logs, l)
		}
	}
	return logs
}

func TestNodeLogsMergeBack(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "traces", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		tr, _, err := ReadTraceFile(path)
		require.NoError(t, err, path)
		require.NoError(t, Incomplete(tr), path)
		_, ok := NodeLog(tr)
		assert.False(t, ok, "%s: a whole run with recorded snapshots is no node log", path)

		logs := nodeLogs(tr)
		m, err := MergeNodeLogs(logs)
		require.NoError(t, err, path)
		assert.ElementsMatch(t, tr.Events, m.Events, path)
		assert.Equal(t, len(tr.Restores), len(m.Restores), path)
		for i, r := range tr.Restores {
			assert.Equal(t, r.Snap, m.Restores[i].Snap, path)
			assert.Equal(t, r.Incarnation, m.Restores[i].Incarnation, path)
			assert.ElementsMatch(t, tr.Segments()[i+1], m.Segments()[i+1], "%s: incarnation %d", path, r.Incarnation)
		}
		if len(tr.Restores) > 0 { // its verdict does not rest on the recorded lines, which logs lack
			assert.Equal(t, Audit(tr, Options{}).Property(), Audit(m, Options{Drained: tr.Header.Drained}).Property(), "%s: the merged logs get the trace's verdict", path)
		}
		assert.NoError(t, Incomplete(m), path)
		want := fmt.Sprintf("%d node logs merged in causal order", len(logs))
		if len(tr.Restores) > 0 {
			want += fmt.Sprintf(", %d incarnations", len(tr.Restores)+1)
		}
		assert.Equal(t, want, m.Header.Source)

		// A log that receives lacks the send: incomplete.
		for _, l := range logs {
			p, ok := NodeLog(l)
			require.True(t, ok, path)
			receives := false
			for _, e := range l.Events {
				assert.Equal(t, p, e.Proc)
				receives = receives || e.Action == spec.RecvApp || e.Action == spec.RecvMarker
			}
			if err := Incomplete(l); receives {
				require.Error(t, err, "%s: log of %s", path, p)
				assert.Regexp(t, `^event \d+, .* at `+string(p)+`, follows step \d+ of P\d, but the trace holds 0 events of P\d \(it lacks steps of P\d( and P\d)?\)$`, err.Error())
			} else {
				assert.NoError(t, err, "%s: log of %s", path, p)
			}
		}
	}
}

func TestMergeNodeLogsRefuses(t *testing.T) {
	tr, _, err := ReadTraceFile(filepath.Join("..", "traces", "conforms", "puzzle.jsonl"))
	require.NoError(t, err)
	logs := nodeLogs(tr)
	other := logs[1]
	other.Header.InitBal = map[spec.ProcID]int64{"P1": 1, "P2": 1}
	for name, tc := range map[string]struct {
		logs []spec.Trace
		want string
	}{
		"none":         {nil, "merge: no logs"},
		"a whole run":  {[]spec.Trace{logs[0], tr}, "merge: log 2 is not one node's log"},
		"another run":  {[]spec.Trace{logs[0], other}, "merge: log 2 has another topology, initial balances or budget than log 1"},
		"twice a node": {[]spec.Trace{logs[0], logs[0]}, "merge: two logs of P1"},
		"a node short": {logs[:1], "merge: P1 step"},
	} {
		_, err := MergeNodeLogs(tc.logs)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
}
