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
	code := runDemo([]string{"--nodes", "4", "--transfers", "400", "--seed", "7", "--out", dir}, &out, &errb)
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
	code := runDemo([]string{"--out", dir}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "markerwave demo: --out "+dir+" already holds a run (1 entry); a run never overwrites another's snapshots: remove it or choose another folder\n", errb.String())
	assert.Empty(t, out.String())
}

func TestDemoHelp(t *testing.T) {
	for _, h := range []string{"-h", "--help"} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitOK, runDemo([]string{h}, &out, &errb))
		assert.True(t, strings.HasPrefix(out.String(), "usage: markerwave demo [flags]\n"), out.String())
		for _, f := range []string{"-nodes int", "-transfers int", "-seed uint", "-out folder", "-balance int", "-timeout duration", "(default 5)", "(default 3000)"} {
			assert.Contains(t, out.String(), f)
		}
		assert.Empty(t, errb.String())
	}
}

func TestDemoUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--nodes", "1"}, "--nodes 1: want 2..32"},
		{[]string{"--nodes", "33"}, "--nodes 33: want 2..32"},
		{[]string{"--transfers", "-1"}, "--transfers -1: want 0..10000000"},
		{[]string{"--balance", "0"}, "--balance 0: want 1..1099511627776"},
		{[]string{"--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"--nodes", "many"}, `invalid value "many" for flag -nodes: parse error`},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitUsage, runDemo(tc.args, &out, &errb), tc.args)
		assert.Empty(t, out.String())
		assert.Equal(t, "markerwave demo: "+tc.want+"\nrun 'markerwave demo --help' for usage\n", errb.String())
	}
}
