package runtime_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// A token node that receives a second token rejects the frame. The channel
// fails: reported once with its seq and reason, the rejected frame and
// every later one (a marker, another token) held instead of failing
// ErrSeq one by one; Quiesce, Collect and Stop name the channel.
func TestRejectedFrameFailsChannel(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(2)
	p1p2 := spec.Channel{From: "P1", To: "P2"}
	var (
		mu   sync.Mutex
		errs []error
	)
	cl, err := mwrt.NewCluster(mwrt.ClusterConfig{
		Topology: topo,
		// Both start with the token: the first one P1 passes is a second
		// token at P2.
		NewApp:    func(spec.ProcID) (core.App, error) { return app.NewToken(true), nil },
		Transport: transport.NewMemory(topo, transport.MemoryConfig{}),
		OnError:   func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
	})
	require.NoError(t, err)
	require.NoError(t, cl.Node("P1").SendApp("P2", app.TokenPayload))
	require.Eventually(t, func() bool { return len(cl.FailedChannels()) == 1 }, 10*time.Second, time.Millisecond) // waits as long as it takes; the bound only stops a hang

	// Later frames on the channel: a marker, and a token P1 got back.
	s, err := cl.Snapshot("P1")
	require.NoError(t, err)
	require.NoError(t, cl.Node("P2").SendApp("P1", app.TokenPayload)) // P2->P1 still works
	require.Eventually(t, func() bool {
		st, _ := cl.Node("P1").State()
		return st.Rcvd == 1
	}, 10*time.Second, time.Millisecond) // waits as long as it takes; the bound only stops a hang
	require.NoError(t, cl.Node("P1").SendApp("P2", app.TokenPayload))
	require.Eventually(t, func() bool { return len(cl.Node("P2").Held()) == 3 }, 10*time.Second, time.Millisecond) // waits as long as it takes; the bound only stops a hang

	f := cl.FailedChannels()[0]
	assert.Equal(t, p1p2, f.Chan)
	assert.Equal(t, uint64(1), f.Frame.Seq)
	assert.ErrorIs(t, f, mwrt.ErrChannelFailed)
	assert.ErrorIs(t, f, core.ErrApp)
	assert.Contains(t, f.Error(), "channel P1->P2 failed at seq 1")
	assert.Contains(t, f.Error(), "two tokens")
	held := cl.Node("P2").Held()
	assert.Equal(t, "P1->P2 app#1(7 bytes)", held[0].String())
	assert.Equal(t, "P1->P2 marker(1)", held[1].String())
	assert.Equal(t, "P1->P2 app#2(7 bytes)", held[2].String())
	st, err := cl.Node("P2").State()
	require.NoError(t, err)
	assert.Equal(t, 0, st.Rcvd, "nothing of the failed channel applied")
	e, n := cl.Node("P2").Errors()
	assert.Equal(t, 1, n, "reported once, not once per later frame: %v", e)
	mu.Lock()
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], mwrt.ErrChannelFailed)
	assert.NotErrorIs(t, errs[0], core.ErrSeq)
	mu.Unlock()

	// Quiesce sees the held frames and says why at once.
	ctx := ctxFor(t, 10*time.Second)
	err = cl.Quiesce(ctx)
	assert.NoError(t, ctx.Err(), "Quiesce returned only at its context's deadline")
	assert.ErrorIs(t, err, mwrt.ErrChannelFailed)
	assert.ErrorContains(t, err, "3 frames still in flight")
	assert.ErrorContains(t, err, "channel P1->P2 failed at seq 1")
	_, err = cl.StopTheWorld(ctxFor(t, 10*time.Second), 99)
	assert.ErrorIs(t, err, mwrt.ErrChannelFailed)

	// The snapshot's marker on P1->P2 is held: Collect reports it at once.
	ctx = ctxFor(t, 10*time.Second)
	_, err = cl.Collect(ctx, s)
	assert.NoError(t, ctx.Err(), "Collect returned only at its context's deadline")
	var inc *mwrt.IncompleteError
	require.ErrorAs(t, err, &inc)
	assert.ErrorIs(t, err, mwrt.ErrChannelFailed)
	assert.Equal(t, []spec.ProcID{"P2"}, inc.NeverRecorded)
	assert.Equal(t, []spec.Channel{{From: "P2", To: "P1"}, p1p2}, inc.Open)
	require.Len(t, inc.Failed, 1)
	assert.Equal(t, p1p2, inc.Failed[0].Chan)
	assert.Contains(t, err.Error(), "snapshot 1 incomplete: P2 never recorded, channel P2->P1 never closed, channel P1->P2 never closed (channel failed at seq 1: ")
	assert.True(t, strings.HasSuffix(err.Error(), "(two tokens))"), err.Error())

	err = cl.Stop(ctxFor(t, 5*time.Second))
	var rep *mwrt.StopReport
	require.ErrorAs(t, err, &rep)
	require.Len(t, rep.Failed, 1)
	assert.Equal(t, p1p2, rep.Failed[0].Chan)
	require.Len(t, rep.Undelivered, 3)
	assert.Equal(t, held, rep.Undelivered)
	assert.Equal(t, 1, rep.Errors)
	assert.Contains(t, err.Error(), "3 frames undelivered (P1->P2: 3)")
	assert.Contains(t, err.Error(), "channel P1->P2 failed at seq 1")
	assert.Contains(t, err.Error(), "1 node errors")
}

// A channel recorded with messages though nothing was in flight reports
// the empty range as such, not as "seqs 47..46".
func TestValidateEmptyRange(t *testing.T) {
	topo := spec.Ring(2)
	g := snapshot.Global{ID: 1, Topology: topo,
		Nodes: []snapshot.NodeState{
			{Proc: "P1", NextSend: []snapshot.ChanSeq{{Chan: spec.Channel{From: "P1", To: "P2"}, Next: 47}}},
			{Proc: "P2", NextSend: []snapshot.ChanSeq{{Chan: spec.Channel{From: "P2", To: "P1"}, Next: 1}}},
		},
		Chans: []snapshot.ChanState{
			{Chan: spec.Channel{From: "P1", To: "P2"}, NextRecv: 47, Msgs: []snapshot.Msg{{Seq: 47, Amt: 1}}},
			{Chan: spec.Channel{From: "P2", To: "P1"}, NextRecv: 1},
		},
	}
	err := g.Validate()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "47..46")
	assert.Contains(t, err.Error(), "1 messages recorded, but 0 were in flight across the cut (none: the receiver expected seq 47, the sender's next was seq 47)")
	g.Nodes[0].NextSend[0].Next = 48
	g.Chans[0].Msgs = nil
	assert.ErrorContains(t, g.Validate(), "0 messages recorded, but 1 were in flight across the cut (seq 47)")
	g.Nodes[0].NextSend[0].Next = 50
	assert.ErrorContains(t, g.Validate(), "0 messages recorded, but 3 were in flight across the cut (seqs 47..49)")
}
