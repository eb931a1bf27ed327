package snapshot_test

import (
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
