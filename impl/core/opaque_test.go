package core_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/spec"
)

// opaqueLog is an application in no bank's terms: it keeps the payloads
// it received, and refuses to send "no".
type opaqueLog struct{ got []byte }

func (o *opaqueLog) Capture() ([]byte, error) { return append([]byte(nil), o.got...), nil }
func (o *opaqueLog) Restore(s []byte) error   { o.got = append([]byte(nil), s...); return nil }
func (o *opaqueLog) Apply(_ spec.ProcID, p []byte) error {
	o.got = append(o.got, p...)
	return nil
}

func (o *opaqueLog) Send(_ spec.ProcID, p []byte) error {
	if string(p) == "no" {
		return errors.New("refused")
	}
	return nil
}

// An opaque application is abstracted by counting messages: amount 1
// each, bal = OpaqueBalance + rcvd - sent; a refused send changes nothing;
// its local snapshot restores, and a checkpoint whose bal disagrees with
// its counters is refused.
func TestOpaqueAppCountsMessages(t *testing.T) {
	topo := spec.Complete(2)
	apps := map[spec.ProcID]core.App{"P1": &opaqueLog{}, "P2": &opaqueLog{}}
	n, err := coretest.New(topo, apps, nil)
	require.NoError(t, err)
	assert.Equal(t, core.OpaqueBalance, n.InitBal["P1"])
	amt, err := core.AmountOf(apps["P1"], []byte("x"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), amt)

	for _, p := range []string{"a", "b"} {
		_, err := n.Send("P1", "P2", []byte(p))
		require.NoError(t, err)
	}
	_, err = n.Send("P1", "P2", []byte("no"))
	require.ErrorIs(t, err, core.ErrApp)
	_, err = n.Initiate("P2", 1)
	require.NoError(t, err)
	require.NoError(t, n.Drain())
	assert.Equal(t, spec.LocalState{Bal: core.OpaqueBalance - 2, Sent: 2}, n.Nodes["P1"].State())
	assert.Equal(t, spec.LocalState{Bal: core.OpaqueBalance + 2, Rcvd: 2}, n.Nodes["P2"].State())

	n.Take()
	ls, ok := n.Parts[1]["P2"]
	require.True(t, ok, "P2 completed snapshot 1")
	cp := ls.Checkpoint()
	assert.Equal(t, spec.LocalState{Bal: core.OpaqueBalance}, cp.State, "P2 recorded before the two messages arrived")
	cfg := core.Config{Topology: topo, Self: "P2", App: &opaqueLog{got: []byte("stale")}}
	nd, err := core.Restore(cfg, cp)
	require.NoError(t, err)
	assert.Equal(t, cp.State, nd.State())

	cp.State.Bal++
	_, err = core.Restore(core.Config{Topology: topo, Self: "P2", App: &opaqueLog{}}, cp)
	assert.ErrorContains(t, err, "application state has balance 1099511627776, checkpoint says 1099511627777")
}
