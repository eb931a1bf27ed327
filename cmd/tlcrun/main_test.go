package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/markerwave/markerwave/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const okOutput = `TLC2 Version 2026.11.29.154529 (rev: cc6b616)
Progress(10) at 2026-11-29 15:50:09: 285 states generated, 158 distinct states found, 0 states left on queue.
Model checking completed. No error has been found.
285 states generated, 158 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 10.
Finished in 01s at (2026-11-29 15:50:09)
`

const invOutput = `Error: Invariant Conservation is violated.
Error: The behavior up to this point is:
167 states generated, 101 distinct states found, 29 states left on queue.
The depth of the complete state graph search is 7.
`

const temporalOutput = `Error: Temporal property SnapshotsComplete was violated.
Error: The following behavior constitutes a counter-example:
60 states generated, 48 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 11.
`

func TestParse(t *testing.T) {
	r, err := Parse(okOutput)
	require.NoError(t, err)
	assert.True(t, r.Completed)
	assert.Equal(t, Measure{Distinct: 158, Generated: 285, Depth: 10, Version: "2026.11.29.154529"}, r.Measure)

	r, err = Parse(invOutput)
	require.NoError(t, err)
	assert.False(t, r.Completed)
	assert.Equal(t, spec.PropConservation, r.Violation)
	assert.EqualValues(t, 101, r.Distinct)

	r, err = Parse(temporalOutput)
	require.NoError(t, err)
	assert.Equal(t, spec.PropSnapshotsComplete, r.Violation)

	_, err = Parse("Error: Parsing or semantic analysis failed.\n")
	assert.ErrorContains(t, err, "states generated")
}

func TestCompare(t *testing.T) {
	pos := Model{Name: "M", Kind: "positive", TLC: Measure{Distinct: 158, Generated: 285, Depth: 10}}
	r, _ := Parse(okOutput)
	assert.Empty(t, compare(pos, r))
	pos.TLC.Distinct = 157
	assert.Len(t, compare(pos, r), 1)

	neg := Model{Name: "N", Kind: "negative", ExpectViolation: spec.PropConservation}
	r, _ = Parse(invOutput)
	assert.Empty(t, compare(neg, r))
	neg.ExpectViolation = spec.PropConsistentCut
	assert.Len(t, compare(neg, r), 1)
	// A negative model on which TLC finds nothing fails.
	r, _ = Parse(okOutput)
	assert.Len(t, compare(neg, r), 1)
}

func TestMissingTLCSaysSo(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-jar", ""}, &out, &errb)
	assert.Equal(t, 2, code)
	assert.Contains(t, errb.String(), "TLC is missing")
	code = run([]string{"-jar", filepath.Join(t.TempDir(), "nope.jar")}, &out, &errb)
	assert.Equal(t, 2, code)
}

func TestManifestIsWellFormed(t *testing.T) {
	raw, err := os.ReadFile("../../tla/manifest.json")
	require.NoError(t, err)
	var man Manifest
	dec := jsonStrict(raw)
	require.NoError(t, dec.Decode(&man))
	require.NotEmpty(t, man.Models)
	kinds := map[string]int{}
	for _, m := range man.Models {
		kinds[m.Kind]++
		_, err := os.Stat(filepath.Join("../../tla", m.Cfg))
		assert.NoError(t, err, m.Name)
		assert.NotEmpty(t, m.Demonstrates, m.Name)
		if m.Kind == "negative" {
			assert.NotEmpty(t, m.ExpectViolation, m.Name)
		} else {
			assert.Positive(t, m.TLC.Distinct, m.Name)
		}
	}
	hashes, err := SpecHashes("../../tla")
	require.NoError(t, err)
	assert.Empty(t, man.StaleFiles(hashes), "tla/ changed since TLC's numbers were recorded: run make tlc with -update (go run ./cmd/tlcrun -jar $TLA2TOOLS -update)")
	assert.GreaterOrEqual(t, kinds["positive"], 4)
	assert.GreaterOrEqual(t, kinds["negative"], 3)
}

func TestProgressWriterKeepsEverythingAndEchoesProgress(t *testing.T) {
	var log bytes.Buffer
	w := &progressWriter{log: &log}
	for _, chunk := range []string{"TLC2 Version x\nProg", "ress(3) at t: 5 states generated\n", okOutput} {
		_, err := w.Write([]byte(chunk))
		require.NoError(t, err)
	}
	r, err := Parse(w.buf.String())
	require.NoError(t, err)
	assert.EqualValues(t, 158, r.Distinct)
	assert.Equal(t, "   Progress(3) at t: 5 states generated\n   Progress(10) at 2026-11-29 15:50:09: 285 states generated, 158 distinct states found, 0 states left on queue.\n", log.String())
}
