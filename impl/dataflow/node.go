package dataflow

import (
	"errors"
	"fmt"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// Item is an element of an edge's queue (lines 78-79): a barrier, or a
// record: its source (a node index), its number there, how many times it
// went round a cycle, and Seq, its number on the edge it travels (the
// k-th record sent on an edge has Seq k: the channel's sequence number,
// the spec's ghost eseq). A barrier carries Snap, the id of its snapshot
// (1, 2, ... in the order the sources inject them; the spec's one
// snapshot is 1).
type Item struct {
	Barrier bool
	Src     int
	I       int
	Hops    int
	Seq     int
	Val     int64 // the payload, which the Logic computes; the spec has none
	Snap    int   // a barrier's snapshot id
}

// Logic is what a node computes. The protocol never looks inside: it
// records the state Save returns and restores it with Load. A nil Logic
// sends every record on unchanged, on its only forward output, and has
// no state: the spec's nodes, which only count.
type Logic interface {
	// Route is the forward output (0 to Graph.Ports-1, in the order of
	// Out) record r leaves on, when it does not go round a cycle. It must
	// not change the state: the step may yet be refused.
	Route(r Item) int
	// Apply processes record r (at a source, the record it emits, Val 0)
	// and returns the value it sends on (ignored at the sink).
	Apply(r Item) int64
	// Save returns a copy of the state; Load puts one back, or says why
	// it cannot (a state some other logic saved).
	Save() any
	Load(state any) error
}

// Key is a record's identity (Key, line 81): its source and its number
// there.
type Key struct{ Src, I int }

// Status is an input's recording status (Status, line 82): spec's one
// type, which the model and the Chandy-Lamport core use too.
type Status = spec.Status

// The statuses (spec.Idle, spec.Recording, spec.Done).
const (
	Idle      = spec.Idle
	Recording = spec.Recording
	Done      = spec.Done
)

// Action names a step: the actions of tla/BarrierSnapshots.tla (lines
// 169-275).
type Action uint8

// The steps.
const (
	ActEmit        Action = iota // Emit(s), line 169
	ActInject                    // Inject(s), line 279
	ActProcess                   // Process(e), line 278
	ActRecvBarrier               // RecvBarrier(e), line 280
	ActTimeout                   // Timeout(n), tla/BarrierAdaptive.tla line 125
	ActTimeoutOut                // TimeoutOut(n), tla/BarrierAdaptive.tla line 175
)

func (a Action) String() string {
	return [...]string{"Emit", "Inject", "Process", "RecvBarrier", "Timeout", "TimeoutOut"}[a]
}

// The reasons a step is refused: each is an enabling conjunct of the
// spec's action that is false. A refused step changes nothing.
var (
	ErrNotSource       = errors.New("not a source")                                            // s \in Src (lines 283-284)
	ErrNotInput        = errors.New("not an input of this node")                               // e \in Edge with e[2] = n
	ErrBudgetSpent     = errors.New("the source has emitted its budget")                       // emitted[s] < Budget[s], line 172
	ErrNoRoom          = errors.New("the output buffer is full (backpressure)")                // Room(e), lines 173, 198
	ErrAlreadyRecorded = errors.New("the source has already injected its barrier")             // s \notin recorded, line 231
	ErrNotRecord       = errors.New("the item is a barrier")                                   // r.kind = "rec", line 192
	ErrBlocked         = errors.New("the input is blocked by alignment")                       // ~(... e \in bar[n]), line 193
	ErrNotBarrier      = errors.New("the item is a record")                                    // Head(q[e]).kind = "barrier", line 246
	ErrEmpty           = errors.New("the queue is empty")                                      // q[e] # <<>>, lines 191, 245
	ErrBadItem         = errors.New("the record is not one this graph can carry")              // Item, lines 315-316
	ErrSeq             = errors.New("the record is out of order on its edge (FIFO is broken)") // the channels are FIFO
	ErrRoute           = errors.New("the logic routed the record to an output the node does not have")
	// Successive snapshots (Graph.Successive), outside the spec: a node
	// starts snapshot k+1 only once its part of snapshot k is complete,
	// and barriers come in the order of their snapshots.
	ErrPrevious     = errors.New("the node's part of the previous snapshot is not complete")
	ErrBarrierOrder = errors.New("the barrier is not of the node's current or next snapshot")
)

// Error is a refused step: which node, which step, which edge (-1 for a
// source's steps) and why (errors.Is with the Err values).
type Error struct {
	Node   string
	Action Action
	Edge   string
	Err    error
}

func (e *Error) Error() string {
	if e.Edge == "" {
		return fmt.Sprintf("%s at %s: %v", e.Action, e.Node, e.Err)
	}
	return fmt.Sprintf("%s(%s) at %s: %v", e.Action, e.Edge, e.Node, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Step is what a step did: the action, the edge it took an item off (-1
// for Emit and Inject), and Recorded when the node recorded its state in
// it (its part of the snapshot is then in Part).
type Step struct {
	Action   Action
	Edge     int
	Recorded bool
}

// Node is one node of a dataflow graph: a source, an operator or the sink.
// It owns its output buffers: the queue of each of its outputs is its
// buffer, which the receiver takes items from (the spec joins the
// sender's output buffer and the receiver's input buffer into one FIFO
// queue; here it lives at the sender, and Head/Pop hand it over). It has
// no goroutines, clocks or I/O; see doc.go for the order of calls.
type Node struct {
	g     *Graph
	id    int
	logic Logic

	emitted int      // emitted[s] (sources)
	cnt     int      // cnt[n] (operators and the sink)
	sink    bool     // the node is the sink
	out     []Key    // out (the sink): the records it received, in order (Output counts them)
	q       [][]Item // q[e] for e in Out(n), indexed by edge (nil elsewhere)
	nSent   []int    // records sent on each output
	nRcvd   []int    // records taken off each input

	snap     int      // the snapshot the fields below are of (0: none yet)
	bar      []bool   // bar[n]: the inputs whose barrier arrived
	recorded bool     // n \in recorded
	recChan  []Status // recChan[e] for e in In(n)
	logged   [][]Item // records taken off an input while it was recording
	part     *Part    // this node's part of the snapshot, once recorded
	// tla/BarrierAdaptive.tla's variables (lines 56-59), for the current
	// snapshot: mode[n] = "unaligned", reported[n], cutAligned[n].
	switched   bool
	reported   SnapType
	cutAligned bool
	// barOut is the number of outputs on which the barrier of the current
	// snapshot is still queued after the node recorded aligned: a
	// TimeoutOut is possible only while it is not 0.
	barOut int

	tracer *Tracer // nil: no trace (trace.go)
}

// New returns node id of g, computing logic (nil: count only), in the
// initial state (Init, lines 149-166).
func New(g *Graph, id int, logic Logic) (*Node, error) {
	if id < 0 || id >= len(g.Nodes) {
		return nil, fmt.Errorf("dataflow: the graph has no node %d", id)
	}
	e := len(g.Edges)
	n := &Node{g: g, id: id, logic: logic, q: make([][]Item, e), nSent: make([]int, e), nRcvd: make([]int, e),
		bar: make([]bool, e), recChan: make([]Status, e), logged: make([][]Item, e)}
	n.sink = g.Nodes[id].Kind == Sink
	return n, nil
}

func (n *Node) refuse(a Action, e int, err error) error {
	x := &Error{Node: n.g.Nodes[n.id].Name, Action: a, Err: err}
	if e >= 0 && e < len(n.g.Edges) {
		x.Edge = n.g.EdgeName(e)
	} else if e >= 0 {
		x.Edge = fmt.Sprintf("edge %d", e)
	}
	return x
}

// ID is the node's index in the graph.
func (n *Node) ID() int { return n.id }

// Emit mirrors Emit(s) (lines 169-179): the source emits its next record
// onto its output buffer, if the buffer has room.
func (n *Node) Emit() (Step, error) {
	if n.g.Nodes[n.id].Kind != Source {
		return Step{}, n.refuse(ActEmit, -1, ErrNotSource)
	}
	if n.emitted >= n.g.Nodes[n.id].Budget {
		return Step{}, n.refuse(ActEmit, -1, ErrBudgetSpent)
	}
	r := Item{Src: n.id, I: n.emitted + 1}
	e, ok := n.route(r)
	if !ok {
		return Step{}, n.refuse(ActEmit, -1, ErrRoute)
	}
	if !n.g.room(e, len(n.q[e])) {
		return Step{}, n.refuse(ActEmit, -1, ErrNoRoom)
	}
	n.emitted++
	r.Val = n.apply(r)
	n.send(e, r)
	return n.observe(Step{Action: ActEmit, Edge: -1}, e, n.q[e][len(n.q[e])-1]), nil
}

// route is the output record r leaves on (Route(n, r), lines 86-88).
func (n *Node) route(r Item) (int, bool) {
	port := 0
	if n.logic != nil {
		port = n.logic.Route(r)
	}
	if n.g.backOut[n.id] < 0 || r.Hops >= n.g.Iter {
		if port < 0 || port >= n.g.Ports(n.id) {
			return 0, false
		}
	}
	return n.g.Route(n.id, r.Hops, port), true
}

// apply runs the logic on record r: the value it sends on.
func (n *Node) apply(r Item) int64 {
	if n.logic == nil {
		return r.Val
	}
	return n.logic.Apply(r)
}

// send appends record r to output e's buffer with its sequence number.
func (n *Node) send(e int, r Item) {
	n.nSent[e]++
	r.Seq = n.nSent[e]
	n.q[e] = append(n.q[e], r)
}

// Inject mirrors Inject(s) (line 279), InjectV(s, TRUE) (lines
// 230-234): the source records its offset and sends its barrier. With Graph.Successive each Inject starts
// the source's next snapshot (its id one more than the last); without,
// the source injects once, as in the spec.
func (n *Node) Inject() (Step, error) {
	if n.g.Nodes[n.id].Kind != Source {
		return Step{}, n.refuse(ActInject, -1, ErrNotSource)
	}
	if n.recorded && !n.g.Successive {
		return Step{}, n.refuse(ActInject, -1, ErrAlreadyRecorded)
	}
	n.next()
	n.record()
	return n.observe(Step{Action: ActInject, Edge: -1, Recorded: true}, -1, Item{Barrier: true}), nil
}

// next starts the node's next snapshot: the spec's per-snapshot variables
// (bar, recorded, recChan, the logged channel state) back to their
// initial values (Init, lines 149-166), the snapshot id one more. The
// node's own state (emitted, cnt, out, the logic's) and its buffers carry
// on: snapshot k+1 starts from where the run is, not from Init.
func (n *Node) next() {
	n.snap++
	n.recorded, n.part = false, nil
	n.switched, n.reported, n.cutAligned, n.barOut = false, TypeNone, false, 0
	clear(n.bar)
	clear(n.recChan)
	clear(n.logged)
}

// Snap is the id of the node's current snapshot: the last one it started
// (0 before any).
func (n *Node) Snap() int { return n.snap }

// CanTake reports whether Process would take a record off input e now,
// and if not why: the alignment block, or a full output (ErrNoRoom needs
// the record, to know its route; CanTake checks the forward output and
// the back-edge both). Runtimes use it to leave records in the sender's
// buffer (backpressure) instead of popping and refusing them.
func (n *Node) CanTake(e int) error {
	if !n.isInput(e) {
		return ErrNotInput
	}
	if n.blocked(e) {
		return ErrBlocked
	}
	return nil
}

// isInput reports e \in In(n) (line 56).
func (n *Node) isInput(e int) bool {
	return e >= 0 && e < len(n.g.Edges) && n.g.Edges[e].To == n.id
}

// blocked is the alignment conjunct of ProcessV (line 193), Mode =
// "aligned" in the adaptive mode too (tla/BarrierAdaptive.tla line 52).
func (n *Node) blocked(e int) bool {
	return n.g.aligns() && !n.recorded && n.bar[e]
}

// Process mirrors Process(e) (line 278), ProcessV(e, TRUE, TRUE) (lines
// 186-208): the node takes record r,
// the head of input e, counts it, and sends it on its route (the sink
// adds it to its output). An aligned node that has not recorded takes
// nothing off an input whose barrier has arrived. A record taken off an
// input that is recording joins that input's channel state.
func (n *Node) Process(e int, r Item) (Step, error) {
	if err := n.canProcess(e, r); err != nil {
		return Step{}, n.refuse(ActProcess, e, err)
	}
	if err := n.pass(r); err != nil {
		return Step{}, n.refuse(ActProcess, e, err)
	}
	n.cnt++
	n.nRcvd[e]++
	if n.recChan[e] == Recording {
		n.logged[e] = append(n.logged[e], r)
	}
	return n.observe(Step{Action: ActProcess, Edge: e}, e, r), nil
}

// canProcess is the enabling condition of ProcessV(e, TRUE, TRUE) (lines
// 191-193)
// for record r at the head of e: e is an input, r is a record of the
// graph's, the next in e's order, and e is not blocked.
func (n *Node) canProcess(e int, r Item) error {
	switch {
	case !n.isInput(e):
		return ErrNotInput
	case r.Barrier:
		return ErrNotRecord
	case !n.g.isRecord(r):
		return ErrBadItem
	case r.Seq != n.nRcvd[e]+1:
		return ErrSeq
	case n.blocked(e):
		return ErrBlocked
	}
	return nil
}

// isRecord reports whether r could be a record of g: the I-th of a
// source's Budget[s] (line 49), gone round a cycle at most Iter times.
func (g *Graph) isRecord(r Item) bool {
	return r.Src >= 0 && r.Src < len(g.Nodes) && g.Nodes[r.Src].Kind == Source &&
		r.I >= 1 && r.I <= g.Nodes[r.Src].Budget && r.Hops >= 0 && r.Hops <= g.Iter
}

// pass does what Process(e) does with record r (lines 194-201): the sink
// adds it to its output; another node sends the logic's value on r's
// route, one hop more if the route is the back-edge (ErrRoute, ErrNoRoom
// when it cannot, changing nothing).
func (n *Node) pass(r Item) error {
	if n.sink {
		n.out = append(n.out, Key{r.Src, r.I})
		n.apply(r)
		return nil
	}
	t, ok := n.route(r)
	if !ok {
		return ErrRoute
	}
	if !n.g.room(t, len(n.q[t])) {
		return ErrNoRoom
	}
	r2 := r
	r2.Val = n.apply(r)
	if n.g.Edges[t].Back {
		r2.Hops++
	}
	n.send(t, r2)
	return nil
}

// RecvBarrier mirrors RecvBarrier(e) (line 280), RecvBarrierV(e, TRUE,
// TRUE) (lines 241-260), and in the
// adaptive mode RecvBarrierA(e) (tla/BarrierAdaptive.tla lines 88-95,
// report): the node takes
// barrier b, the head of input e. If it has recorded, e's recording is
// done. Otherwise it records now if it is unaligned (or Chandy-Lamport), or aligned and every
// input that is not a back-edge has delivered its barrier: the inputs
// whose barrier has arrived are done, the others start recording. Else e
// stays blocked until then.
//
// A barrier of the node's next snapshot (b.Snap one more than Snap)
// starts that snapshot (see next), once the node's part of the current
// one is complete (else ErrPrevious: e stays blocked until then); from
// there the steps are the spec's again.
func (n *Node) RecvBarrier(e int, b Item) (Step, error) {
	if err := n.admitBarrier(e, b); err != nil {
		return Step{}, n.refuse(ActRecvBarrier, e, err)
	}
	n.bar[e] = true
	switch {
	case n.recorded:
		n.recChan[e] = Done
	case !n.g.aligns() || n.g.aligned(n.id, n.bar):
		n.startRecording()
		n.report()
		n.record()
		return n.observe(Step{Action: ActRecvBarrier, Edge: e, Recorded: true}, e, Item{Barrier: true}), nil
	}
	return n.observe(Step{Action: ActRecvBarrier, Edge: e}, e, Item{Barrier: true}), nil
}

// admitBarrier checks that barrier b may be taken off e: e is an input
// and b is the barrier of the current snapshot not yet arrived on e (the
// spec's one), or of the next, which it then starts (next).
func (n *Node) admitBarrier(e int, b Item) error {
	switch {
	case !n.isInput(e):
		return ErrNotInput
	case !b.Barrier:
		return ErrNotBarrier
	case b.Snap == n.snap && !n.bar[e]:
	case b.Snap == n.snap+1 && (n.snap == 0 || n.Done()):
		n.next()
	case b.Snap == n.snap+1:
		return ErrPrevious
	default:
		return ErrBarrierOrder
	}
	return nil
}

// startRecording sets recChan as RecvBarrier does when the node records
// (lines 254-256): the inputs whose barrier has arrived are done, the
// others start recording.
func (n *Node) startRecording() {
	for _, d := range n.g.in[n.id] {
		if n.bar[d] {
			n.recChan[d] = Done
		} else {
			n.recChan[d] = Recording
		}
	}
}

// Take is Process or RecvBarrier, as item it is a record or a barrier:
// the step for the item at the head of input e.
func (n *Node) Take(e int, it Item) (Step, error) {
	if it.Barrier {
		return n.RecvBarrier(e, it)
	}
	return n.Process(e, it)
}

// record mirrors RecordNode(n) (lines 211-218) and SendBarriers(n, q,
// TRUE) (lines 222-227): the node records its state and sends its barrier
// on every output, behind the queued records (aligned, and
// Chandy-Lamport) or ahead of them, persisting what it overtakes
// (unaligned). An unaligned barrier overtakes records only: it stays
// behind the barriers of earlier snapshots still queued (the spec's one
// snapshot has none), so barriers keep their order on every edge.
func (n *Node) record() {
	n.recorded = true
	p := &Part{Node: n.id, Snap: n.snap, Emitted: n.emitted, Cnt: n.cnt, Out: Counts{slices.Clip(n.out)},
		State: n.save(), Type: n.reported, Switched: n.switched,
		CutSent: map[int]int{}, CutRcvd: map[int]int{}, Overtaken: map[int][]Item{}}
	bar := Item{Barrier: true, Snap: n.snap}
	for _, e := range n.g.out[n.id] {
		p.CutSent[e] = n.nSent[e]
		if !n.overtakes() {
			n.q[e] = append(n.q[e], bar)
			n.barOut++
			continue
		}
		if over := n.overtake(e, bar); len(over) > 0 {
			p.Overtaken[e] = over
		}
	}
	for _, e := range n.g.in[n.id] {
		p.CutRcvd[e] = n.nRcvd[e]
	}
	n.part = p
}

// overtake puts unaligned barrier bar on output e ahead of the records
// queued there, behind the last barrier queued (SendBarriers' ELSE
// branch, lines 226-227), and returns a copy of the records it overtook.
func (n *Node) overtake(e int, bar Item) []Item {
	at := 0
	for i, it := range n.q[e] {
		if it.Barrier {
			at = i + 1
		}
	}
	over := slices.Clone(n.q[e][at:])
	n.q[e] = slices.Insert(n.q[e], at, bar)
	return over
}

func (n *Node) save() any {
	if n.logic == nil {
		return nil
	}
	return n.logic.Save()
}

// Logic is the node's logic (nil if it only counts).
func (n *Node) Logic() Logic { return n.logic }

// Head returns the item at the head of output e's buffer: what the
// receiver takes next.
func (n *Node) Head(e int) (Item, bool) {
	if e < 0 || e >= len(n.q) || len(n.q[e]) == 0 {
		return Item{}, false
	}
	return n.q[e][0], true
}

// Pop removes the head of output e's buffer, once the receiver took it.
func (n *Node) Pop(e int) {
	if e >= 0 && e < len(n.q) && len(n.q[e]) > 0 {
		if it := n.q[e][0]; it.Barrier && it.Snap == n.snap && n.barOut > 0 {
			n.barOut-- // the barrier left: nothing to overtake there
		}
		n.q[e] = n.q[e][1:]
	}
}

// Queue is output e's buffer (q[e]): the caller must not change it.
func (n *Node) Queue(e int) []Item { return n.q[e] }

// Emitted is emitted[s] (sources).
func (n *Node) Emitted() int { return n.emitted }

// Cnt is cnt[n]: records the node processed.
func (n *Node) Cnt() int { return n.cnt }

// Output is the sink's output: times it received each record (out),
// counted afresh from its log at each call (nil for another node).
func (n *Node) Output() map[Key]int {
	if !n.sink {
		return nil
	}
	return Counts{n.out}.Map()
}

// Recorded reports whether the node has recorded (n \in recorded).
func (n *Node) Recorded() bool { return n.recorded }

// Bar reports whether input e's barrier has arrived (e \in bar[n]).
func (n *Node) Bar(e int) bool { return n.bar[e] }

// RecChan is input e's recording status (recChan[e]).
func (n *Node) RecChan(e int) Status { return n.recChan[e] }

// NSent and NRcvd are the records sent on output e and taken off input e.
func (n *Node) NSent(e int) int { return n.nSent[e] }

// NRcvd is the records taken off input e.
func (n *Node) NRcvd(e int) int { return n.nRcvd[e] }

// Done reports whether the node's part of the snapshot is complete: it
// recorded, and every input's recording is done.
func (n *Node) Done() bool {
	if !n.recorded {
		return false
	}
	for _, e := range n.g.in[n.id] {
		if n.recChan[e] != Done {
			return false
		}
	}
	return true
}

// Part returns the node's part of the snapshot as recorded so far, with
// the records logged on its inputs so far; nil before the node recorded.
// The part is final once Done.
func (n *Node) Part() *Part {
	if !n.recorded {
		return nil
	}
	p := *n.part
	p.Logged = map[int][]Item{}
	for _, e := range n.g.in[n.id] {
		if len(n.logged[e]) > 0 {
			p.Logged[e] = slices.Clone(n.logged[e])
		}
	}
	return &p
}

// Logged is the records logged on input e so far (recQ[e], the receiver's
// share): the caller must not change it.
func (n *Node) Logged(e int) []Item { return n.logged[e] }
