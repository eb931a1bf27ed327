package conformance

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// heldSend wraps a real transport: the first application frame sent
// after arm waits inside Send (signalling inside) until release is
// closed, then goes on to the real transport. It pins a transfer in the
// middle of the transport's Send: debited at the sender, not yet in
// flight.
type heldSend struct {
	transport.Transport
	armed   atomic.Bool
	inside  chan struct{}
	release chan struct{}
}

func (h *heldSend) Send(env wire.Envelope) error {
	if env.Frame.Kind == wire.KindApp && h.armed.CompareAndSwap(true, false) {
		close(h.inside)
		<-h.release
	}
	return h.Transport.Send(env)
}

// TestRuntimeStopTheWorldMidSend: a stop-the-world snapshot begun while
// a transfer is inside the transport's Send, on the in-memory and the
// TCP transport, on a ring. The baseline (Cluster.StopTheWorld) must wait
// for that transfer: its snapshot conserves the money (every balance
// recorded plus nothing in flight, its channels being empty, is the
// total), and its cut agrees with the nodes' counters. The transfer is
// released once StopTheWorld has returned or after a grace period, so a
// baseline that does wait costs that period; one that does not returns
// with the transfer debited and not counted.
func TestRuntimeStopTheWorldMidSend(t *testing.T) {
	topo := spec.Ring(3)
	for name, newTr := range map[string]func(*testing.T) transport.Transport{
		"memory": func(*testing.T) transport.Transport { return transport.NewMemory(topo, transport.MemoryConfig{}) },
		"tcp":    func(t *testing.T) transport.Transport { return loopbackTCP(t, topo) },
	} {
		t.Run(name, func(t *testing.T) {
			for round := range 2 {
				stwMidSend(t, topo, newTr(t), spec.SnapID(500+round))
			}
		})
	}
}

// stwGrace is how long a transfer is held inside Send while a
// stop-the-world waits for it (the correct baseline's cost per round).
const stwGrace = 150 * time.Millisecond

func stwMidSend(t *testing.T, topo *spec.Topology, inner transport.Transport, id spec.SnapID) {
	t.Helper()
	bal := map[spec.ProcID]int64{"P1": 100, "P2": 50, "P3": 25}
	var total int64
	for _, b := range bal {
		total += b
	}
	held := &heldSend{Transport: inner, inside: make(chan struct{}), release: make(chan struct{})}
	var nodeErrs errorLog
	c, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: topo, Transport: held,
		NewApp:  func(p spec.ProcID) (core.App, error) { return app.NewBank(bal[p]) },
		OnError: nodeErrs.add,
	})
	require.NoError(t, err)
	defer c.Stop(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, c.Send("P1", "P2", app.Transfer(3))) // the channels are up
	require.NoError(t, c.Quiesce(ctx))

	held.armed.Store(true)
	sent := make(chan error, 1)
	go func() { sent <- c.Send("P1", "P2", app.Transfer(7)) }()
	<-held.inside
	type result struct {
		g   snapshot.Global
		err error
	}
	stw := make(chan result, 1)
	go func() { g, err := c.StopTheWorld(ctx, id); stw <- result{g, err} }()
	var r result
	select {
	case r = <-stw: // it did not wait for the transfer inside Send
		close(held.release)
	case <-time.After(stwGrace):
		close(held.release)
		r = <-stw
	}
	require.NoError(t, r.err)
	require.NoError(t, <-sent)
	gs := r.g.Abstract()
	var got int64
	for _, p := range topo.Procs {
		got += gs.Procs[p].Bal
	}
	for _, ms := range gs.Chans {
		for _, m := range ms {
			got += m.Amt
		}
	}
	if got != total {
		t.Errorf("stop-the-world snapshot %d begun while a transfer of 7 was inside the transport's Send does not conserve money: it records %d, the total is %d (%s)",
			id, got, total, oneLine(FormatState(gs)))
	}
	for ch, k := range r.g.Cut() {
		if k.Sent != k.Got {
			t.Errorf("stop-the-world snapshot %d: channel %s's cut %s is not drained", id, ch, k)
		}
	}
	require.NoError(t, c.Quiesce(ctx))
	require.NoError(t, c.Stop(ctx))
	require.Empty(t, nodeErrs.all(), fmt.Sprintf("node errors (snapshot %d)", id))
}
