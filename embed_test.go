package markerwave_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// A bug planted in the example store (a handoff keeps the sender's copy)
// is reported by the invariant, with the snapshot that shows it, over
// loopback TCP; the snapshot is not saved.
func TestBrokenInvariantIsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	top := markerwave.Complete(3)
	addrs := map[spec.ProcID]string{}
	for _, p := range top.Procs {
		addrs[p] = "127.0.0.1:0"
	}
	tr, err := transport.NewTCP(top, transport.TCPConfig{Addrs: addrs})
	require.NoError(t, err)
	dir := t.TempDir()
	c, err := markerwave.Start(markerwave.Config{
		Topology: top, NewApp: kvApps(true), Transport: tr, Store: dir,
		Invariants: []markerwave.Invariant{oneOwner("a", "b", "c", "d")},
	})
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Stop(ctx)) }()

	require.NoError(t, c.Send("P1", "P2", move("a", "1")))
	g, err := c.TakeSnapshot(ctx, "P1")
	var ie *markerwave.InvariantError
	require.ErrorAs(t, err, &ie, "the planted bug must be reported")
	var one *spec.InvariantError
	require.True(t, errors.As(err, &one))
	assert.Equal(t, "every key has exactly one owner", one.Invariant)
	assert.Equal(t, g.ID, ie.Global.ID, "the snapshot that shows it comes with the error")
	p1, _ := g.Node("P1")
	assert.JSONEq(t, `{"a":"1","b":"2","c":"3"}`, string(p1.App), "P1 kept its copy of a")
	msg := err.Error()
	assert.Contains(t, msg, `breaks invariant "every key has exactly one owner": key "a" has 2 owners [P1 `)
	assert.Contains(t, msg, `P1 state {"a":"1","b":"2","c":"3"}`, "the report shows the snapshot")

	from, err := markerwave.Recover(dir, top)
	require.NoError(t, err)
	assert.Nil(t, from, "a snapshot that breaks an invariant is not saved, so never recovered from")
}

// Start names what its config lacks.
func TestStartNamesBadConfig(t *testing.T) {
	_, err := markerwave.Start(markerwave.Config{NewApp: kvApps(false)})
	assert.EqualError(t, err, "markerwave: Config.Topology is required")
	_, err = markerwave.Start(markerwave.Config{Topology: markerwave.Complete(2)})
	assert.EqualError(t, err, "markerwave: Config.NewApp is required")
}

// A fresh start on a store that holds snapshots numbers its own after
// them: nothing saved is overwritten or refused.
func TestFreshStartKeepsStoredSnapshots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := t.TempDir()
	cfg := markerwave.Config{Topology: markerwave.Complete(3), NewApp: kvApps(false), Store: dir,
		Invariants: []markerwave.Invariant{oneOwner("a", "b", "c", "d")}}
	var ids []markerwave.SnapID
	for range 2 {
		c, err := markerwave.Start(cfg)
		require.NoError(t, err)
		require.NoError(t, c.Send("P1", "P3", move("c", "3")))
		g, err := c.TakeSnapshot(ctx, "P2")
		require.NoError(t, err)
		ids = append(ids, g.ID)
		require.NoError(t, c.Stop(ctx))
	}
	assert.Equal(t, []markerwave.SnapID{1, 2}, ids)
	from, err := markerwave.Recover(dir, cfg.Topology)
	require.NoError(t, err)
	require.NotNil(t, from)
	assert.Equal(t, markerwave.SnapID(2), from.ID)
}

// With a failure detector, a snapshot that waits for a crashed node is
// aborted, naming the node, within the detection bound (plus scheduling
// slack on a loaded machine), instead of waiting for ctx.
func TestCrashedNodeAbortsSnapshot(t *testing.T) {
	det := markerwave.DetectorConfig{Interval: 20 * time.Millisecond, Timeout: 400 * time.Millisecond}
	c, err := markerwave.Start(markerwave.Config{
		Topology: markerwave.Complete(3), NewApp: kvApps(false), Detector: det,
		Invariants: []markerwave.Invariant{oneOwner("a", "b", "c", "d")},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() {
		// Frames to the crashed P3 are never delivered: Stop waits only
		// briefly for them, then reports them.
		stopCtx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := c.Stop(stopCtx)
		if err != nil {
			assert.Contains(t, err.Error(), "P3")
		}
	}()
	_, err = c.TakeSnapshot(ctx, "P1")
	require.NoError(t, err, "no failure yet")

	require.NoError(t, c.Crash("P3"))
	_, err = c.TakeSnapshot(ctx, "P1")
	var ab *markerwave.AbortedError
	require.ErrorAs(t, err, &ab, "a snapshot waiting for the crashed P3: %v", err)
	assert.Equal(t, []spec.ProcID{"P3"}, ab.Causes())
	assert.NoError(t, ctx.Err(), "aborted before the context ended")
	assert.EqualError(t, c.Crash("P9"), `markerwave: crash: unknown process "P9"`)
}
