package core_test

import (
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

// tnet is a coretest.Net whose steps must succeed: a refused step fails
// the test, and every step's event must be valid and its frames sent by
// the stepping process.
type tnet struct {
	*coretest.Net
	t tb
}

func checked(t tb, n *coretest.Net, err error) *tnet {
	t.Helper()
	require.NoError(t, err)
	n.OnStep = func(st core.Step) {
		e := st.Event
		require.NoError(t, e.Validate(n.Topo), "event %s", e)
		for _, env := range st.Out {
			require.Equal(t, e.Proc, env.Chan.From, "frame sent by the stepping process")
		}
	}
	return &tnet{Net: n, t: t}
}

func newBankNet(t tb, topo *spec.Topology, bal map[spec.ProcID]int64) *tnet {
	t.Helper()
	n, err := coretest.NewBank(topo, bal)
	return checked(t, n, err)
}

func newTokenNet(t tb, topo *spec.Topology, holder spec.ProcID) *tnet {
	t.Helper()
	n, err := coretest.NewToken(topo, holder)
	return checked(t, n, err)
}

func mustNode(t tb, topo *spec.Topology, p spec.ProcID, a core.App) *core.Node {
	nd, err := core.New(core.Config{Topology: topo, Self: p, App: a})
	require.NoError(t, err)
	return nd
}

func (n *tnet) bank(p spec.ProcID) *app.Bank   { return n.Apps[p].(*app.Bank) }
func (n *tnet) token(p spec.ProcID) *app.Token { return n.Apps[p].(*app.Token) }

func (n *tnet) send(p, q spec.ProcID, payload []byte) spec.Event {
	n.t.Helper()
	st, err := n.Send(p, q, payload)
	require.NoError(n.t, err)
	return st.Event
}

func (n *tnet) initiate(p spec.ProcID, s spec.SnapID) spec.Event {
	n.t.Helper()
	st, err := n.Initiate(p, s)
	require.NoError(n.t, err)
	return st.Event
}

// deliver delivers the head of channel from->to.
func (n *tnet) deliver(from, to spec.ProcID) spec.Event {
	n.t.Helper()
	c := spec.Channel{From: from, To: to}
	st, err := n.Deliver(c)
	require.NoError(n.t, err, "deliver the head of %s", c)
	return st.Event
}

func (n *tnet) drain() {
	n.t.Helper()
	require.NoError(n.t, n.Drain())
}

// head describes channel c's queue, e.g. "[app#1 marker(1)]".
func (n *tnet) head(from, to spec.ProcID) string {
	var parts []string
	for _, f := range n.Queues[spec.Channel{From: from, To: to}] {
		parts = append(parts, f.String())
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// global assembles snapshot s from the nodes' current (untaken) views; it
// fails unless every node has completed s.
func (n *tnet) global(s spec.SnapID) spec.GlobalState {
	n.t.Helper()
	parts := map[spec.ProcID]core.LocalSnapshot{}
	for _, p := range n.Topo.Procs {
		ls, ok := n.Nodes[p].Snapshot(s)
		require.True(n.t, ok, "%s has not recorded snapshot %d", p, s)
		require.Equal(n.t, core.Complete, n.Nodes[p].Phase(s), "%s: snapshot %d", p, s)
		parts[p] = ls
	}
	return coretest.Assemble(parts)
}

// liveTotal is the money in the run now: balances plus transfers queued.
func (n *tnet) liveTotal() int64 {
	n.t.Helper()
	var t int64
	for _, p := range n.Topo.Procs {
		t += n.Nodes[p].State().Bal
	}
	for c, fs := range n.Queues {
		for _, f := range fs {
			if f.Kind == wire.KindApp {
				amt, err := core.AmountOf(n.Apps[c.To], f.Payload)
				require.NoError(n.t, err)
				t += amt
			}
		}
	}
	return t
}

// chanState is incoming channel c's status in snapshot s at nd and the
// messages recorded on it so far: idle before nd records s.
func chanState(t tb, nd *core.Node, s spec.SnapID, c spec.Channel) (core.ChanStatus, []spec.AppMsg) {
	t.Helper()
	ls, ok := nd.Snapshot(s)
	if !ok {
		require.Equal(t, core.Unknown, nd.Phase(s), "snapshot %d is released", s)
		return core.Idle, nil
	}
	r, ok := ls.Chan(c)
	require.True(t, ok, "%s is not an incoming channel of %s", c, ls.Proc)
	return r.Status, r.AppMsgs()
}
