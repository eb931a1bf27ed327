package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// traceSchemaFile is the published trace format, traces/trace.schema.json.
// spec.ReadTraceLines stays the authority; these tests keep the two in
// step: every trace the project has or writes is valid under both, every
// malformed line the reader refuses the schema refuses too, and the
// differences traces/README.md lists are exactly those.
const traceSchemaFile = "../traces/trace.schema.json"

// traceSchema is the compiled schema: header validates a trace's first
// line, later each line after it, line (the root) any line.
type traceSchema struct {
	header, later, line *jsonschema.Schema
	barrierHeader       *jsonschema.Schema // a barrier trace's first line
}

// compileTraceSchema compiles traces/trace.schema.json the way tla/manifest.go
// compiles the manifest's schema.
func compileTraceSchema(t *testing.T) traceSchema {
	t.Helper()
	b, err := os.ReadFile(traceSchemaFile)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err, traceSchemaFile)
	const id = "https://github.com/markerwave/markerwave/traces/trace.schema.json"
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(id, doc))
	var s traceSchema
	s.header, err = c.Compile(id + "#/$defs/header")
	require.NoError(t, err)
	s.later, err = c.Compile(id + "#/$defs/laterLine")
	require.NoError(t, err)
	s.barrierHeader, err = c.Compile(id + "#/$defs/barrierHeader")
	require.NoError(t, err)
	s.line, err = c.Compile(id)
	require.NoError(t, err)
	return s
}

// validate checks every non-blank line of a JSON-lines trace: the first
// against the header's schema, the others against the later lines', and
// each against the root. The error names the line.
func (s traceSchema) validate(b []byte) error {
	first := true
	for i, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		sch := s.later
		if first {
			sch, first = s.header, false
			if spec.IsBarrierTrace(l) {
				sch = s.barrierHeader
			}
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(l))
		if err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		err = sch.Validate(doc)
		if err == nil {
			err = s.line.Validate(doc)
		}
		if err != nil {
			var verr *jsonschema.ValidationError
			if errors.As(err, &verr) {
				_, places, _ := strings.Cut(verr.Error(), "\n")
				return fmt.Errorf("line %d does not match %s:\n%s", i+1, filepath.Base(traceSchemaFile), places)
			}
			return fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	if first {
		return fmt.Errorf("no header line")
	}
	return nil
}

// requireBothAccept requires that the reader and the schema both accept
// trace b.
func requireBothAccept(t *testing.T, s traceSchema, name string, b []byte) {
	t.Helper()
	var err error
	if IsBarrierTrace(b) {
		_, err = spec.ReadBarrierTrace(bytes.NewReader(b))
	} else {
		_, err = spec.ReadTrace(bytes.NewReader(b))
	}
	require.NoError(t, err, "%s: the reader refuses it", name)
	require.NoError(t, s.validate(b), "%s: the reader accepts it, the schema must too", name)
}

// TestTraceSchemaAcceptsTraces: every trace under traces/ is valid.
func TestTraceSchemaAcceptsTraces(t *testing.T) {
	s := compileTraceSchema(t)
	var n int
	err := filepath.WalkDir("../traces", func(path string, d os.DirEntry, err error) error {
		if skipOutsiderDir(d) || skipSinkDir(d) {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || filepath.Ext(path) != ".jsonl" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		requireBothAccept(t, s, path, b)
		n++
		return nil
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 8, "traces under traces/")
}

// TestTraceSchemaAcceptsRuntimeTraces: what the runtime writes, each
// node's own log (runtime.OpenTraces) and their causal merge with the
// collected snapshots (runtime.MergeTraces, as the demo writes it), is
// valid.
func TestTraceSchemaAcceptsRuntimeTraces(t *testing.T) {
	s := compileTraceSchema(t)
	topo := spec.Complete(3)
	bal := map[spec.ProcID]int64{"P1": 100, "P2": 50, "P3": 80}
	dir := t.TempDir()
	h := spec.Header{Topology: topo, InitBal: bal, Source: "conformance schema test"}
	sinks, err := runtime.OpenTraces(filepath.Join(dir, "nodes"), h)
	require.NoError(t, err)
	c, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: topo, Traces: sinks,
		NewApp:    func(p spec.ProcID) (core.App, error) { return app.NewBank(bal[p]) },
		Transport: transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 200 * time.Microsecond, Seed: 3}),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, c.Send("P1", "P2", app.Transfer(30)))
	id1, err := c.Snapshot("P2")
	require.NoError(t, err)
	require.NoError(t, c.Send("P3", "P1", app.Transfer(20)))
	require.NoError(t, c.Send("P2", "P3", app.Transfer(5)))
	id2, err := c.Snapshot("P3")
	require.NoError(t, err)
	g1, err := c.Collect(ctx, id1)
	require.NoError(t, err)
	g2, err := c.Collect(ctx, id2)
	require.NoError(t, err)
	require.NoError(t, c.Quiesce(ctx))
	require.NoError(t, c.Stop(ctx))
	require.NoError(t, runtime.CloseTraces(sinks))

	for _, p := range topo.Procs {
		path := runtime.NodeTracePath(filepath.Join(dir, "nodes"), p)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		requireBothAccept(t, s, path, b)
	}
	h.Snaps, h.Drained = c.Initiators(), true
	out := filepath.Join(dir, "trace.jsonl")
	n, err := runtime.MergeTraces(filepath.Join(dir, "nodes"), h, []snapshot.Global{g1, g2}, out)
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	requireBothAccept(t, s, out, b)
	r, err := AuditFile(out, Options{})
	require.NoError(t, err)
	require.True(t, r.OK(), "%s", r)
	t.Logf("%d events, 2 snapshots: valid under the schema and conforming", n)
}

// twoAccountHeader is the header the later lines below are read after:
// the article's two accounts.
const twoAccountHeader = `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]},"init_bal":{"P1":100,"P2":50},"snaps":{"1":"P2"}}`

// schemaCase is one line, read as a header (header true) or after
// twoAccountHeader.
type schemaCase struct {
	name   string
	header bool
	line   string
}

// trace is the case as a whole trace.
func (c schemaCase) trace() []byte {
	if c.header {
		return []byte(c.line + "\n")
	}
	return []byte(twoAccountHeader + "\n" + c.line + "\n")
}

const (
	goodEvent    = `{"proc":"P1","seq":1,"action":"SendApp","from":"P1","to":"P2","amount":30,"msg":1,"after":{"bal":70,"sent":1,"rcvd":0},"vc":[1,0]}`
	goodRecorded = `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{"bal":70,"sent":1,"rcvd":0},"P2":{"bal":50,"sent":0,"rcvd":0}},"chans":{"P1->P2":{"msgs":[{"amt":30,"seq":1}],"sent":1,"got":0},"P2->P1":{"msgs":[],"sent":0,"got":0}}}}`
)

// malformedLines are lines the reader refuses for what one line says; the
// schema must refuse each too.
var malformedLines = []schemaCase{
	{"format of another version", true, `{"format":"markerwave-trace/2","topology":{"procs":["P1"]}}`},
	{"no format", true, `{"topology":{"procs":["P1"]}}`},
	{"no topology", true, `{"format":"markerwave-trace/3"}`},
	{"null topology", true, `{"format":"markerwave-trace/3","topology":null}`},
	{"unknown header field", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"]},"seed":7}`},
	{"header not an object", true, `["markerwave-trace/3"]`},
	{"a key in another case", false, `{"PROC":"P2","Seq":1,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"malformed JSON", true, `{"format":"markerwave-trace/3","topology":`},
	{"no processes", true, `{"format":"markerwave-trace/3","topology":{"procs":[]}}`},
	{"duplicate process", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1","P1"]}}`},
	{"malformed process id", true, `{"format":"markerwave-trace/3","topology":{"procs":["1P"]}}`},
	{"two processes, no channels", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"]}}`},
	{"one process with a channel", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"],"channels":[{"from":"P1","to":"P1"}]}}`},
	{"channel without to", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1"},{"from":"P2","to":"P1"}]}}`},
	{"unknown channel field", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2","fifo":true},{"from":"P2","to":"P1"}]}}`},
	{"duplicate channel", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P1","to":"P2"}]}}`},
	{"balance a string", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"]},"init_bal":{"P1":"100"}}`},
	{"balance a fraction", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"]},"init_bal":{"P1":1.5}}`},
	{"snapshot id not a number", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"]},"snaps":{"one":"P1"}}`},
	{"negative snapshot id", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"]},"snaps":{"-1":"P1"}}`},
	{"drained a string", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"]},"drained":"yes"}`},

	{"unknown event field", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":1,"time":12,"vc":[0,1]}`},
	{"event without proc", false, `{"seq":1,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"malformed proc", false, `{"proc":"P 2","seq":1,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"event without seq", false, `{"proc":"P2","action":"Initiate","snap":1,"vc":[0,1]}`},
	{"seq 0", false, `{"proc":"P2","seq":0,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"negative seq", false, `{"proc":"P2","seq":-1,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"seq beyond 64 bits", false, `{"proc":"P2","seq":18446744073709551616,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"unknown action", false, `{"proc":"P2","seq":1,"action":"Snapshot","snap":1,"vc":[0,1]}`},
	{"event without action", false, `{"proc":"P2","seq":1,"snap":1,"vc":[0,1]}`},
	{"negative vc entry", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":1,"vc":[-1,1]}`},
	{"vc a string", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":1,"vc":"0,1"}`},
	{"Initiate without snap", false, `{"proc":"P2","seq":1,"action":"Initiate","vc":[0,1]}`},
	{"Initiate of snapshot 0", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":0,"vc":[0,1]}`},
	{"SendApp without msg", false, `{"proc":"P1","seq":1,"action":"SendApp","from":"P1","to":"P2","amount":30,"vc":[1,0]}`},
	{"SendApp without amount", false, `{"proc":"P1","seq":1,"action":"SendApp","from":"P1","to":"P2","msg":1,"vc":[1,0]}`},
	{"SendApp of 0", false, `{"proc":"P1","seq":1,"action":"SendApp","from":"P1","to":"P2","amount":0,"msg":1,"vc":[1,0]}`},
	{"SendApp without from", false, `{"proc":"P1","seq":1,"action":"SendApp","to":"P2","amount":30,"msg":1,"vc":[1,0]}`},
	{"RecvApp of a negative amount", false, `{"proc":"P2","seq":1,"action":"RecvApp","from":"P1","to":"P2","amount":-30,"msg":1,"vc":[1,1]}`},
	{"amount beyond 64 bits", false, `{"proc":"P1","seq":1,"action":"SendApp","from":"P1","to":"P2","amount":9223372036854775808,"msg":1,"vc":[1,0]}`},
	{"RecvMarker without snap", false, `{"proc":"P1","seq":1,"action":"RecvMarker","from":"P2","to":"P1","vc":[1,1]}`},
	{"RecvMarker without to", false, `{"proc":"P1","seq":1,"action":"RecvMarker","from":"P2","snap":1,"vc":[1,1]}`},
	{"first a string", false, `{"proc":"P1","seq":1,"action":"RecvMarker","from":"P2","to":"P1","snap":1,"first":"true","vc":[1,1]}`},
	{"unknown state field", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":1,"after":{"bal":50,"token":true},"vc":[0,1]}`},
	{"balance a string after the step", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":1,"after":{"bal":"50"},"vc":[0,1]}`},
	{"a second header", false, twoAccountHeader},
	{"event not an object", false, `["P1","SendApp"]`},
	{"trailing data", false, goodEvent + ` {}`},

	{"recorded null", false, `{"recorded":null}`},
	{"recorded with another key", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}},"time":3}`},
	{"recorded without snap", false, `{"recorded":{"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"recorded snapshot 0", false, `{"recorded":{"snap":0,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"recorded without initiator", false, `{"recorded":{"snap":1,"procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"recorded without procs", false, `{"recorded":{"snap":1,"initiator":"P2","chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"recorded with no process states", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"unknown recorded field", false, `{"recorded":{"snap":1,"initiator":"P2","time":3,"procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"channel key without an arrow", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1P2":{"sent":0,"got":0},"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"channel key without a receiver", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->":{"sent":0,"got":0},"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"channel without got", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"msgs":[],"sent":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"negative cut seq", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":-1,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"unknown channel field", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0,"closed":true},"P2->P1":{"sent":0,"got":0}}}}`},
	{"unknown message field", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"msgs":[{"kind":"app","amt":30,"seq":1}],"sent":1,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"restore null", false, `{"restore":null}`},
	{"restore without snap", false, `{"restore":{"incarnation":2}}`},
	{"restore of snapshot 0", false, `{"restore":{"snap":0,"incarnation":2}}`},
	{"restore without incarnation", false, `{"restore":{"snap":1}}`},
	{"restore to incarnation 1", false, `{"restore":{"snap":1,"incarnation":1}}`},
	{"restore incarnation a string", false, `{"restore":{"snap":1,"incarnation":"2"}}`},
	{"restore with another key", false, `{"restore":{"snap":1,"incarnation":2},"time":3}`},
	{"unknown restore field", false, `{"restore":{"snap":1,"incarnation":2,"time":3}}`},
	{"restored_from a string", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"]},"restored_from":"7"}`},
	{"message amount a string", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"msgs":[{"amt":"30","seq":1}],"sent":1,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
}

// TestTraceSchemaRejectsMalformedLines: every line above is refused by
// the reader, and by the schema.
func TestTraceSchemaRejectsMalformedLines(t *testing.T) {
	s := compileTraceSchema(t)
	requireBothAccept(t, s, "header", []byte(twoAccountHeader+"\n"+goodEvent+"\n"+goodRecorded+"\n"))
	requireBothAccept(t, s, "restore", []byte(twoAccountHeader+"\n"+goodEvent+"\n"+`{"restore":{"snap":1,"incarnation":2}}`+"\n"+goodEvent+"\n"))
	for _, c := range malformedLines {
		t.Run(c.name, func(t *testing.T) {
			_, rerr := spec.ReadTrace(bytes.NewReader(c.trace()))
			require.Error(t, rerr, "the reader must refuse it")
			serr := s.validate(c.trace())
			require.Error(t, serr, "the reader refuses it (%v); the schema must too", rerr)
			t.Logf("reader: %v\nschema: %v", rerr, serr)
		})
	}
}

// readerOnly are lines the reader accepts and the schema refuses: the
// leniency of Go's encoding/json, which the schema, the published
// contract, does not extend (traces/README.md lists it).
var readerOnly = []schemaCase{
	{"null for an absent number", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":1,"amount":null,"vc":[0,1]}`},
	{"null for an absent state", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":1,"after":null,"vc":[0,1]}`},
	{"null for no recorded messages", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"msgs":null,"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"null for no channels", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"],"channels":null}}`},
}

// schemaOnly are lines the schema accepts and the reader refuses: what
// depends on the header's topology, on other lines or on how a number is
// written, which one line's schema cannot say (traces/README.md lists
// it).
var schemaOnly = []schemaCase{
	{"an unknown process", false, `{"proc":"P9","seq":1,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"a channel not in the topology", false, `{"proc":"P2","seq":1,"action":"SendApp","from":"P2","to":"P3","amount":5,"msg":1,"vc":[0,1]}`},
	{"a step taken by another process than the channel's", false, `{"proc":"P2","seq":1,"action":"SendApp","from":"P1","to":"P2","amount":30,"msg":1,"vc":[0,1]}`},
	{"a vector clock of another length", false, `{"proc":"P2","seq":1,"action":"Initiate","snap":1,"vc":[1]}`},
	{"an integer written as 1.0", false, `{"proc":"P2","seq":1.0,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"a recorded snapshot missing a process", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{}},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"a recorded snapshot missing a channel", false, `{"recorded":{"snap":1,"initiator":"P2","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0}}}}`},
	{"a recorded snapshot with an unknown initiator", false, `{"recorded":{"snap":1,"initiator":"P7","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"a recorded snapshot whose initiator is not the header's", false, `{"recorded":{"snap":1,"initiator":"P1","procs":{"P1":{},"P2":{}},"chans":{"P1->P2":{"sent":0,"got":0},"P2->P1":{"sent":0,"got":0}}}}`},
	{"a snapshot recorded twice", false, goodRecorded + "\n" + goodRecorded},
	{"a first restore to incarnation 3", false, `{"restore":{"snap":1,"incarnation":3}}`},
	{"two restores to one incarnation", false, `{"restore":{"snap":1,"incarnation":2}}` + "\n" + `{"restore":{"snap":1,"incarnation":2}}`},
	{"a topology not strongly connected", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2","P3"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]}}`},
	{"a channel to an unknown process", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P3"}]}}`},
	{"a self-loop", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P1"},{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]}}`},
	{"a snapshot id beyond 64 bits", true, `{"format":"markerwave-trace/3","topology":{"procs":["P1"]},"snaps":{"18446744073709551616":"P1"}}`},
	{"a key given twice", false, `{"proc":"P2","seq":1,"seq":2,"action":"Initiate","snap":1,"vc":[0,1]}`},
	{"bytes that are not UTF-8", false, "{\"proc\":\"P2\",\"seq\":1,\"action\":\"Initiate\",\"snap\":1,\"vc\":[0,1],\"payload\":\"\xff\"}"},
}

// TestTraceSchemaDifferences: the differences between the reader and the
// schema are exactly the ones traces/README.md lists.
func TestTraceSchemaDifferences(t *testing.T) {
	s := compileTraceSchema(t)
	for _, c := range readerOnly {
		t.Run("reader accepts/"+c.name, func(t *testing.T) {
			_, err := spec.ReadTrace(bytes.NewReader(c.trace()))
			require.NoError(t, err)
			assert.Error(t, s.validate(c.trace()))
		})
	}
	for _, c := range schemaOnly {
		t.Run("schema accepts/"+c.name, func(t *testing.T) {
			_, err := spec.ReadTrace(bytes.NewReader(c.trace()))
			require.Error(t, err)
			assert.NoError(t, s.validate(c.trace()))
		})
	}
}

// TestTraceSchemaDescribesEveryField: every field the schema defines has
// a description, on the field or on the definition it refers to.
func TestTraceSchemaDescribesEveryField(t *testing.T) {
	b, err := os.ReadFile(traceSchemaFile)
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.Unmarshal(b, &root))
	defs := root["$defs"].(map[string]any)
	described := func(s map[string]any) bool {
		if _, ok := s["description"]; ok {
			return true
		}
		ref, _ := s["$ref"].(string)
		d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		return ok && d["description"] != nil
	}
	var fields int
	// walk visits the schemas that define fields, not the conditions
	// (if/then/else, allOf) that restrict them per action.
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		assert.True(t, described(s), "%s has no description", path)
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			fields++
			walk(path+"."+name, p.(map[string]any))
		}
		for _, k := range []string{"items", "additionalProperties"} {
			if sub, ok := s[k].(map[string]any); ok {
				walk(path+"."+k, sub)
			}
		}
	}
	for name, d := range defs {
		walk(name, d.(map[string]any))
	}
	require.Greater(t, fields, 30)
}

// TestTraceSchemaMatchesSpec: the schema's format tag is spec.TraceFormat
// and its actions are exactly the spec's, so a new format version or
// action cannot leave the schema behind.
func TestTraceSchemaMatchesSpec(t *testing.T) {
	b, err := os.ReadFile(traceSchemaFile)
	require.NoError(t, err)
	var root struct {
		Defs struct {
			Header struct {
				Properties struct {
					Format struct {
						Const string `json:"const"`
					} `json:"format"`
				} `json:"properties"`
			} `json:"header"`
			Event struct {
				Properties struct {
					Action struct {
						Enum []spec.Action `json:"enum"`
					} `json:"action"`
				} `json:"properties"`
			} `json:"event"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(b, &root))
	assert.Equal(t, spec.TraceFormat, root.Defs.Header.Properties.Format.Const)
	assert.ElementsMatch(t, []spec.Action{spec.SendApp, spec.RecvApp, spec.Initiate, spec.RecvMarker,
		spec.Suspect, spec.Unsuspect, spec.Abort, spec.DropMarker}, root.Defs.Event.Properties.Action.Enum)
	for _, a := range root.Defs.Event.Properties.Action.Enum {
		assert.True(t, a.Valid(), "%s", a)
	}
}

// TestTraceWithoutClocks: vector clocks are optional when the order in the
// file is already causal. Every trace under traces/ with its clocks taken
// out is still valid to the reader and the schema and gets the same
// verdict; merging per-node logs, which needs them, says so.
func TestTraceWithoutClocks(t *testing.T) {
	s := compileTraceSchema(t)
	paths, err := filepath.Glob(filepath.Join("..", "traces", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		tr, _, err := ReadTraceFile(p)
		require.NoError(t, err)
		want := Audit(tr, Options{}).Property()
		tr = withoutClocks(tr)
		var b bytes.Buffer
		require.NoError(t, spec.WriteTrace(&b, tr))
		require.NotContains(t, b.String(), `"vc"`, p)
		requireBothAccept(t, s, p+" without clocks", b.Bytes())
		bare, err := spec.ReadTrace(bytes.NewReader(b.Bytes()))
		require.NoError(t, err)
		assert.Equal(t, want, Audit(bare, Options{}).Property(), "%s without clocks", p)
	}
	tr, _, err := ReadTraceFile(filepath.Join("..", "traces", "conforms", "token-ring.jsonl"))
	require.NoError(t, err)
	logs := map[spec.ProcID][]spec.Event{}
	for _, e := range tr.Events {
		e.VC = nil
		logs[e.Proc] = append(logs[e.Proc], e)
	}
	_, err = spec.MergeCausal(tr.Header.Topology, logs)
	assert.ErrorContains(t, err, "vector clock")
}
