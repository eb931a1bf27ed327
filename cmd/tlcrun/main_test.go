package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/tla"
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
	assert.Equal(t, tla.Measure{Distinct: 158, Generated: 285, Depth: 10, Version: "2026.11.29.154529"}, r.Measure)

	r, err = Parse(invOutput)
	require.NoError(t, err)
	assert.False(t, r.Completed)
	assert.Equal(t, spec.PropConservation, r.Violation)
	assert.EqualValues(t, 101, r.Distinct)

	r, err = Parse(temporalOutput)
	require.NoError(t, err)
	assert.Equal(t, spec.PropSnapshotsComplete, r.Violation)

	// TLC names a violated action property by its place; the refinement's
	// is SSpec's [][SNext]_svars in tla/ConsistentSnapshot.tla.
	r, err = Parse("Error: Action property line 109, col 19 to line 109, col 33 of module ConsistentSnapshot is violated.\n" +
		"108 states generated, 63 distinct states found, 29 states left on queue.\n")
	require.NoError(t, err)
	assert.Equal(t, spec.PropSnapshotRefinement, r.Violation)
	r, err = Parse("Error: Action property line 3, col 1 to line 3, col 9 of module Other is violated.\n" +
		"1 states generated, 1 distinct states found, 0 states left on queue.\n")
	require.NoError(t, err)
	assert.Equal(t, spec.Property("action property line 3, col 1 to line 3, col 9 of module Other"), r.Violation,
		"another action property is reported by its place, matching no manifest property")

	_, err = Parse("Error: Parsing or semantic analysis failed.\n")
	assert.ErrorContains(t, err, "states generated")
}

// A run stopped by -tlc-limit is read from its last progress line, in
// either of the forms TLC prints (with and without rates).
func TestParseProgress(t *testing.T) {
	out := "TLC2 Version 2026.11.30.201540\n" +
		"Progress(12) at 2026-12-01 00:01:02: 1,000 states generated, 400 distinct states found, 90 states left on queue.\n" +
		"Progress(17) at 2026-12-01 00:02:02: 2,345,678 states generated (1,000,000 s/min), 912,345 distinct states found (400,000 ds/min), 123,456 states left on queue.\n"
	r, err := ParseProgress(out)
	require.NoError(t, err)
	assert.Equal(t, tla.Measure{Distinct: 912_345, Generated: 2_345_678, Depth: 17, Version: "2026.11.30.201540"}, r.Measure)
	assert.EqualValues(t, 123_456, r.left)

	_, err = ParseProgress("TLC2 Version 2026.11.30.201540\nStarting...\n")
	assert.ErrorContains(t, err, "before its first progress line")
}

func TestCompare(t *testing.T) {
	pos := tla.Model{Name: "M", Kind: tla.Positive, TLC: tla.Measure{Distinct: 158, Generated: 285, Depth: 10}}
	r, _ := Parse(okOutput)
	assert.Empty(t, compare(pos, r))
	pos.TLC.Distinct = 157
	assert.Len(t, compare(pos, r), 1)
	// A positive model on which TLC stops early fails.
	r, _ = Parse(invOutput)
	pos.TLC = r.Measure
	pos.TLC.Violation = ""
	assert.Len(t, compare(pos, r), 2, "violated, and TLC did not complete")

	neg := tla.Model{Name: "N", Kind: tla.Negative, ExpectViolation: spec.PropConservation}
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

// copyTLA copies the manifest and the spec files into a scratch folder
// and returns the manifest's path there.
func copyTLA(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir("../../tla")
	require.NoError(t, err)
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext == ".tla" || ext == ".cfg" || ext == ".json" {
			b, err := os.ReadFile(filepath.Join("../../tla", e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
		}
	}
	return filepath.Join(dir, "manifest.json")
}

// -go-only runs the Go explorer without TLC, compares its counts with the
// manifest's go record, and with -update records them, leaving TLC's
// numbers and the spec hashes alone.
func TestGoOnly(t *testing.T) {
	path := copyTLA(t)
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-go-only", "-manifest", path, "-only", "MCTwoBank"}, &out, &errb), out.String()+errb.String())
	assert.Contains(t, out.String(), "go:  158 distinct, 285 generated, depth 10")
	assert.Contains(t, out.String(), "ok   MCTwoBank")

	man, err := tla.Load(path)
	require.NoError(t, err)
	want := *man
	man.Models[0].Go.Distinct = 1
	man.Models[0].Go.Version = "stale"
	require.NoError(t, tla.Write(path, man))
	out.Reset()
	assert.Equal(t, 1, run([]string{"-go-only", "-manifest", path, "-only", "MCTwoBank"}, &out, &errb))
	assert.Contains(t, out.String(), "FAIL MCTwoBank (go): counts differ from the manifest's record")

	out.Reset()
	require.Equal(t, 0, run([]string{"-go-only", "-update", "-manifest", path, "-only", "MCTwoBank"}, &out, &errb), out.String())
	got, err := tla.Load(path)
	require.NoError(t, err)
	assert.Equal(t, want.SpecSHA256, got.SpecSHA256)
	assert.Equal(t, want.Models[0].TLC, got.Models[0].TLC)
	assert.Equal(t, []int64{158, 285, 10}, []int64{got.Models[0].Go.Distinct, got.Models[0].Go.Generated, got.Models[0].Go.Depth})
	assert.Equal(t, runtime.Version(), got.Models[0].Go.Version)
	assert.Equal(t, want.Models[1:], got.Models[1:], "-only touches one model")
}

// A model marked large is skipped unless -large or -only asks for it,
// and the Go explorer checks it in fingerprint mode (same counts).
func TestLargeSkippedUnlessAsked(t *testing.T) {
	path := copyTLA(t)
	man, err := tla.Load(path)
	require.NoError(t, err)
	man.Models = man.Models[:2] // MCTwoBank, MCRing
	man.Models[1].Large = true
	require.NoError(t, tla.Write(path, man))
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-go-only", "-manifest", path}, &out, &errb), out.String()+errb.String())
	assert.Contains(t, out.String(), "ok   MCTwoBank")
	assert.Contains(t, out.String(), "skip MCRing: a large model (-large checks it)")

	out.Reset()
	require.Equal(t, 0, run([]string{"-go-only", "-large", "-manifest", path}, &out, &errb), out.String()+errb.String())
	assert.Contains(t, out.String(), "go:  89 distinct, 124 generated, depth 13")
	assert.Contains(t, out.String(), "ok   MCRing")
}

// A manifest that does not match the schema is bad input.
func TestBadManifest(t *testing.T) {
	path := copyTLA(t)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, bytes.Replace(raw, []byte(`"kind": "negative"`), []byte(`"kind": "neutral"`), 1), 0o644))
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run([]string{"-go-only", "-manifest", path}, &out, &errb))
	assert.Contains(t, errb.String(), "kind")
	assert.Empty(t, out.String())
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

// -h prints the flags to stdout and exits 0; a bad flag or argument is a
// usage error (exit 2, on stderr).
func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errb))
	assert.Contains(t, out.String(), "-go-only")
	assert.Empty(t, errb.String())

	out.Reset()
	assert.Equal(t, 2, run([]string{"-teleport"}, &out, &errb))
	assert.Contains(t, errb.String(), "tlcrun: flag provided but not defined: -teleport")
	assert.Empty(t, out.String())

	errb.Reset()
	assert.Equal(t, 2, run([]string{"-go-only", "MCRing"}, &out, &errb))
	assert.Contains(t, errb.String(), `tlcrun: unexpected argument "MCRing"`)
}

// -only names a model of the manifest.
func TestOnlyUnknownModel(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run([]string{"-go-only", "-manifest", "../../tla/manifest.json", "-only", "MCNope"}, &out, &errb))
	assert.Contains(t, errb.String(), "-only MCNope: ../../tla/manifest.json has no such model")
	assert.Empty(t, out.String())
}
