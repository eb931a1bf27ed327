package core_test

import (
	"fmt"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// fifoNet is a tiny in-test network: one FIFO queue per channel, cores
// stepped by hand.
// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

type fifoNet struct {
	t       tb
	topo    *spec.Topology
	nodes   map[spec.ProcID]*core.Node
	banks   map[spec.ProcID]*app.Bank
	tokens  map[spec.ProcID]*app.Token
	q       map[spec.Channel][]wire.Frame
	events  []spec.Event                 // in execution order
	logs    map[spec.ProcID][]spec.Event // per process
	markers map[snapChan]int             // markers emitted per (snap, channel)
	done    map[spec.SnapID]map[spec.ProcID]core.LocalSnapshot
}

type snapChan struct {
	s spec.SnapID
	c spec.Channel
}

func newNet(t tb, topo *spec.Topology) *fifoNet {
	return &fifoNet{
		t: t, topo: topo,
		nodes:   map[spec.ProcID]*core.Node{},
		banks:   map[spec.ProcID]*app.Bank{},
		tokens:  map[spec.ProcID]*app.Token{},
		q:       map[spec.Channel][]wire.Frame{},
		logs:    map[spec.ProcID][]spec.Event{},
		markers: map[snapChan]int{},
		done:    map[spec.SnapID]map[spec.ProcID]core.LocalSnapshot{},
	}
}

func newBankNet(t tb, topo *spec.Topology, bal map[spec.ProcID]int64) *fifoNet {
	n := newNet(t, topo)
	for _, p := range topo.Procs {
		b, err := app.NewBank(bal[p])
		require.NoError(t, err)
		n.banks[p] = b
		n.nodes[p] = mustNode(t, topo, p, b)
	}
	return n
}

func newTokenNet(t tb, topo *spec.Topology, holder spec.ProcID) *fifoNet {
	n := newNet(t, topo)
	for _, p := range topo.Procs {
		tk := app.NewToken(p == holder)
		n.tokens[p] = tk
		n.nodes[p] = mustNode(t, topo, p, tk)
	}
	return n
}

func mustNode(t tb, topo *spec.Topology, p spec.ProcID, a core.App) *core.Node {
	nd, err := core.New(core.Config{Topology: topo, Self: p, App: a})
	require.NoError(t, err)
	return nd
}

// apply records a successful step: its event, its frames.
func (n *fifoNet) apply(st core.Step) spec.Event {
	n.t.Helper()
	e := st.Event
	require.NoError(n.t, e.Validate(n.topo), "event %s", e)
	n.events = append(n.events, e)
	n.logs[e.Proc] = append(n.logs[e.Proc], e)
	for _, env := range st.Out {
		require.Equal(n.t, e.Proc, env.Chan.From, "frame sent by the stepping process")
		if env.Frame.Kind == wire.KindMarker {
			n.markers[snapChan{env.Frame.Snap, env.Chan}]++
		}
		n.q[env.Chan] = append(n.q[env.Chan], env.Frame)
	}
	return e
}

func (n *fifoNet) trySend(p, q spec.ProcID, payload []byte) (spec.Event, error) {
	st, err := n.nodes[p].SendApp(q, payload)
	if err != nil {
		return spec.Event{}, err
	}
	return n.apply(st), nil
}

func (n *fifoNet) send(p, q spec.ProcID, payload []byte) spec.Event {
	n.t.Helper()
	e, err := n.trySend(p, q, payload)
	require.NoError(n.t, err)
	return e
}

func (n *fifoNet) initiate(p spec.ProcID, s spec.SnapID) spec.Event {
	n.t.Helper()
	st, err := n.nodes[p].Initiate(s)
	require.NoError(n.t, err)
	return n.apply(st)
}

// deliver delivers the head of channel from->to.
func (n *fifoNet) deliver(from, to spec.ProcID) spec.Event {
	n.t.Helper()
	c := spec.Channel{From: from, To: to}
	require.NotEmpty(n.t, n.q[c], "channel %s is empty", c)
	f := n.q[c][0]
	st, err := n.nodes[to].Deliver(wire.Envelope{Chan: c, Frame: f})
	require.NoError(n.t, err, "deliver %s on %s", f, c)
	n.q[c] = n.q[c][1:]
	return n.apply(st)
}

// inFlight counts the frames queued on all channels.
func (n *fifoNet) inFlight() int {
	k := 0
	for _, fs := range n.q {
		k += len(fs)
	}
	return k
}

// head describes channel c's queue, e.g. "[app#1 marker(1)]".
func (n *fifoNet) head(from, to spec.ProcID) string {
	var parts []string
	for _, f := range n.q[spec.Channel{From: from, To: to}] {
		parts = append(parts, f.String())
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// drain delivers until every channel is empty, always taking the first
// non-empty channel in topology order.
func (n *fifoNet) drain() {
	n.t.Helper()
	for {
		moved := false
		for _, c := range n.topo.Chans {
			if len(n.q[c]) > 0 {
				n.deliver(c.From, c.To)
				moved = true
				break
			}
		}
		if !moved {
			return
		}
	}
}

// take collects every node's completed local snapshots.
func (n *fifoNet) take() {
	for _, p := range n.topo.Procs {
		for _, ls := range n.nodes[p].TakeCompleted() {
			if n.done[ls.Snap] == nil {
				n.done[ls.Snap] = map[spec.ProcID]core.LocalSnapshot{}
			}
			n.done[ls.Snap][p] = ls
		}
	}
}

// global assembles snapshot s from the nodes' current (untaken) views; it
// fails unless every node has completed s.
func (n *fifoNet) global(s spec.SnapID) spec.GlobalState {
	n.t.Helper()
	parts := map[spec.ProcID]core.LocalSnapshot{}
	for _, p := range n.topo.Procs {
		ls, ok := n.nodes[p].Snapshot(s)
		require.True(n.t, ok, "%s has not recorded snapshot %d", p, s)
		require.Equal(n.t, core.Complete, n.nodes[p].Phase(s), "%s: snapshot %d", p, s)
		parts[p] = ls
	}
	return assemble(parts)
}

func assemble(parts map[spec.ProcID]core.LocalSnapshot) spec.GlobalState {
	g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
	for p, ls := range parts {
		g.Procs[p] = ls.State
		for _, r := range ls.Chans {
			g.Chans[r.Chan] = r.AppMsgs()
		}
	}
	return g
}

// liveTotal is the money in the run now: balances plus transfers queued.
func (n *fifoNet) liveTotal() int64 {
	n.t.Helper()
	var t int64
	for _, p := range n.topo.Procs {
		t += n.nodes[p].State().Bal
	}
	for _, fs := range n.q {
		for _, f := range fs {
			if f.Kind == wire.KindApp {
				t += amountOf(n.t, f.Payload)
			}
		}
	}
	return t
}

// amountOf abstracts a bank or token payload.
func amountOf(t tb, p []byte) int64 {
	t.Helper()
	if string(p) == string(app.TokenPayload) {
		return 1
	}
	amt, err := app.DecodeTransfer(p)
	require.NoError(t, err)
	return amt
}

// fingerprint renders everything observable about a node, to check that
// a failed step changed nothing.
func fingerprint(nd *core.Node, snaps ...spec.SnapID) string {
	var b strings.Builder
	fmt.Fprintf(&b, "state=%+v clock=%v steps=%d active=%v done=%d\n", nd.State(), nd.Clock(), nd.Steps(), nd.Active(), nd.CompletedCount())
	for _, p := range nd.Topology().Procs {
		s, ok := nd.NextSendSeq(p)
		r, ok2 := nd.NextRecvSeq(p)
		fmt.Fprintf(&b, "%s: send=%d/%v recv=%d/%v\n", p, s, ok, r, ok2)
	}
	for _, s := range snaps {
		ls, ok := nd.Snapshot(s)
		fmt.Fprintf(&b, "snap %d: phase=%s ok=%v %+v\n", s, nd.Phase(s), ok, ls)
	}
	return b.String()
}
