package conformance

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// skipSinkDir reports whether d is traces/sink, which holds sink traces
// (their own format and schema, TestSinkSchema): the walkers of the
// Chandy-Lamport and barrier formats skip it; TestTraces audits it.
func skipSinkDir(d fs.DirEntry) bool { return d != nil && d.IsDir() && d.Name() == "sink" }

// compileSinkSchema compiles traces/sink-trace.schema.json (any line).
func compileSinkSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "traces", "sink-trace.schema.json"))
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	const id = "https://github.com/markerwave/markerwave/traces/sink-trace.schema.json"
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(id, doc))
	s, err := c.Compile(id)
	require.NoError(t, err)
	return s
}

// validLine reports whether line l is valid under the sink schema.
func validLine(s *jsonschema.Schema, l string) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(l)))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// TestSinkSchema: every line of every bundled sink trace is valid under
// the schema, and lines the reader refuses one by one the schema
// refuses too.
func TestSinkSchema(t *testing.T) {
	s := compileSinkSchema(t)
	files, err := filepath.Glob(filepath.Join(tracesDir, "sink", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for l := range bytes.SplitSeq(b, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				assert.NoError(t, validLine(s, string(l)), "%s: %s", f, l)
			}
		}
	}
	for _, bad := range []string{
		`{"format":"markerwave-sink-trace/1","max_ckpt":0,"max_restores":0,"max_aborts":0}`,
		`{"format":"markerwave-sink-trace/1","max_ckpt":1}`,
		`{"action":"Take"}`,
		`{"action":"Commit"}`,
		`{"action":"Complete","ckpt":1,"txn":{"txn":1}}`,
		`{"action":"PreCommit","txn":{"txn":1,"ckpt":1}}`,
		`{"action":"Commit","txn":{"txn":0}}`,
		`{"action":"Complete","ckpt":1,"extra":1}`,
	} {
		assert.Error(t, validLine(s, bad), bad)
	}
}
