package conformance

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

var update = flag.Bool("update", false, "rewrite traces/ from Scenarios()")

const tracesDir = "../traces"

// TestScenarios replays every article scenario and checks its verdict.
func TestScenarios(t *testing.T) {
	scs, err := Scenarios()
	require.NoError(t, err)
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			r := Replay(sc.Trace, Options{})
			skipped := ""
			if len(sc.Skipped) > 0 {
				skipped = "\nthe implementation did not take scheduled deliveries:\n  " + strings.Join(sc.Skipped, "\n  ")
			}
			if got := r.Property(); got != sc.Want {
				t.Errorf("scenario %s: want %s, got %s%s\n%s", sc.Name, verdict(sc.Want), verdict(got), skipped, r)
			} else if skipped != "" {
				t.Errorf("scenario %s: %s as wanted, but%s", sc.Name, verdict(got), skipped)
			}
		})
	}
}

// verdict renders a Report.Property for people: conforms, or rejects: P.
func verdict(prop spec.Property) string {
	if prop == "" {
		return "conforms"
	}
	return "rejects: " + string(prop)
}

// TestTracesUpToDate checks that traces/ holds exactly what Scenarios()
// generates (run with -update to rewrite it). Files under
// traces/regressions/ are kept by hand.
func TestTracesUpToDate(t *testing.T) {
	scs, err := Scenarios()
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, sc := range scs {
		require.Empty(t, sc.Skipped, "scenario %s: the implementation did not take scheduled deliveries", sc.Name)
		var b bytes.Buffer
		require.NoError(t, writeTrace(&b, sc))
		files[sc.Name] = b.Bytes()
	}
	if *update {
		for name, b := range files {
			p := filepath.Join(tracesDir, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}
	}
	for name, b := range files {
		got, err := os.ReadFile(filepath.Join(tracesDir, name))
		require.NoError(t, err, "run go test ./conformance -run TestTracesUpToDate -update")
		assert.Equal(t, string(b), string(got), "%s is stale: run go test ./conformance -run TestTracesUpToDate -update", name)
	}
	// Trace files are self-contained: nothing but them, the README, the
	// format's schema and traces.go, which embeds them for the page.
	require.NoError(t, filepath.WalkDir(tracesDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".jsonl") && d.Name() != "README.md" && p != filepath.Join(tracesDir, "trace.schema.json") && p != filepath.Join(tracesDir, "outsider.schema.json") && p != filepath.Join(tracesDir, "sink-trace.schema.json") && p != filepath.Join(tracesDir, "traces.go") {
			t.Errorf("traces/ holds %s: only trace files (.jsonl), README.md, trace.schema.json, outsider.schema.json, sink-trace.schema.json and traces.go belong there", p)
		}
		return err
	}))
}

// TestTraces replays every trace file under traces/ and checks the verdict
// its path encodes: traces/conforms/*.jsonl conform; a file named
// <Property>-*.jsonl anywhere else is rejected with that property.
func TestTraces(t *testing.T) {
	var paths []string
	require.NoError(t, filepath.WalkDir(tracesDir, func(p string, d fs.DirEntry, err error) error {
		if skipOutsiderDir(d) {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			paths = append(paths, p)
		}
		return err
	}))
	sort.Strings(paths)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		rel, _ := filepath.Rel(tracesDir, p)
		t.Run(rel, func(t *testing.T) {
			want, err := WantFromPath(rel)
			require.NoError(t, err)
			r, err := AuditFile(p, Options{})
			require.NoError(t, err)
			assert.Equal(t, want, r.Property(), "%s", r)
		})
	}
}

// WantFromPath is the verdict a trace path under traces/ encodes.
func WantFromPath(rel string) (spec.Property, error) {
	rel = filepath.ToSlash(rel)
	if strings.HasPrefix(rel, "conforms/") || strings.HasPrefix(rel, "barrier/conforms/") || strings.HasPrefix(rel, "sink/conforms/") {
		return "", nil
	}
	base := filepath.Base(rel)
	if i := strings.Index(base, "-"); i > 0 {
		if p := spec.Property(base[:i]); p.InSpec() || slices.Contains(spec.BarrierInvariants, p) || slices.Contains(spec.BarrierTemporal, p) || slices.Contains(spec.AdaptiveInvariants, p) || p == spec.CheckCompleteClaim || p == spec.CheckEnabled || slices.Contains(spec.SinkInvariants, p) || slices.Contains(spec.SinkTemporal, p) {
			return p, nil
		}
		return "", fmt.Errorf("trace %s: %s names no property of the spec (%s)", rel, base[:i], spec.JoinProperties(slices.Concat(spec.StateInvariants, spec.TemporalProperties, spec.BarrierInvariants, spec.BarrierTemporal, spec.AdaptiveInvariants, spec.SinkInvariants, spec.SinkTemporal)))
	}
	return "", fmt.Errorf("trace %s: want traces/conforms/NAME.jsonl or .../PROPERTY-NAME.jsonl", rel)
}

func writeTrace(w *bytes.Buffer, sc Scenario) error { return spec.WriteTrace(w, sc.Trace) }

// TestTracesReadme checks that traces/README.md lists every trace file
// with the verdict its path encodes.
func TestTracesReadme(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(tracesDir, "README.md"))
	require.NoError(t, err)
	readme := string(b)
	require.NoError(t, filepath.WalkDir(tracesDir, func(p string, d fs.DirEntry, err error) error {
		if skipOutsiderDir(d) {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		rel, _ := filepath.Rel(tracesDir, p)
		want, err := WantFromPath(rel)
		require.NoError(t, err)
		assert.Contains(t, readme, fmt.Sprintf("| `%s` | %s |", filepath.ToSlash(rel), verdict(want)), "traces/README.md must list %s", rel)
		return nil
	}))
}
