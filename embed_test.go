package markerwave_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
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

	// A topology written as a literal is checked, not taken as it is: a
	// process listed twice used to panic in a node's goroutine ("close of
	// closed channel"), killing the service; Complete(0) panicked.
	for _, tc := range []struct {
		top  *markerwave.Topology
		want string
	}{
		{&markerwave.Topology{Procs: []markerwave.ProcID{"P1", "P1"}}, `markerwave: Config.Topology: topology: duplicate process id "P1"`},
		{&markerwave.Topology{Procs: []markerwave.ProcID{"P1"}, Chans: []markerwave.Channel{{From: "P1", To: "P9"}}}, `markerwave: Config.Topology: topology: channel P1->P9: unknown process "P9"`},
		{markerwave.Complete(0), "markerwave: Config.Topology: topology: no processes"},
		{markerwave.Complete(-1), "markerwave: Config.Topology: topology: no processes"},
	} {
		_, err := markerwave.Start(markerwave.Config{Topology: tc.top, NewApp: kvApps(false)})
		assert.EqualError(t, err, tc.want)
	}
}

// A topology written as a literal, valid, runs as NewTopology's would.
func TestStartLiteralTopology(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	top := &markerwave.Topology{Procs: []markerwave.ProcID{"P1", "P2"}, Chans: []markerwave.Channel{{From: "P1", To: "P2"}, {From: "P2", To: "P1"}}}
	c, err := markerwave.Start(markerwave.Config{Topology: top, NewApp: kvApps(false)})
	require.NoError(t, err)
	require.NoError(t, c.Send("P1", "P2", move("a", "2")))
	g, err := c.TakeSnapshot(ctx, "P1")
	require.NoError(t, err)
	assert.Len(t, g.Nodes, 2)
	require.NoError(t, c.Stop(ctx))
}

// Recover never takes a mistyped or broken store for a fresh start: a
// directory that does not exist (and is not created), one that is no
// store, a store of another topology, a damaged part with no older
// snapshot to fall back on, and a nil topology are errors saying so;
// a store whose only snapshot never completed is a fresh start (nil), as
// the spec's Recover goes back to the initial state.
func TestRecoverRefusesWhatItCannotUse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	absent := filepath.Join(t.TempDir(), "absent")
	_, err := markerwave.Recover(absent, markerwave.Complete(2))
	assert.ErrorContains(t, err, "no snapshot store at "+absent+": the directory does not exist")
	assert.NoDirExists(t, absent, "Recover creates nothing")

	foreign := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(foreign, "hosts"), nil, 0o644))
	_, err = markerwave.Recover(foreign, markerwave.Complete(2))
	assert.ErrorIs(t, err, store.ErrNotAStore)

	// one complete snapshot of a 2-process cluster
	dir := t.TempDir()
	c, err := markerwave.Start(markerwave.Config{Topology: markerwave.Complete(2), NewApp: kvApps(false), Store: dir})
	require.NoError(t, err)
	g, err := c.TakeSnapshot(ctx, "P1")
	require.NoError(t, err)
	require.NoError(t, c.Stop(ctx))

	_, err = markerwave.Recover(dir, nil)
	assert.EqualError(t, err, "markerwave: recover: markerwave: Config.Topology is required")
	from, err := markerwave.Recover(dir, markerwave.Complete(2))
	require.NoError(t, err)
	require.NotNil(t, from)
	assert.Equal(t, g.ID, from.ID)

	from, err = markerwave.Recover(dir, markerwave.Complete(3))
	assert.Nil(t, from)
	require.ErrorIs(t, err, markerwave.ErrUnrecoverable)
	assert.ErrorContains(t, err, fmt.Sprintf("snapshot %d: P3 holds no part of it; ", g.ID))
	assert.ErrorContains(t, err, "a snapshot of another topology (processes P1, P2)")

	part := filepath.Join(dir, "parts", fmt.Sprint(uint64(g.ID)), "P2.json")
	require.NoError(t, os.WriteFile(part, []byte("{}"), 0o644))
	from, err = markerwave.Recover(dir, markerwave.Complete(2))
	assert.Nil(t, from)
	require.ErrorIs(t, err, markerwave.ErrUnrecoverable)
	assert.ErrorContains(t, err, "P2's part is damaged")

	// a store holding only a part of a snapshot that never completed
	fresh := t.TempDir()
	st, err := store.Open(fresh)
	require.NoError(t, err)
	ls, ok := g.Local("P1")
	require.True(t, ok)
	_, err = st.SavePart(snapshot.PartOf(ls, true))
	require.NoError(t, err)
	from, err = markerwave.Recover(fresh, markerwave.Complete(2))
	assert.NoError(t, err, "nothing usable, nothing damaged: start fresh")
	assert.Nil(t, from)
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

// A crashed node's calls name it.
func TestCrashedNodeIsNamed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := markerwave.Start(markerwave.Config{Topology: markerwave.Complete(2), NewApp: kvApps(false)})
	require.NoError(t, err)
	require.NoError(t, c.Crash("P2"))
	err = c.Send("P2", "P1", move("a", "1"))
	assert.EqualError(t, err, "runtime: node stopped: P2")
	_, err = c.TakeSnapshot(ctx, "P2")
	assert.EqualError(t, err, "runtime: node stopped: P2")
	c.Stop(ctx)
}

// A transport carries one running cluster: Start on one a stopped
// cluster closed, or on one another cluster runs on, is refused naming
// the process whose inbox it is (it used to start, its sends vanishing
// or its frames crossing the other cluster's).
func TestStartRefusesATransportInUse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	top := markerwave.Complete(2)
	tr := transport.NewMemory(top, transport.MemoryConfig{})
	c, err := markerwave.Start(markerwave.Config{Topology: top, NewApp: kvApps(false), Transport: tr})
	require.NoError(t, err)
	_, err = markerwave.Start(markerwave.Config{Topology: top, NewApp: kvApps(false), Transport: tr})
	require.ErrorIs(t, err, transport.ErrInboxClaimed)
	assert.ErrorContains(t, err, "node P1: its transport's inbox: inbox already has a reader")
	require.NoError(t, c.Stop(ctx))

	_, err = markerwave.Start(markerwave.Config{Topology: top, NewApp: kvApps(false), Transport: tr})
	require.ErrorIs(t, err, transport.ErrClosed, "Stop closed the transport")
}

// A snapshot of the key-value store, an application that moves no
// quantity, prints each shard's state, not a balance and a total of the
// message counts its bal abstracts to (it printed "P1   balance
// 1099511627775" and "total 3298534883328 = ... in accounts").
func TestSnapshotStringOfAnOpaqueApp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := markerwave.Start(markerwave.Config{Topology: markerwave.Complete(3), NewApp: kvApps(false)})
	require.NoError(t, err)
	defer c.Stop(ctx)
	require.NoError(t, c.Send("P1", "P2", move("a", "1")))
	require.NoError(t, c.Quiesce(ctx))
	g, err := c.TakeSnapshot(ctx, "P3")
	require.NoError(t, err)
	assert.Equal(t, `snapshot 1 (initiated by P3)
  P1   state {"b":"2","c":"3"}   (sent 1, received 0)
  P2   state {"a":"1","d":"4"}   (sent 0, received 1)
  P3   state {}   (sent 0, received 0)
  in flight: nothing (all channels recorded empty)
`, g.String())
}
