package dataflow

import (
	"fmt"
	"slices"
)

// Part is one node's part of a snapshot: its recorded state (RecordNode,
// lines 211-218: recOff, recCnt, recOut), the sequence numbers of its
// outputs and inputs when it recorded (the spec's ghosts cutSent and
// cutRcvd, here the channels' real sequence numbers), and its share of
// the channel state: the records its barrier overtook on each output
// (unaligned) and the records it logged on each input while recording.
type Part struct {
	Node      int
	Snap      int // the snapshot's id
	Emitted   int
	Cnt       int
	Out       Counts
	State     any // the Logic's saved state
	CutSent   map[int]int
	CutRcvd   map[int]int
	Overtaken map[int][]Item
	Logged    map[int][]Item
	// The adaptive mode (tla/BarrierAdaptive.tla): the type the node
	// reported (reported[n]; TypeNone for a source and the other modes)
	// and whether its alignment timed out (mode[n] = "unaligned").
	Type     SnapType
	Switched bool
	// OutTimeout: the switch was TimeoutOut's, after the node recorded
	// aligned (its barrier waited behind full output buffers).
	OutTimeout bool
}

// Counts is the sink's output as its part of a snapshot records it
// (recOut): how many times it received each record. It holds a prefix of
// the sink's log of the records it received, shared with the sink, which
// only ever appends to the log: recording it costs the same however long
// the output grew (a copy of the output map at each of a run's
// checkpoints did not), and the counts are computed where they are read
// (a restore, a trace, a check).
type Counts struct{ log []Key }

// Map is the counts by record.
func (c Counts) Map() map[Key]int {
	m := make(map[Key]int, len(c.log))
	for _, k := range c.log {
		m[k]++
	}
	return m
}

// Snapshot is a complete snapshot: every node's part, all of one
// snapshot id.
type Snapshot struct {
	Parts []*Part // indexed by node
}

// ID is the snapshot's id (its parts'; 0 if it has none).
func (s *Snapshot) ID() int {
	if len(s.Parts) == 0 || s.Parts[0] == nil {
		return 0
	}
	return s.Parts[0].Snap
}

// Collect returns the snapshot of the given nodes (one per node of g), or
// an error naming a node whose part is not complete.
func Collect(g *Graph, nodes []*Node) (*Snapshot, error) {
	if len(nodes) != len(g.Nodes) {
		return nil, fmt.Errorf("dataflow: %d nodes for a graph of %d", len(nodes), len(g.Nodes))
	}
	s := &Snapshot{Parts: make([]*Part, len(nodes))}
	for i, n := range nodes {
		p := n.Part()
		if !n.Done() {
			return nil, fmt.Errorf("dataflow: %s has not completed its part of the snapshot", g.Nodes[i].Name)
		}
		if p.Snap != nodes[0].snap {
			return nil, fmt.Errorf("dataflow: %s is in snapshot %d, %s in %d", g.Nodes[i].Name, p.Snap, g.Nodes[0].Name, nodes[0].snap)
		}
		s.Parts[i] = p
	}
	return s, nil
}

// Channel is edge e's recorded channel state (recQ[e]): the records its
// receiver logged while recording, then those its sender's barrier
// overtook. At most one of them is not empty: once the sender has
// recorded, unaligned, its barrier heads the queue, so the receiver logs
// nothing more on e.
func (s *Snapshot) Channel(g *Graph, e int) []Item {
	from, to := g.Edges[e].From, g.Edges[e].To
	return slices.Concat(s.Parts[to].Logged[e], s.Parts[from].Overtaken[e])
}

// ChannelRecords counts the records of the channel state of every edge,
// and of the edges that are not back-edges.
func (s *Snapshot) ChannelRecords(g *Graph) (all, forward int) {
	for e := range g.Edges {
		k := len(s.Channel(g, e))
		all += k
		if !g.Edges[e].Back {
			forward += k
		}
	}
	return all, forward
}

// Restore mirrors Restore (lines 265-275) for one node: node id restarts
// in its recorded state (its logic given back its saved state), with the
// snapshot done (its sources inject the next one, if Successive), and each of its outputs
// holds that edge's recorded channel state and nothing else (the spec's
// q' = recQ, held at the sender). The sources emit again from their
// recorded offsets.
func Restore(g *Graph, s *Snapshot, id int, logic Logic) (*Node, error) {
	n, err := New(g, id, logic)
	if err != nil {
		return nil, err
	}
	p, err := s.partFor(g, id)
	if err != nil {
		return nil, err
	}
	if err := n.loadPart(p); err != nil {
		return nil, err
	}
	for _, e := range g.out[id] {
		n.q[e] = s.Channel(g, e)
		n.nSent[e] = p.CutSent[e]
	}
	for _, e := range g.in[id] {
		n.nRcvd[e] = p.CutRcvd[e]
		n.bar[e] = true
		n.recChan[e] = Done
		n.logged[e] = slices.Clone(p.Logged[e])
	}
	return n, nil
}

// partFor is s's part for node id of g, checked (checkPart) and of s's
// snapshot.
func (s *Snapshot) partFor(g *Graph, id int) (*Part, error) {
	if s == nil || len(s.Parts) != len(g.Nodes) || s.Parts[id] == nil {
		return nil, fmt.Errorf("dataflow: the snapshot has no part for %s", g.Nodes[id].Name)
	}
	p := s.Parts[id]
	if err := checkPart(g, p, id); err != nil {
		return nil, err
	}
	if p.Snap != s.ID() {
		return nil, fmt.Errorf("dataflow: the snapshot's part for %s is of snapshot %d, not %d", g.Nodes[id].Name, p.Snap, s.ID())
	}
	return p, nil
}

// loadPart puts node n in its recorded state p (recOff, recCnt, recOut
// and the logic's state: lines 269-271): recorded, snapshot p.Snap.
func (n *Node) loadPart(p *Part) error {
	n.emitted, n.cnt, n.snap = p.Emitted, p.Cnt, p.Snap
	if n.sink {
		n.out = slices.Clone(p.Out.log)
	}
	n.recorded = true
	n.part = p
	n.loadAdaptive(p)
	if n.logic != nil {
		if err := n.logic.Load(p.State); err != nil {
			return fmt.Errorf("dataflow: %s's recorded state: %w", n.g.Nodes[n.id].Name, err)
		}
	}
	return nil
}

// checkPart checks that part p can restore node id of g: it is that
// node's, with a sequence number for each of its edges and channel state
// only on them, and counts within the node's budget.
func checkPart(g *Graph, p *Part, id int) error {
	name := g.Nodes[id].Name
	if p.Node != id {
		return fmt.Errorf("dataflow: the snapshot's part for %s is node %d's", name, p.Node)
	}
	if p.Emitted < 0 || p.Emitted > g.Nodes[id].Budget || p.Cnt < 0 {
		return fmt.Errorf("dataflow: %s's recorded counts are out of range (emitted %d of %d, processed %d)", name, p.Emitted, g.Nodes[id].Budget, p.Cnt)
	}
	if err := checkCuts(g, p, id); err != nil {
		return err
	}
	if e, ok := strayKey(g, p.Overtaken, func(e EdgeSpec) bool { return e.From == id }); !ok {
		return fmt.Errorf("dataflow: %s's part records channel state on edge %d, not one of its outputs", name, e)
	}
	if e, ok := strayKey(g, p.Logged, func(e EdgeSpec) bool { return e.To == id }); !ok {
		return fmt.Errorf("dataflow: %s's part records channel state on edge %d, not one of its inputs", name, e)
	}
	return nil
}

// checkCuts checks that part p, node id's, has a sequence number for
// each of the node's outputs (cutSent) and inputs (cutRcvd).
func checkCuts(g *Graph, p *Part, id int) error {
	name := g.Nodes[id].Name
	if e, ok := missingKey(g.out[id], p.CutSent); !ok {
		return fmt.Errorf("dataflow: %s's part has no sequence number for its output %s", name, g.EdgeName(e))
	}
	if e, ok := missingKey(g.in[id], p.CutRcvd); !ok {
		return fmt.Errorf("dataflow: %s's part has no sequence number for its input %s", name, g.EdgeName(e))
	}
	return nil
}

// missingKey returns the first of edges that m has no entry for, and
// false; true if m has them all.
func missingKey(edges []int, m map[int]int) (int, bool) {
	for _, e := range edges {
		if _, ok := m[e]; !ok {
			return e, false
		}
	}
	return 0, true
}

// strayKey returns an edge m has channel state on that is not an edge of
// g's or not one that mine accepts, and false; true if there is none.
func strayKey(g *Graph, m map[int][]Item, mine func(EdgeSpec) bool) (int, bool) {
	for e := range m {
		if e < 0 || e >= len(g.Edges) || !mine(g.Edges[e]) {
			return e, false
		}
	}
	return 0, true
}
