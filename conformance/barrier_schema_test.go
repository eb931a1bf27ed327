package conformance

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// fanInHeader is the header the barrier lines below are read after: two
// sources feeding X feeding the sink K, aligned.
const fanInHeader = `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S1","kind":"source","budget":2},{"name":"S2","kind":"source","budget":2},{"name":"X","kind":"operator"},{"name":"K","kind":"sink"}],"edges":[{"from":"S1","to":"X"},{"from":"S2","to":"X"},{"from":"X","to":"K"}],"cap":2,"mode":"aligned"}}`

// malformedBarrierLines are barrier trace lines the reader refuses for
// what the line says; the schema must refuse each too.
var malformedBarrierLines = []schemaCase{
	{"another version", true, `{"format":"markerwave-barrier-trace/2","graph":{"nodes":[{"name":"S","kind":"source"},{"name":"K","kind":"sink"}],"edges":[{"from":"S","to":"K"}],"cap":1,"mode":"aligned"}}`},
	{"no graph", true, `{"format":"markerwave-barrier-trace/1"}`},
	{"unknown header field", true, `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S","kind":"source"},{"name":"K","kind":"sink"}],"edges":[{"from":"S","to":"K"}],"cap":1,"mode":"aligned"},"seed":3}`},
	{"unknown mode", true, `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S","kind":"source"},{"name":"K","kind":"sink"}],"edges":[{"from":"S","to":"K"}],"cap":1,"mode":"sideways"}}`},
	{"no cap", true, `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S","kind":"source"},{"name":"K","kind":"sink"}],"edges":[{"from":"S","to":"K"}],"mode":"aligned"}}`},
	{"unknown kind", true, `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S","kind":"spring"},{"name":"K","kind":"sink"}],"edges":[{"from":"S","to":"K"}],"cap":1,"mode":"aligned"}}`},
	{"malformed name", true, `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S->","kind":"source"},{"name":"K","kind":"sink"}],"edges":[{"from":"S->","to":"K"}],"cap":1,"mode":"aligned"}}`},
	{"negative budget", true, `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S","kind":"source","budget":-1},{"name":"K","kind":"sink"}],"edges":[{"from":"S","to":"K"}],"cap":1,"mode":"aligned"}}`},

	{"unknown action", false, `{"action":"Snapshot","node":"S1"}`},
	{"unknown event field", false, `{"action":"Inject","node":"S1","part":{"emitted":0},"time":3}`},
	{"Emit without a record", false, `{"action":"Emit","node":"S1","from":"S1","to":"X"}`},
	{"Emit with a part", false, `{"action":"Emit","node":"S1","from":"S1","to":"X","rec":{"src":"S1","i":1,"seq":1},"part":{"emitted":1}}`},
	{"Inject without a part", false, `{"action":"Inject","node":"S1"}`},
	{"Inject with an edge", false, `{"action":"Inject","node":"S1","from":"S1","to":"X","part":{}}`},
	{"Process without a record", false, `{"action":"Process","node":"X","from":"S1","to":"X"}`},
	{"Process with a part", false, `{"action":"Process","node":"X","from":"S1","to":"X","rec":{"src":"S1","i":1,"seq":1},"part":{}}`},
	{"RecvBarrier with a record", false, `{"action":"RecvBarrier","node":"X","from":"S1","to":"X","rec":{"src":"S1","i":1,"seq":1}}`},
	{"RecvBarrier logged", false, `{"action":"RecvBarrier","node":"X","from":"S1","to":"X","logged":true}`},
	{"Restore of a node", false, `{"action":"Restore","node":"X"}`},
	{"record numbered 0", false, `{"action":"Emit","node":"S1","from":"S1","to":"X","rec":{"src":"S1","i":0,"seq":1}}`},
	{"record with hops but no seq", false, `{"action":"Emit","node":"S1","from":"S1","to":"X","rec":{"src":"S1","i":1,"hops":1}}`},
	{"unknown record field", false, `{"action":"Emit","node":"S1","from":"S1","to":"X","rec":{"src":"S1","i":1,"seq":1,"key":7}}`},
	{"negative cut", false, `{"action":"Inject","node":"S1","part":{"emitted":0,"cut_sent":{"S1->X":-1}}}`},
	{"cut key without an arrow", false, `{"action":"Inject","node":"S1","part":{"emitted":0,"cut_sent":{"S1X":0}}}`},
	{"output counted 0 times", false, `{"action":"Inject","node":"S1","part":{"out":[{"src":"S1","i":1,"n":0}]}}`},
	{"unknown part field", false, `{"action":"Inject","node":"S1","part":{"emitted":0,"state":{}}}`},
}

// barrierSchemaOnly are lines the schema accepts and the reader refuses:
// what needs the header's graph.
var barrierSchemaOnly = []schemaCase{
	{"an unknown node", false, `{"action":"Inject","node":"S9","part":{}}`},
	{"an edge not in the graph", false, `{"action":"Process","node":"X","from":"K","to":"X","rec":{"src":"S1","i":1,"seq":1}}`},
	{"an Inject at an operator", false, `{"action":"Inject","node":"X","part":{}}`},
	{"a record from an operator", false, `{"action":"Emit","node":"S1","from":"S1","to":"X","rec":{"src":"X","i":1,"seq":1}}`},
	{"a cut on another node's edge", false, `{"action":"Inject","node":"S1","part":{"cut_sent":{"S2->X":0}}}`},
	{"two sinks", true, `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S","kind":"source"},{"name":"K","kind":"sink"},{"name":"L","kind":"sink"}],"edges":[{"from":"S","to":"K"}],"cap":1,"mode":"aligned"}}`},
}

func (c schemaCase) barrierTrace() []byte {
	if c.header {
		return []byte(c.line + "\n")
	}
	return []byte(fanInHeader + "\n" + c.line + "\n")
}

// TestBarrierTraceSchema: every malformed barrier line above is refused
// by the reader (spec.ReadBarrierTrace) and by the schema; the lines that
// need the graph are refused by the reader only.
func TestBarrierTraceSchema(t *testing.T) {
	s := compileTraceSchema(t)
	requireBothAccept(t, s, "fan-in", []byte(fanInHeader+"\n"+`{"action":"Emit","node":"S1","from":"S1","to":"X","rec":{"src":"S1","i":1,"seq":1,"val":4}}`+"\n"+`{"action":"Restore"}`+"\n"))
	// An outside stream processor's lines: no seq, an empty part (derived).
	requireBothAccept(t, s, "fan-in, derivable fields left out", []byte(fanInHeader+"\n"+`{"action":"Emit","node":"S1","from":"S1","to":"X","rec":{"src":"S1","i":1}}`+"\n"+`{"action":"Inject","node":"S1","part":{}}`+"\n"))
	for _, c := range malformedBarrierLines {
		t.Run("refused/"+c.name, func(t *testing.T) {
			_, rerr := spec.ReadBarrierTrace(bytes.NewReader(c.barrierTrace()))
			require.Error(t, rerr, "the reader must refuse it")
			require.Error(t, s.validate(c.barrierTrace()), "the reader refuses it (%v); the schema must too", rerr)
		})
	}
	for _, c := range barrierSchemaOnly {
		t.Run("schema accepts/"+c.name, func(t *testing.T) {
			_, err := spec.ReadBarrierTrace(bytes.NewReader(c.barrierTrace()))
			require.Error(t, err)
			assert.NoError(t, s.validate(c.barrierTrace()))
		})
	}
}

// TestBarrierTraceSchemaMatchesFormat: the schema's barrier format tag
// and actions are dataflow's.
func TestBarrierTraceSchemaMatchesFormat(t *testing.T) {
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
			} `json:"barrierHeader"`
			Event struct {
				Properties struct {
					Action struct {
						Enum []string `json:"enum"`
					} `json:"action"`
				} `json:"properties"`
			} `json:"barrierEvent"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(b, &root))
	assert.Equal(t, spec.BarrierTraceFormat, root.Defs.Header.Properties.Format.Const)
	assert.ElementsMatch(t, []string{spec.BarrierEmit, spec.BarrierInject, spec.BarrierProcess, spec.BarrierRecvBarrier, spec.BarrierTimeout, spec.BarrierTimeoutOut, spec.BarrierRestore},
		root.Defs.Event.Properties.Action.Enum)
}
