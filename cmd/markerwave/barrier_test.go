package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markerwave audit recognises a barrier trace: a conforming one exits 0,
// a rejected one 1 with its divergence and property, a malformed one 2
// naming the line.
func TestAuditBarrierTraces(t *testing.T) {
	code, out, errs := audit("../../traces/barrier/conforms/unaligned-restore.jsonl")
	assert.Equal(t, exitOK, code, errs)
	assert.Equal(t, "conforms: 20 steps, 1 snapshot, all properties hold\n", out)

	code, out, _ = audit("../../traces/barrier/rejects/BarrierConsistentCut-no-blocking.jsonl")
	assert.Equal(t, exitFail, code)
	for _, want := range []string{
		`diverges at step 6 (trace line 7): ProcessV(e = <<"S1", "X">>, block = TRUE, log = TRUE)`,
		"check:    Enabled",
		"violates BarrierConsistentCut: ",
		"violates BarrierExactlyOnce: the sink received <<S1, 2>> twice",
		"property: BarrierConsistentCut",
	} {
		assert.Contains(t, out, want)
	}

	code, out, _ = audit("--json", "../../traces/barrier/rejects/BarrierExactChannelState-overtaken-not-persisted.jsonl")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, out, `"property":"BarrierExactChannelState"`)
	assert.Contains(t, out, `"check":"RecordedState"`)

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	b, err := os.ReadFile("../../traces/barrier/conforms/aligned-dag.jsonl")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bad, append(b, []byte(`{"action":"Process","node":"X","from":"K","to":"X","rec":{"src":"S1","i":1,"seq":1}}`+"\n")...), 0o644))
	code, _, errs = audit(bad)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "line 19: Process: the graph has no edge K->X")
}

// markerwave export draws a barrier trace's diagram, and refuses the
// exports a barrier trace does not have.
func TestExportBarrierDiagram(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "d.svg")
	code, out, errs := exportCmd("--diagram", svg, "../../traces/barrier/conforms/unaligned-dag.jsonl")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "wrote "+svg+": columns 1..9 of 9 (Lamport time)")
	assert.Contains(t, out, "channel state: 1 record logged by receivers, 3 records overtaken and persisted by senders; 0 restores")
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(b), `data-cat="overtaken"`)

	code, _, errs = exportCmd("--shiviz", filepath.Join(dir, "s.log"), "../../traces/barrier/conforms/unaligned-dag.jsonl")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "is a barrier trace: it has a --diagram only")
}
