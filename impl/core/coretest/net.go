// Package coretest drives impl/core nodes by hand: a Net holds one node
// per process and one FIFO queue of frames per channel, and the caller
// schedules every step. It is what impl/core's tests and the conformance
// suite (lockstep against the model, the article's scenarios, the mutant
// tests) run the core on, and a starting point for embedding the core:
// it does what a runtime does, with the network and the scheduling made
// explicit.
//
// Use it in this order:
//
//  1. Build a Net: NewBank or NewToken for the applications of impl/app,
//     New for any core.App.
//  2. Take steps: Send (or SendAmount) and Initiate step a node; Deliver
//     hands a channel's head frame to its receiver. Each step's event is
//     logged (Events, Logs) and its frames queued on their channels.
//     DeliverAt and Drop take any frame, breaking the FIFO assumption;
//     they exist to build counter-examples.
//  3. Drain (or DrainDropping) delivers until the network is empty.
//  4. Take collects the local snapshots the nodes completed into Parts;
//     Recorded and RecordedSnapshots assemble every snapshot complete at
//     every process, and Trace renders the run for spec.WriteTrace and the
//     conformance replay.
package coretest

import (
	"fmt"
	"sort"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// Net is a hand-scheduled network of core nodes. Its fields are the run
// so far; callers may read them, and tests may damage them to check that
// a checker notices.
type Net struct {
	Topo    *spec.Topology
	Nodes   map[spec.ProcID]*core.Node
	Apps    map[spec.ProcID]core.App
	InitBal map[spec.ProcID]int64 // each application's Balance at the start
	Queues  map[spec.Channel][]wire.Frame
	// Events lists every step in execution order (a causally consistent
	// order); Logs lists them per process.
	Events []spec.Event
	Logs   map[spec.ProcID][]spec.Event
	// Parts holds the local snapshots taken from the nodes, by id and process.
	Parts map[spec.SnapID]map[spec.ProcID]core.LocalSnapshot
	// Snaps maps each initiated snapshot to its initiator.
	Snaps map[spec.SnapID]spec.ProcID
	// Source names the implementation in Trace's header.
	Source string
	// OnStep, if not nil, sees every step taken, after its event is
	// logged and its frames queued.
	OnStep func(core.Step)

	encode  func(amount int64) ([]byte, error)
	markers map[markerKey]int
}

type markerKey struct {
	s spec.SnapID
	c spec.Channel
}

// New runs apps[p] at every process p of topo. encode, for SendAmount,
// turns an amount into the applications' payload; it may be nil.
func New(topo *spec.Topology, apps map[spec.ProcID]core.App, encode func(amount int64) ([]byte, error)) (*Net, error) {
	n := &Net{
		Topo:    topo,
		Nodes:   map[spec.ProcID]*core.Node{},
		Apps:    map[spec.ProcID]core.App{},
		InitBal: map[spec.ProcID]int64{},
		Queues:  map[spec.Channel][]wire.Frame{},
		Logs:    map[spec.ProcID][]spec.Event{},
		Parts:   map[spec.SnapID]map[spec.ProcID]core.LocalSnapshot{},
		Snaps:   map[spec.SnapID]spec.ProcID{},
		Source:  "coretest.Net (impl/core)",
		encode:  encode,
		markers: map[markerKey]int{},
	}
	for _, p := range topo.Procs {
		a, ok := apps[p]
		if !ok {
			return nil, fmt.Errorf("coretest: no application for process %q", string(p))
		}
		nd, err := core.New(core.Config{Topology: topo, Self: p, App: a})
		if err != nil {
			return nil, err
		}
		n.Nodes[p], n.Apps[p], n.InitBal[p] = nd, a, core.InitialBalance(a)
	}
	return n, nil
}

// NewBank runs an impl/app Bank at every process with the given initial
// balances (a process left out starts with 0); SendAmount sends transfers.
func NewBank(topo *spec.Topology, bal map[spec.ProcID]int64) (*Net, error) {
	apps := map[spec.ProcID]core.App{}
	for _, p := range topo.Procs {
		b, err := app.NewBank(bal[p])
		if err != nil {
			return nil, err
		}
		apps[p] = b
	}
	n, err := New(topo, apps, func(a int64) ([]byte, error) { return app.Transfer(a), nil })
	if err != nil {
		return nil, err
	}
	n.Source = "coretest.Net (impl/core, bank)"
	return n, nil
}

// NewToken runs an impl/app Token at every process; holder starts with
// the token. Its balance abstraction is 1 at the holder, 0 elsewhere, and
// SendAmount passes the token for amount 1.
func NewToken(topo *spec.Topology, holder spec.ProcID) (*Net, error) {
	apps := map[spec.ProcID]core.App{}
	for _, p := range topo.Procs {
		apps[p] = app.NewToken(p == holder)
	}
	n, err := New(topo, apps, func(a int64) ([]byte, error) {
		if a != 1 {
			return nil, fmt.Errorf("coretest: token ring: amount %d, the token is 1", a)
		}
		return app.TokenPayload, nil
	})
	if err != nil {
		return nil, err
	}
	n.Source = "coretest.Net (impl/core, token)"
	return n, nil
}

// record logs a step's event and queues its frames.
func (n *Net) record(st core.Step) core.Step {
	n.Events = append(n.Events, st.Event)
	n.Logs[st.Event.Proc] = append(n.Logs[st.Event.Proc], st.Event)
	for _, env := range st.Out {
		if env.Frame.Kind == wire.KindMarker {
			n.markers[markerKey{env.Frame.Snap, env.Chan}]++
		}
		n.Queues[env.Chan] = append(n.Queues[env.Chan], env.Frame)
	}
	if n.OnStep != nil {
		n.OnStep(st)
	}
	return st
}

func (n *Net) node(p spec.ProcID) (*core.Node, error) {
	nd, ok := n.Nodes[p]
	if !ok {
		return nil, fmt.Errorf("coretest: unknown process %q", string(p))
	}
	return nd, nil
}

// Send has p send payload to q (core.Node.SendApp). The node may refuse
// (an overdraft, no token); then nothing changes.
func (n *Net) Send(p, q spec.ProcID, payload []byte) (core.Step, error) {
	nd, err := n.node(p)
	if err != nil {
		return core.Step{}, err
	}
	st, err := nd.SendApp(q, payload)
	if err != nil {
		return core.Step{}, err
	}
	return n.record(st), nil
}

// SendAmount has p send amount to q, encoded as the Net's applications
// expect (a bank transfer, the token).
func (n *Net) SendAmount(p, q spec.ProcID, amount int64) (core.Step, error) {
	if n.encode == nil {
		return core.Step{}, fmt.Errorf("coretest: the net has no amount encoding: use Send")
	}
	pl, err := n.encode(amount)
	if err != nil {
		return core.Step{}, err
	}
	return n.Send(p, q, pl)
}

// Initiate has p initiate snapshot s (core.Node.Initiate).
func (n *Net) Initiate(p spec.ProcID, s spec.SnapID) (core.Step, error) {
	nd, err := n.node(p)
	if err != nil {
		return core.Step{}, err
	}
	st, err := nd.Initiate(s)
	if err != nil {
		return core.Step{}, err
	}
	if _, ok := n.Snaps[s]; !ok {
		n.Snaps[s] = p
	}
	return n.record(st), nil
}

// Deliver hands the head of channel c to its receiver (core.Node.Deliver).
// On error the frame stays queued.
func (n *Net) Deliver(c spec.Channel) (core.Step, error) { return n.DeliverAt(c, 0) }

// DeliverAt hands the i-th frame (from 0) of channel c to its receiver;
// i > 0 is a non-FIFO delivery. On error the frame stays queued.
func (n *Net) DeliverAt(c spec.Channel, i int) (core.Step, error) {
	q := n.Queues[c]
	if i < 0 || i >= len(q) {
		return core.Step{}, fmt.Errorf("coretest: channel %s holds %d frames, no frame %d", c, len(q), i)
	}
	nd, err := n.node(c.To)
	if err != nil {
		return core.Step{}, err
	}
	st, err := nd.Deliver(wire.Envelope{Chan: c, Frame: q[i]})
	if err != nil {
		return core.Step{}, err
	}
	_, _ = n.Drop(c, i)
	return n.record(st), nil
}

// Drop removes frame i (from 0) of channel c without delivering it.
func (n *Net) Drop(c spec.Channel, i int) (wire.Frame, error) {
	q := n.Queues[c]
	if i < 0 || i >= len(q) {
		return wire.Frame{}, fmt.Errorf("coretest: channel %s holds %d frames, no frame %d", c, len(q), i)
	}
	f := q[i]
	n.Queues[c] = append(append([]wire.Frame(nil), q[:i]...), q[i+1:]...)
	return f, nil
}

// InFlight is the number of queued frames.
func (n *Net) InFlight() int {
	k := 0
	for _, q := range n.Queues {
		k += len(q)
	}
	return k
}

// Busy lists the channels with frames queued, in topology order.
func (n *Net) Busy() []spec.Channel {
	var cs []spec.Channel
	for _, c := range n.Topo.Chans {
		if len(n.Queues[c]) > 0 {
			cs = append(cs, c)
		}
	}
	return cs
}

// MarkersSent is the number of markers for snapshot s the nodes have
// sent on channel c (the algorithm sends exactly one).
func (n *Net) MarkersSent(s spec.SnapID, c spec.Channel) int { return n.markers[markerKey{s, c}] }

// Drain delivers heads, channel by channel in topology order, until every
// queue is empty. It stops at the first delivery refused.
func (n *Net) Drain() error {
	for n.InFlight() > 0 {
		for _, c := range n.Topo.Chans {
			if len(n.Queues[c]) == 0 {
				continue
			}
			if _, err := n.Deliver(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// Refusal is a frame its receiver refused (Err), which DrainDropping
// drops from its channel, or a head it does not deliver (Err nil), which
// stays queued.
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
			r, ok := n.deliverOrDrop(c, took)
			if r != nil {
				refused = append(refused, *r)
				blocked[c] = true
			}
			if !ok {
				return refused, false
			}
		}
	}
	return refused, true
}

// deliverOrDrop delivers c's head, or drops it if its receiver refuses
// it, returning the refusal; ok is false if took, shown the event
// delivered, stops the drain.
func (n *Net) deliverOrDrop(c spec.Channel, took func(spec.Event) bool) (r *Refusal, ok bool) {
	st, err := n.Deliver(c)
	if err != nil {
		f, _ := n.Drop(c, 0)
		return &Refusal{Chan: c, Frame: f, Err: err}, true
	}
	return nil, took == nil || took(st.Event)
}

// Take collects every node's completed local snapshots into Parts; the
// nodes release them (core.Node.TakeCompleted).
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

// Trace is the run so far as a trace: its events in execution order, the
// initial balances, the initiators seen, and the recorded state of every
// snapshot the nodes completed (which it takes from them).
func (n *Net) Trace(note string) spec.Trace {
	h := spec.Header{Topology: n.Topo, InitBal: map[spec.ProcID]int64{}, Source: n.Source, Note: note}
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

// AssembleCut is one snapshot's cut seqs from its local parts (core.Cut).
func AssembleCut(parts map[spec.ProcID]core.LocalSnapshot) map[spec.Channel]spec.ChanCut {
	ls := make([]core.LocalSnapshot, 0, len(parts))
	for _, p := range parts {
		ls = append(ls, p)
	}
	return core.Cut(ls...)
}

// Suspect has p suspect q (core.Node.Suspect).
func (n *Net) Suspect(p, q spec.ProcID) (core.Step, error) {
	nd, err := n.node(p)
	if err != nil {
		return core.Step{}, err
	}
	st, err := nd.Suspect(q)
	if err != nil {
		return core.Step{}, err
	}
	return n.record(st), nil
}

// Abort has p abort snapshot s, cause's suspicion the reason
// (core.Node.Abort).
func (n *Net) Abort(p spec.ProcID, s spec.SnapID, cause spec.ProcID) (core.Step, error) {
	nd, err := n.node(p)
	if err != nil {
		return core.Step{}, err
	}
	st, err := nd.Abort(s, cause)
	if err != nil {
		return core.Step{}, err
	}
	return n.record(st), nil
}
