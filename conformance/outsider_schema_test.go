package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/instrument"
)

// outsiderSchemaFile is the outsider format's JSON Schema; spec.ReadOutsider
// stays the authority.
const outsiderSchemaFile = "../traces/outsider.schema.json"

// outsiderSchema is traces/outsider.schema.json compiled: header for a
// log's first line, later for each line after it.
type outsiderSchema struct{ header, later *jsonschema.Schema }

// compileOutsiderSchema compiles traces/outsider.schema.json.
func compileOutsiderSchema(t *testing.T) outsiderSchema {
	t.Helper()
	b, err := os.ReadFile(outsiderSchemaFile)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err, outsiderSchemaFile)
	const id = "https://github.com/markerwave/markerwave/traces/outsider.schema.json"
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(id, doc))
	var s outsiderSchema
	s.header, err = c.Compile(id + "#/$defs/header")
	require.NoError(t, err)
	s.later, err = c.Compile(id + "#/$defs/laterLine")
	require.NoError(t, err)
	return s
}

// validate checks every non-blank line of an outsider log, naming the
// line that does not match.
func (s outsiderSchema) validate(b []byte) error {
	sch := s.header
	for i, l := range bytes.Split(b, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) == 0 {
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(l))
		if err == nil {
			err = sch.Validate(doc)
		}
		var verr *jsonschema.ValidationError
		if errors.As(err, &verr) {
			_, places, _ := strings.Cut(verr.Error(), "\n")
			return fmt.Errorf("line %d does not match %s:\n%s", i+1, filepath.Base(outsiderSchemaFile), places)
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		sch = s.later
	}
	if sch == s.header {
		return fmt.Errorf("no header line")
	}
	return nil
}

// TestOutsiderSchemaAcceptsLogs: every outsider log in traces/outsider,
// and what the instrument package writes (a node's own log and a file
// every node writes into), is valid under traces/outsider.schema.json;
// and the schema refuses a line the reader refuses for its shape.
func TestOutsiderSchemaAcceptsLogs(t *testing.T) {
	s := compileOutsiderSchema(t)
	var n int
	err := filepath.WalkDir("../traces/outsider", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".jsonl" {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil {
			n++
			err = s.validate(b)
		}
		return err
	})
	require.NoError(t, err)
	require.NotZero(t, n, "no outsider logs in traces/outsider")

	cfg := instrument.Config{Run: "r", Procs: []string{"N1", "N2"}, InitBal: map[string]int64{"N1": 10, "N2": 10}}
	var own, shared bytes.Buffer
	n1, err := instrument.NewNode(&own, cfg, "N1")
	require.NoError(t, err)
	all, err := instrument.New(&shared, cfg)
	require.NoError(t, err)
	for _, r := range []*instrument.Recorder{n1, all.For("N1")} {
		r.Send("N2", 7, 3)
		r.Recv("N2", "m", 2)
		r.RecordState(0, 9)
		r.MarkerSent("N2", 0)
		r.RecordChannelMessage(0, "N2", "m2", 4)
		r.MarkerReceived("N2", 0)
		r.Report(0)
		require.NoError(t, r.Err())
	}
	require.NoError(t, s.validate(own.Bytes()), own.String())
	require.NoError(t, s.validate(shared.Bytes()), shared.String())

	bad := own.String() + `{"ev":"send","to":"N2"}` + "\n"
	require.ErrorContains(t, s.validate([]byte(bad)), "line 8 does not match outsider.schema.json:\n- at '': 'oneOf' failed")
	require.ErrorContains(t, s.validate([]byte(bad)), "missing property 'amount'")
}
