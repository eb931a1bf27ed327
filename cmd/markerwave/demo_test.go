package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// The demo's merged trace is self-contained and auditable: drained, with
// every collected snapshot as a recorded line, and it conforms.
func TestDemoTraceAudits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo over loopback TCP")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := dispatch([]string{"demo", "--nodes", "4", "--transfers", "400", "--seed", "7", "--out", dir}, &out, &errb)
	require.Equal(t, 0, code, out.String()+errb.String())
	path := filepath.Join(dir, "trace.jsonl")
	f, err := os.Open(path)
	require.NoError(t, err)
	tr, err := spec.ReadTrace(f)
	f.Close()
	require.NoError(t, err)
	assert.True(t, tr.Header.Drained)
	assert.Len(t, tr.Recorded, len(tr.Header.Snaps), "one recorded line per snapshot started")
	code, aout, aerr := audit(path)
	assert.Equal(t, 0, code, aout+aerr)
	assert.True(t, strings.HasPrefix(aout, "conforms: "), aout)
	assert.Contains(t, aout, "7 snapshots")
}

// A second run into the same folder is refused up front, not half-run.
func TestDemoRefusesAUsedFolder(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte("{}\n"), 0o644))
	var out, errb bytes.Buffer
	code := dispatch([]string{"demo", "--out", dir}, &out, &errb)
	assert.Equal(t, 2, code)
	assert.Contains(t, errb.String(), "already holds a run")
	assert.Empty(t, out.String())
}
