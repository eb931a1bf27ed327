package dataflow

import (
	"errors"
	"fmt"
)

// Cluster is every node of a graph in one process, the network being the
// nodes' output buffers: Take hands the head of an edge's buffer to its
// receiver. It is what a runtime does between its nodes, without the
// concurrency; tests and the in-memory runtime drive it.
type Cluster struct {
	G     *Graph
	Nodes []*Node
}

// NewCluster returns g's nodes in their initial state, node i computing
// logics[i] (logics nil, or an entry nil: count only).
func NewCluster(g *Graph, logics []Logic) *Cluster {
	c := &Cluster{G: g}
	for id := range g.Nodes {
		n, _ := New(g, id, logicOf(logics, id)) // id is in range
		c.Nodes = append(c.Nodes, n)
	}
	return c
}

func logicOf(logics []Logic, id int) Logic {
	if id < len(logics) {
		return logics[id]
	}
	return nil
}

// RestoreCluster restarts every node of g from snapshot s, with fresh
// logics (their state is loaded from s).
func RestoreCluster(g *Graph, s *Snapshot, logics []Logic) (*Cluster, error) {
	c := &Cluster{G: g}
	for id := range g.Nodes {
		n, err := Restore(g, s, id, logicOf(logics, id))
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

// Take hands the item at the head of edge e to e's receiver (Process or
// RecvBarrier, as the head is a record or a barrier) and, if the
// receiver took it, removes it from the sender's buffer. want says which
// of the two steps the caller means (ErrNotRecord or ErrNotBarrier when
// the head is the other kind).
func (c *Cluster) Take(e int, want Action) (Step, error) {
	if e < 0 || e >= len(c.G.Edges) {
		return Step{}, fmt.Errorf("dataflow: the graph has no edge %d", e)
	}
	from, to := c.Nodes[c.G.Edges[e].From], c.Nodes[c.G.Edges[e].To]
	it, ok := from.Head(e)
	if !ok {
		return Step{}, to.refuse(want, e, ErrEmpty)
	}
	if err := wrongKind(want, it); err != nil {
		return Step{}, to.refuse(want, e, err)
	}
	st, err := to.Take(e, it)
	if err == nil {
		from.Pop(e)
	}
	return st, err
}

// wrongKind is ErrNotRecord if the step want is Process and it is a
// barrier, ErrNotBarrier if want is RecvBarrier and it is a record, else
// nil.
func wrongKind(want Action, it Item) error {
	switch {
	case want == ActProcess && it.Barrier:
		return ErrNotRecord
	case want == ActRecvBarrier && !it.Barrier:
		return ErrNotBarrier
	}
	return nil
}

// TakeAny hands the head of edge e to its receiver whichever kind it is:
// Process for a record, RecvBarrier for a barrier (Take).
func (c *Cluster) TakeAny(e int) (Step, error) {
	st, err := c.Take(e, ActProcess)
	if errors.Is(err, ErrNotRecord) {
		return c.Take(e, ActRecvBarrier)
	}
	return st, err
}

// RunOut steps c round robin until nothing moves: every node emits what
// it can (Emit), and take(e) hands edge e's head to its receiver if it can
// (e.g. Take(e, ActProcess): records only), returning true if it did. A
// refused step changes nothing, so RunOut ends when every step take and
// Emit would try is refused. It returns the number of steps taken.
func (c *Cluster) RunOut(take func(e int) bool) int {
	steps := 0
	for moved := true; moved; {
		moved = false
		for _, n := range c.Nodes {
			if _, err := n.Emit(); err == nil {
				moved, steps = true, steps+1
			}
		}
		for e := range c.G.Edges {
			if take(e) {
				moved, steps = true, steps+1
			}
		}
	}
	return steps
}

// Drain runs c until nothing moves, handing over every edge's head
// whichever kind it is (RunOut with TakeAny), and returns the steps taken.
func (c *Cluster) Drain() int {
	return c.RunOut(func(e int) bool {
		_, err := c.TakeAny(e)
		return err == nil
	})
}

// DrainRecords runs c until no record moves, leaving every barrier at
// the head of its edge (RunOut with Take(e, ActProcess)), and returns
// the steps taken. With no barrier injected it is the failure-free run.
func (c *Cluster) DrainRecords() int {
	return c.RunOut(func(e int) bool {
		_, err := c.Take(e, ActProcess)
		return err == nil
	})
}

// Complete reports whether every node has completed its part of the
// snapshot (Complete, line 123).
func (c *Cluster) Complete() bool {
	for _, n := range c.Nodes {
		if !n.Done() {
			return false
		}
	}
	return true
}

// Snapshot collects the complete snapshot.
func (c *Cluster) Snapshot() (*Snapshot, error) { return Collect(c.G, c.Nodes) }

// Sink is the sink node.
func (c *Cluster) Sink() *Node {
	for _, n := range c.Nodes {
		if c.G.Nodes[n.id].Kind == Sink {
			return n
		}
	}
	return nil
}
