package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// TestReadCrashedNodeLog: a node log whose last line a kill cut short
// reads without it, and says so; a whole trace cut short, or a log whose
// last complete line is bad, is still an error.
func TestReadCrashedNodeLog(t *testing.T) {
	tr, _, err := ReadTraceFile(filepath.Join("..", "traces", "conforms", "crash-recovery.jsonl"))
	require.NoError(t, err)
	logs := nodeLogs(tr)
	dir := t.TempDir()
	write := func(name string, tr spec.Trace, tail string) string {
		var b bytes.Buffer
		require.NoError(t, spec.WriteTrace(&b, tr))
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, append(b.Bytes(), tail...), 0o644))
		return p
	}

	p := write("P1.jsonl", logs[0], `{"proc":"P1","seq":5,"act`)
	got, lines, cut, err := ReadCrashedNodeLog(p)
	require.NoError(t, err)
	assert.True(t, cut)
	assert.Equal(t, logs[0].Events, got.Events)
	assert.Len(t, lines.Events, len(logs[0].Events))

	p = write("P1-whole.jsonl", logs[0], "")
	_, _, cut, err = ReadCrashedNodeLog(p)
	require.NoError(t, err)
	assert.False(t, cut)

	p = write("whole.jsonl", tr, `{"proc":"P1","seq":5,"act`)
	_, _, cut, err = ReadCrashedNodeLog(p)
	assert.Error(t, err, "a whole run cut short is not a crashed node's log")
	assert.False(t, cut)

	p = write("P1-bad.jsonl", logs[0], `{"proc":"P1","seq":0}`+"\n")
	_, _, _, err = ReadCrashedNodeLog(p)
	assert.ErrorContains(t, err, "seq must be >= 1", "a complete bad line is an error")
}

// TestMergeCrashedIncarnation: when a crash lost steps of a node in an
// incarnation that a restore rolled back, the merge keeps the events
// whose causes the logs hold and says how many it dropped; the audit
// then judges what is left (here: snapshot 1 no longer complete).
func TestMergeCrashedIncarnation(t *testing.T) {
	tr, _, err := ReadTraceFile(filepath.Join("..", "traces", "conforms", "crash-recovery.jsonl"))
	require.NoError(t, err)
	logs := nodeLogs(tr)
	// logs: P1 and P2 of incarnation 1, then of incarnation 2. P2 lost
	// every step after its first (Initiate(1)): P1's receive of P2's $20
	// and everything after it at P1 lose their causes.
	require.Equal(t, spec.ProcID("P2"), logs[1].Events[0].Proc)
	logs[1].Events = logs[1].Events[:1]
	m, err := MergeNodeLogs(logs)
	require.NoError(t, err)
	assert.Contains(t, m.Header.Source, "; 2 events of incarnation 1 dropped, whose causes no log holds (a node crashed)")
	require.Len(t, m.Restores, 1)
	assert.Equal(t, 3, m.Restores[0].At, "P1's SendApp and RecvMarker, P2's Initiate")
	r := Audit(m, Options{})
	assert.Equal(t, spec.PropRecoveredFromComplete, r.Property(), "%s", r)

	// The last incarnation is never cut: its logs must hold every cause,
	// as a single run's must.
	logs = nodeLogs(tr)
	logs[3].Events = logs[3].Events[:1]
	_, err = MergeNodeLogs(logs)
	assert.ErrorContains(t, err, "merge of the incarnation restored from snapshot 1: merge: P1 step 3 (RecvMarker(P2, P1) [snap 2]) waits for events no log holds")
}
