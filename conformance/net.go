package conformance

import (
	"fmt"
	"sort"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// Net drives real impl/core nodes over a network the caller schedules one
// step at a time: one queue of frames per channel. Deliver takes a
// channel's head (FIFO); DeliverAt takes any frame, which breaks the
// paper's FIFO assumption and exists only to build counter-examples.
type Net struct {
	Topo    *spec.Topology
	Nodes   map[spec.ProcID]*core.Node
	Apps    map[spec.ProcID]core.App
	InitBal map[spec.ProcID]int64
	Queues  map[spec.Channel][]wire.Frame
	// Events lists every step in execution order (a causally consistent
	// order); Logs lists them per process.
	Events []spec.Event
	Logs   map[spec.ProcID][]spec.Event
	// Parts holds the local snapshots taken from the nodes, by id and process.
	Parts map[spec.SnapID]map[spec.ProcID]core.LocalSnapshot
	// Snaps maps each initiated snapshot to its initiator.
	Snaps map[spec.SnapID]spec.ProcID

	payload func(amount int64) ([]byte, error)
	source  string
}

// NewBankNet runs an impl/app Bank at every process with the given
// initial balances.
func NewBankNet(topo *spec.Topology, bal map[spec.ProcID]int64) (*Net, error) {
	n := newNet(topo, "bank")
	n.payload = func(a int64) ([]byte, error) { return app.Transfer(a), nil }
	for _, p := range topo.Procs {
		b, err := app.NewBank(bal[p])
		if err != nil {
			return nil, err
		}
		n.InitBal[p] = bal[p]
		if err := n.add(p, b); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// NewTokenNet runs an impl/app Token at every process; holder starts with
// the token. Its balance abstraction is 1 at the holder, 0 elsewhere.
func NewTokenNet(topo *spec.Topology, holder spec.ProcID) (*Net, error) {
	n := newNet(topo, "token")
	n.payload = func(a int64) ([]byte, error) {
		if a != 1 {
			return nil, fmt.Errorf("token ring: amount %d, the token is 1", a)
		}
		return app.TokenPayload, nil
	}
	for _, p := range topo.Procs {
		n.InitBal[p] = 0
		if p == holder {
			n.InitBal[p] = 1
		}
		if err := n.add(p, app.NewToken(p == holder)); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func newNet(topo *spec.Topology, kind string) *Net {
	return &Net{
		Topo:    topo,
		Nodes:   map[spec.ProcID]*core.Node{},
		Apps:    map[spec.ProcID]core.App{},
		InitBal: map[spec.ProcID]int64{},
		Queues:  map[spec.Channel][]wire.Frame{},
		Logs:    map[spec.ProcID][]spec.Event{},
		Parts:   map[spec.SnapID]map[spec.ProcID]core.LocalSnapshot{},
		Snaps:   map[spec.SnapID]spec.ProcID{},
		source:  "conformance.Net (impl/core, " + kind + ")",
	}
}

func (n *Net) add(p spec.ProcID, a core.App) error {
	nd, err := core.New(core.Config{Topology: n.Topo, Self: p, App: a})
	if err != nil {
		return err
	}
	n.Nodes[p], n.Apps[p] = nd, a
	return nil
}

// apply records a step's event and queues its frames.
func (n *Net) apply(st core.Step) spec.Event {
	n.Events = append(n.Events, st.Event)
	n.Logs[st.Event.Proc] = append(n.Logs[st.Event.Proc], st.Event)
	for _, env := range st.Out {
		n.Queues[env.Chan] = append(n.Queues[env.Chan], env.Frame)
	}
	return st.Event
}

// Send has p send amount to q. The node may refuse (an overdraft, no
// token); then nothing changes.
func (n *Net) Send(p, q spec.ProcID, amount int64) (spec.Event, error) {
	nd, ok := n.Nodes[p]
	if !ok {
		return spec.Event{}, fmt.Errorf("net: unknown process %q", string(p))
	}
	pl, err := n.payload(amount)
	if err != nil {
		return spec.Event{}, err
	}
	st, err := nd.SendApp(q, pl)
	if err != nil {
		return spec.Event{}, err
	}
	return n.apply(st), nil
}

// Initiate has p initiate snapshot s.
func (n *Net) Initiate(p spec.ProcID, s spec.SnapID) (spec.Event, error) {
	nd, ok := n.Nodes[p]
	if !ok {
		return spec.Event{}, fmt.Errorf("net: unknown process %q", string(p))
	}
	st, err := nd.Initiate(s)
	if err != nil {
		return spec.Event{}, err
	}
	if _, ok := n.Snaps[s]; !ok {
		n.Snaps[s] = p
	}
	return n.apply(st), nil
}

// Deliver hands the head of channel c to its receiver.
func (n *Net) Deliver(c spec.Channel) (spec.Event, error) { return n.DeliverAt(c, 0) }

// DeliverAt hands the i-th frame (from 0) of channel c to its receiver;
// i > 0 is a non-FIFO delivery. On error the frame stays queued.
func (n *Net) DeliverAt(c spec.Channel, i int) (spec.Event, error) {
	q := n.Queues[c]
	if i < 0 || i >= len(q) {
		return spec.Event{}, fmt.Errorf("net: channel %s holds %d frames, no frame %d", c, len(q), i)
	}
	st, err := n.Nodes[c.To].Deliver(wire.Envelope{Chan: c, Frame: q[i]})
	if err != nil {
		return spec.Event{}, err
	}
	_, _ = n.Drop(c, i)
	return n.apply(st), nil
}

// InFlight is the number of queued frames.
func (n *Net) InFlight() int {
	k := 0
	for _, q := range n.Queues {
		k += len(q)
	}
	return k
}

// Drain delivers heads, channel by channel in topology order, until every
// queue is empty.
func (n *Net) Drain() error {
	for n.InFlight() > 0 {
		for _, c := range n.Topo.Chans {
			if len(n.Queues[c]) > 0 {
				if _, err := n.Deliver(c); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Refusal is a frame its receiver refused (Err), which DrainDropping and
// the scenario scripts drop from its channel, or a head they do not
// deliver (Err nil), which stays queued.
type Refusal struct {
	Chan  spec.Channel
	Frame wire.Frame
	Err   error
}

func (r Refusal) String() string {
	if r.Err == nil {
		return fmt.Sprintf("%s on %s: not delivered", r.Frame, r.Chan)
	}
	return fmt.Sprintf("%s on %s: refused: %v", r.Frame, r.Chan, r.Err)
}

// Drop removes frame i (from 0) of channel c without delivering it.
func (n *Net) Drop(c spec.Channel, i int) (wire.Frame, error) {
	q := n.Queues[c]
	if i < 0 || i >= len(q) {
		return wire.Frame{}, fmt.Errorf("net: channel %s holds %d frames, no frame %d", c, len(q), i)
	}
	f := q[i]
	n.Queues[c] = append(append([]wire.Frame(nil), q[:i]...), q[i+1:]...)
	return f, nil
}

// DrainDropping delivers heads, channel by channel in topology order,
// until no frame can be delivered, as a reliable FIFO network would. A
// frame its receiver refuses is dropped and listed, and its channel is
// blocked from then on: the frames behind it stay queued (stranded), since
// delivering them would overtake a frame the spec's receiver must take
// first. admit, if not nil, is asked before each delivery; a head it does
// not admit blocks its channel too (and is listed with a nil Err). took,
// if not nil, sees each event delivered; false stops the drain. drained
// reports that every channel ended empty or blocked; it is false if took
// stopped the drain or it gave up after limit deliveries (nodes that keep
// sending).
func (n *Net) DrainDropping(limit int, admit func(spec.Channel, wire.Frame) bool, took func(spec.Event) bool) (refused []Refusal, drained bool) {
	blocked := map[spec.Channel]bool{}
	for k, moved := 0, true; moved; {
		moved = false
		for _, c := range n.Topo.Chans {
			q := n.Queues[c]
			if len(q) == 0 || blocked[c] {
				continue
			}
			if admit != nil && !admit(c, q[0]) {
				refused = append(refused, Refusal{Chan: c, Frame: q[0]})
				blocked[c] = true
				continue
			}
			if k++; k > limit {
				return refused, false
			}
			moved = true
			ev, err := n.Deliver(c)
			if err != nil {
				f, _ := n.Drop(c, 0)
				refused = append(refused, Refusal{Chan: c, Frame: f, Err: err})
				blocked[c] = true
				continue
			}
			if took != nil && !took(ev) {
				return refused, false
			}
		}
	}
	return refused, true
}

// Take collects every node's completed local snapshots into Parts; the
// nodes release them.
func (n *Net) Take() {
	for _, p := range n.Topo.Procs {
		for _, ls := range n.Nodes[p].TakeCompleted() {
			if n.Parts[ls.Snap] == nil {
				n.Parts[ls.Snap] = map[spec.ProcID]core.LocalSnapshot{}
			}
			n.Parts[ls.Snap][p] = ls
		}
	}
}

// Recorded takes completed local snapshots and returns the recorded global
// state of every snapshot complete at every process, as the nodes report it.
func (n *Net) Recorded() map[spec.SnapID]spec.GlobalState {
	n.Take()
	out := map[spec.SnapID]spec.GlobalState{}
	for s, parts := range n.Parts {
		if len(parts) == len(n.Topo.Procs) {
			out[s] = Assemble(parts)
		}
	}
	return out
}

// RecordedSnapshots takes completed local snapshots and returns every
// snapshot complete at every process as the nodes report it, by id: its
// initiator (from the Initiate steps seen), recorded state and cut seqs.
func (n *Net) RecordedSnapshots() []spec.RecordedSnapshot {
	n.Take()
	var out []spec.RecordedSnapshot
	for s, parts := range n.Parts {
		if len(parts) == len(n.Topo.Procs) {
			out = append(out, spec.NewRecordedSnapshot(s, n.Snaps[s], Assemble(parts), AssembleCut(parts)))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Snap < out[j].Snap })
	return out
}

// AssembleCut is one snapshot's cut seqs from its local parts (core.Cut).
func AssembleCut(parts map[spec.ProcID]core.LocalSnapshot) map[spec.Channel]spec.ChanCut {
	ls := make([]core.LocalSnapshot, 0, len(parts))
	for _, p := range parts {
		ls = append(ls, p)
	}
	return core.Cut(ls...)
}

// Assemble abstracts one snapshot's local parts to the spec's global state.
func Assemble(parts map[spec.ProcID]core.LocalSnapshot) spec.GlobalState {
	g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
	for p, ls := range parts {
		g.Procs[p] = ls.State
		for _, r := range ls.Chans {
			g.Chans[r.Chan] = r.AppMsgs()
		}
	}
	return g
}

// Trace is the run so far as a trace: its events in execution order, the
// initial balances, the initiators seen, and the recorded state of every
// snapshot the nodes completed.
func (n *Net) Trace(note string) spec.Trace {
	h := spec.Header{Topology: n.Topo, InitBal: map[spec.ProcID]int64{}, Source: n.source, Note: note}
	for p, b := range n.InitBal {
		h.InitBal[p] = b
	}
	if len(n.Snaps) > 0 {
		h.Snaps = map[spec.SnapID]spec.ProcID{}
		for s, p := range n.Snaps {
			h.Snaps[s] = p
		}
	}
	return spec.Trace{Header: h, Events: append([]spec.Event(nil), n.Events...), Recorded: n.RecordedSnapshots()}
}
