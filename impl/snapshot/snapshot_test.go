package snapshot_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// Core local snapshots converted with PartOf and assembled come back
// unchanged from Global.Local, and the cut and totals are the parts'.
func TestPartOfAssembleLocalRoundTrip(t *testing.T) {
	p12, p21 := spec.Channel{From: "P1", To: "P2"}, spec.Channel{From: "P2", To: "P1"}
	topo, err := spec.NewTopology([]spec.ProcID{"P1", "P2"}, []spec.Channel{p12, p21})
	require.NoError(t, err)
	locals := []core.LocalSnapshot{
		{Snap: 4, Proc: "P1", App: []byte(`{"bal":60}`), State: spec.LocalState{Bal: 60, Sent: 2, Rcvd: 0},
			NextSend: []core.ChanSeq{{Chan: p12, Next: 3}},
			Chans:    []core.ChanRecording{{Chan: p21, Status: core.Done, NextRecv: 1}}},
		{Snap: 4, Proc: "P2", App: []byte(`{"bal":110}`), State: spec.LocalState{Bal: 110, Sent: 0, Rcvd: 1},
			NextSend: []core.ChanSeq{{Chan: p21, Next: 1}},
			Chans:    []core.ChanRecording{{Chan: p12, Status: core.Done, NextRecv: 2, Msgs: []core.RecordedMsg{{Seq: 2, Amt: 30, Payload: []byte("30")}}}}},
	}
	parts := []snapshot.Part{snapshot.PartOf(locals[1], false), snapshot.PartOf(locals[0], true)}
	g, err := snapshot.Assemble(topo, 4, parts)
	require.NoError(t, err)
	assert.Equal(t, spec.ProcID("P1"), g.Initiator)
	for _, ls := range locals {
		got, ok := g.Local(ls.Proc)
		require.True(t, ok)
		assert.Equal(t, ls, got)
	}
	assert.Equal(t, core.Cut(locals...), g.Cut())
	assert.Equal(t, int64(200), g.Total())
	assert.Equal(t, int64(30), g.InFlight())
	assert.Equal(t, 1, g.Recorded())

	_, err = snapshot.Assemble(topo, 4, parts[:1])
	assert.ErrorContains(t, err, "assemble snapshot 4: no part from P1")
	_, err = snapshot.Assemble(topo, 5, parts)
	assert.ErrorContains(t, err, "belongs to snapshot 4")
	both := []snapshot.Part{snapshot.PartOf(locals[1], true), snapshot.PartOf(locals[0], true)}
	_, err = snapshot.Assemble(topo, 4, both)
	assert.ErrorContains(t, err, "both P2 and P1 initiated it")
}

// TestStringOfAnOpaqueApp: a snapshot of an application that moves no
// quantity (its nodes Opaque, their bal a message count) is rendered by
// its captured states and message counts, with no balance or total (it
// printed "balance 1099511627775" and a total of the counts); a state
// that is not text is shown by its size, a long one shortened (never
// within a character). The
// Opaque mark survives Assemble and Local.
func TestStringOfAnOpaqueApp(t *testing.T) {
	p12, p21 := spec.Channel{From: "P1", To: "P2"}, spec.Channel{From: "P2", To: "P1"}
	topo, err := spec.NewTopology([]spec.ProcID{"P1", "P2"}, []spec.Channel{p12, p21})
	require.NoError(t, err)
	long := `{"keys": [` + strings.Repeat(`"k", `, 9) + `"kkké"]}` // its 60th byte is within the é
	ob := core.OpaqueBalance
	locals := []core.LocalSnapshot{
		{Snap: 2, Proc: "P1", App: []byte("{\n  \"a\": \"1\"\n}"), State: spec.LocalState{Bal: ob - 2, Sent: 2}, Opaque: true,
			NextSend: []core.ChanSeq{{Chan: p12, Next: 3}},
			Chans:    []core.ChanRecording{{Chan: p21, Status: core.Done, NextRecv: 1}}},
		{Snap: 2, Proc: "P2", App: []byte(long), State: spec.LocalState{Bal: ob, Sent: 0, Rcvd: 0}, Opaque: true,
			NextSend: []core.ChanSeq{{Chan: p21, Next: 1}},
			Chans: []core.ChanRecording{{Chan: p12, Status: core.Done, NextRecv: 1, Msgs: []core.RecordedMsg{
				{Seq: 1, Amt: 1, Payload: []byte(`"b"`)}, {Seq: 2, Amt: 1, Payload: []byte(`"c"`)}}}}},
	}
	g, err := snapshot.Assemble(topo, 2, []snapshot.Part{snapshot.PartOf(locals[0], true), snapshot.PartOf(locals[1], false)})
	require.NoError(t, err)
	ls, _ := g.Local("P2")
	assert.True(t, ls.Opaque)
	assert.Equal(t, `snapshot 2 (initiated by P1)
  P1   state { "a": "1" }   (sent 2, received 0)
  P2   state {"keys": ["k", "k", "k", "k", "k", "k", "k", "k", "k", "kkk...   (sent 0, received 0)
  in flight P1->P2     2 msgs
`, g.String())

	g.Nodes[0].App = []byte{0xff, 0x00, 0x01}
	g.Chans = []snapshot.ChanState{{Chan: p12, NextRecv: 1, Msgs: []snapshot.Msg{{Seq: 1, Amt: 1}}}, {Chan: p21, NextRecv: 1}}
	assert.Equal(t, `snapshot 2 (initiated by P1)
  P1   state (3 bytes, not text)   (sent 2, received 0)
  P2   state {"keys": ["k", "k", "k", "k", "k", "k", "k", "k", "k", "kkk...   (sent 0, received 0)
  in flight P1->P2     1 msg
`, g.String())
}
