package conformance

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// compileOutsiderSchema compiles traces/outsider.schema.json's header
// and later-line schemas.
func compileOutsiderSchema(t *testing.T) (header, later *jsonschema.Schema) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "traces", "outsider.schema.json"))
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	const id = "https://github.com/markerwave/markerwave/traces/outsider.schema.json"
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(id, doc))
	header, err = c.Compile(id + "#/$defs/header")
	require.NoError(t, err)
	later, err = c.Compile(id + "#/$defs/laterLine")
	require.NoError(t, err)
	return header, later
}

// validateOutsider validates every line of outsider log b.
func validateOutsider(header, later *jsonschema.Schema, b []byte) error {
	first := true
	for l := range bytes.SplitSeq(b, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) == 0 {
			continue
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(l))
		if err != nil {
			return err
		}
		s := later
		if first {
			s, first = header, false
		}
		if err := s.Validate(v); err != nil {
			return err
		}
	}
	return nil
}

// TestOutsiderSchema: every outsider log under traces/outsider, and
// every trace of traces/ converted to the format (whole and stripped),
// is valid under the JSON Schema and read by spec.ReadOutsider; lines
// the reader refuses for a missing or misplaced field the schema
// refuses too.
func TestOutsiderSchema(t *testing.T) {
	header, later := compileOutsiderSchema(t)
	var logs [][]byte
	require.NoError(t, filepath.WalkDir(filepath.Join("..", "traces", "outsider"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			b, err := os.ReadFile(p)
			logs = append(logs, b)
			return err
		}
		return err
	}))
	files, _ := filepath.Glob(filepath.Join("..", "traces", "*", "*.jsonl"))
	for _, p := range files {
		tr, _, err := ReadTraceFile(p)
		require.NoError(t, err)
		for _, strip := range []bool{false, true} {
			var b bytes.Buffer
			require.NoError(t, spec.WriteOutsider(&b, ToOutsider(tr, strip)))
			logs = append(logs, b.Bytes())
		}
	}
	for _, b := range logs {
		_, err := spec.ReadOutsider(bytes.NewReader(b))
		require.NoError(t, err)
		require.NoError(t, validateOutsider(header, later, b), "%s", b)
	}
	for _, bad := range []string{
		`{"ev":"send","to":"N2"}`, `{"ev":"recv","from":"N2","to":"N1"}`, `{"ev":"record"}`,
		`{"ev":"jump"}`, `{"ev":"send","to":"N2","amount":0}`, `{"ev":"send","to":"N2","amount":1,"colour":"red"}`,
		`{"snapshot":{"procs":{}}}`, `{"snapshot":{"snap":1,"chans":{"N1->N2":{"ids":[1],"amounts":[2]}}}}`,
		`{"restore":{}}`, `{"ev":"record","snap":1,"state":{}}`,
		`{"ev":"send","to":"N2","Amount":1}`, `{"ev":"record","snap":1,"state":{"Bal":1}}`,
		`{"ev":"send","to":"N2","amount":1,"step":0}`, `{"ev":"send","to":"N2","amount":1,"seq":0}`,
		`{"ev":"send","to":"N2","amount":1,"step":9223372036854775808}`,
	} {
		in := []byte(strings.Replace(string(logs[0]), "\n", "\n"+bad+"\n", 1))
		_, err := spec.ReadOutsider(bytes.NewReader(in))
		require.Error(t, err, bad)
		var v any
		require.NoError(t, json.Unmarshal([]byte(bad), &v))
		require.Error(t, later.Validate(v), "the schema accepts %s, which the reader refuses", bad)
	}
}
