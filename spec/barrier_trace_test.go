package spec

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fanIn is a barrier trace header: two sources feeding X feeding the
// sink K, aligned.
const fanIn = `{"format":"markerwave-barrier-trace/1","graph":{"nodes":[{"name":"S1","kind":"source","budget":2},{"name":"S2","kind":"source","budget":2},{"name":"X","kind":"operator"},{"name":"K","kind":"sink"}],"edges":[{"from":"S1","to":"X"},{"from":"S2","to":"X"},{"from":"X","to":"K"}],"cap":2,"mode":"aligned"}}`

// A barrier trace's lines are numbered as a Chandy-Lamport trace's: the
// file's line from 1, blank lines counted, and the errors say so alike.
func TestBarrierTraceLinesAreTheFiles(t *testing.T) {
	emit := `{"action":"Emit","node":"S1","from":"S1","to":"X","rec":{"src":"S1","i":1,"seq":1}}`
	b := fanIn + "\n\n" + emit + "\n\n" + emit + "\n"
	tr, err := ReadBarrierTrace(strings.NewReader(b))
	require.NoError(t, err)
	assert.Equal(t, []int{3, 5}, tr.Lines)

	// The same fault, an unknown field on the file's line 5, in both kinds.
	_, err = ReadBarrierTrace(strings.NewReader(fanIn + "\n\n" + emit + "\n\n" + `{"action":"Emit","bogus":1}` + "\n"))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "trace line 5: "), err.Error())
	var cl bytes.Buffer
	top := Complete(2)
	require.NoError(t, WriteTrace(&cl, Trace{Header: Header{Topology: top, InitBal: map[ProcID]int64{"P1": 1, "P2": 1}}}))
	_, err = ReadTrace(strings.NewReader(cl.String() + "\n" + `{"proc":"P1","seq":1,"action":"Initiate","snap":1,"after":{}}` + "\n\n" + `{"proc":"P1","bogus":1}` + "\n"))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "trace line 5: "), err.Error())

	// A line over the bound: the line it is on, as ReadTraceLines says.
	long := fanIn + "\n" + `{"action":"Emit","node":"` + strings.Repeat("S", MaxTraceLine) + `"}` + "\n"
	_, err = ReadBarrierTrace(strings.NewReader(long))
	assert.EqualError(t, err, "trace line 2: longer than 16777216 bytes")
	_, err = ReadBarrierTrace(strings.NewReader("\n\n"))
	assert.EqualError(t, err, "trace: empty, no header line")
}

// The graph check is the ASSUME of tla/BarrierSnapshots.tla (lines
// 62-71), each clause refused by name.
func TestBarrierGraphCheck(t *testing.T) {
	ok := func() BarrierGraph {
		var h BarrierHeader
		require.NoError(t, DecodeStrict([]byte(fanIn), &h))
		return h.Graph
	}
	require.NoError(t, ok().Check())
	for name, c := range map[string]struct {
		edit     func(*BarrierGraph)
		want     string
		constant string
	}{
		"cap 0":          {func(g *BarrierGraph) { g.Cap = 0 }, "cap must be at least 1", "Cap"},
		"negative iter":  {func(g *BarrierGraph) { g.Iter = -1 }, "iter must be a natural number", "Iter"},
		"unknown mode":   {func(g *BarrierGraph) { g.Mode = "sideways" }, `unknown mode "sideways"`, "Mode"},
		"a name twice":   {func(g *BarrierGraph) { g.Nodes[1].Name = "S1" }, `node "S1" twice`, "Src"},
		"bad name":       {func(g *BarrierGraph) { g.Nodes[0].Name = "S->" }, `node "S->": a name is a letter`, "Src"},
		"unknown kind":   {func(g *BarrierGraph) { g.Nodes[0].Kind = "spring" }, `unknown kind "spring"`, "Node"},
		"budget of X":    {func(g *BarrierGraph) { g.Nodes[2].Budget = 1 }, `node "X": only a source has a budget`, "Budget"},
		"two sinks":      {func(g *BarrierGraph) { g.Nodes[2].Kind = KindSink }, "2 sinks", "Snk"},
		"unknown end":    {func(g *BarrierGraph) { g.Edges[0].To = "Y" }, "edge S1->Y joins a node the graph does not have", "Edge"},
		"self-loop":      {func(g *BarrierGraph) { g.Edges[0].To = "S1" }, "edge S1->S1 is a self-loop", "Edge"},
		"edge twice":     {func(g *BarrierGraph) { g.Edges[1] = g.Edges[0] }, "edge S1->X twice", "Edge"},
		"source input":   {func(g *BarrierGraph) { g.Edges = append(g.Edges, BarrierEdge{From: "X", To: "S1", Back: true}) }, `source "S1" must have no input`, "Edge"},
		"operator sinks": {func(g *BarrierGraph) { g.Edges = g.Edges[:2] }, `operator "X" must have an output`, "Edge"},
		"sink output":    {func(g *BarrierGraph) { g.Edges = append(g.Edges, BarrierEdge{From: "K", To: "X"}) }, `the sink "K" must have no output`, "Edge"},
	} {
		g := ok()
		c.edit(&g)
		err := g.Check()
		require.ErrorIs(t, err, ErrBarrierGraph, name)
		assert.ErrorContains(t, err, c.want, name)
		var ge *BarrierGraphError
		require.ErrorAs(t, err, &ge, name)
		assert.Equal(t, c.constant, ge.Constant, "%s: the constant at fault", name)
	}
	g := ok()
	g.Nodes[0], g.Nodes[1] = BarrierNode{Name: "S1", Kind: KindOperator}, BarrierNode{Name: "S2", Kind: KindOperator}
	g.Edges = append(g.Edges, BarrierEdge{From: "X", To: "S1", Back: true}, BarrierEdge{From: "X", To: "S2", Back: true})
	assert.ErrorContains(t, g.Check(), "no source: the graph needs one")
}

// CheckStrict is the ASSUME as TLC checks it: one forward output for a
// source (line 66) and for an operator (line 67), where Check allows a
// keyed shuffle.
func TestBarrierGraphCheckStrict(t *testing.T) {
	var h BarrierHeader
	require.NoError(t, DecodeStrict([]byte(fanIn), &h))
	require.NoError(t, h.Graph.CheckStrict())
	shuffle := h.Graph
	shuffle.Edges = append(slices.Clone(shuffle.Edges), BarrierEdge{From: "S1", To: "K"})
	require.NoError(t, shuffle.Check(), "a keyed shuffle is a dataflow graph")
	err := shuffle.CheckStrict()
	var ge *BarrierGraphError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, "Edge", ge.Constant)
	assert.ErrorContains(t, err, `source "S1" must have one output that is not a back-edge, not 2`)
	bad := h.Graph
	bad.Cap = 0
	assert.ErrorContains(t, bad.CheckStrict(), "cap must be at least 1", "Check's rules hold too")
}
