// Package pipeline has the dataflow applications of issue #10 for the
// barrier-snapshot core (impl/dataflow): a keyed aggregation pipeline
// (sources emitting numbered records, a stateless map, a keyed shuffle
// into stateful aggregations, a sink) and a cyclic iteration (records go
// round a feedback loop, refined at each pass, until they converge).
// Each returns the graph and a function making fresh logics for its
// nodes (a run, and each restore, needs its own).
package pipeline

import (
	"fmt"
	"maps"

	"github.com/markerwave/markerwave/impl/dataflow"
)

// Keys is how many aggregation keys the pipeline's records fall into.
const Keys = 16

// key is record r's aggregation key: a function of its identity, so the
// same in every run.
func key(r dataflow.Item) int64 { return int64((r.Src*7919 + r.I*104729) % Keys) }

// source: record i's value is i.
type source struct{}

func (source) Route(dataflow.Item) int          { return 0 }
func (source) Apply(r dataflow.Item) int64      { return int64(r.I) }
func (source) Save() any                        { return nil }
func (source) Load(s any) error                 { return stateless(s) }
func (m mapper) Route(r dataflow.Item) int      { return int(key(r)) % m.ports }
func (mapper) Apply(r dataflow.Item) int64      { return 3*r.Val + 1 }
func (mapper) Save() any                        { return nil }
func (mapper) Load(s any) error                 { return stateless(s) }
func (passthrough) Route(dataflow.Item) int     { return 0 }
func (passthrough) Apply(r dataflow.Item) int64 { return r.Val }
func (passthrough) Save() any                   { return nil }
func (passthrough) Load(s any) error            { return stateless(s) }

// mapper is the stateless map: 3v+1, then the keyed shuffle: the
// aggregation of the record's key.
type mapper struct{ ports int }

// passthrough sends records on unchanged (the iteration's head).
type passthrough struct{}

// Sums is an aggregation's state: the running sum of each key's values.
type Sums map[int64]int64

// aggregate keeps a running sum per key and sends the key's new sum on.
type aggregate struct{ sums Sums }

func (*aggregate) Route(dataflow.Item) int { return 0 }
func (a *aggregate) Apply(r dataflow.Item) int64 {
	k := key(r)
	a.sums[k] += r.Val
	return k<<32 | a.sums[k]
}
func (a *aggregate) Save() any { return maps.Clone(a.sums) }
func (a *aggregate) Load(s any) error {
	sums, ok := s.(Sums)
	if !ok {
		return fmt.Errorf("pipeline: an aggregation's state is its sums, not %T", s)
	}
	a.sums = maps.Clone(sums)
	if a.sums == nil {
		a.sums = Sums{}
	}
	return nil
}

// Sink is the sink's logic: the latest value of each key (the
// pipeline's: the running sum of each aggregation key; the iteration's:
// each record's converged value). Its state is the pipeline's output.
type Sink struct {
	Latest map[int64]int64
	iter   bool
}

// Route and the rest implement dataflow.Logic.
func (*Sink) Route(dataflow.Item) int { return 0 }

// Apply records the latest value of the record's key.
func (s *Sink) Apply(r dataflow.Item) int64 {
	if s.iter {
		s.Latest[int64(r.Src)<<32|int64(r.I)] = r.Val
	} else {
		s.Latest[r.Val>>32] = r.Val & (1<<32 - 1)
	}
	return r.Val
}

// Save copies the output.
func (s *Sink) Save() any { return maps.Clone(s.Latest) }

// Load puts a saved output back.
func (s *Sink) Load(st any) error {
	latest, ok := st.(map[int64]int64)
	if !ok {
		return fmt.Errorf("pipeline: the sink's state is its output, not %T", st)
	}
	s.Latest = maps.Clone(latest)
	if s.Latest == nil {
		s.Latest = map[int64]int64{}
	}
	return nil
}

// stateless is Load for a logic without state.
func stateless(s any) error {
	if s != nil {
		return fmt.Errorf("pipeline: a stateless node was given a state (%T)", s)
	}
	return nil
}

// Pipeline is par sources, each feeding its map, each map shuffling by
// key to par aggregations, all feeding the sink: 3*par+1 nodes. Each
// source emits budget records; buffers hold capacity records.
func Pipeline(par, budget, capacity int, mode dataflow.Mode) (*dataflow.Graph, func() []dataflow.Logic, error) {
	if par < 1 {
		return nil, nil, fmt.Errorf("pipeline: parallelism must be at least 1, not %d", par)
	}
	g := dataflow.Graph{Cap: capacity, Mode: mode}
	src := addLayer(&g, par, "src", dataflow.Source, budget)
	mp := addLayer(&g, par, "map", dataflow.Operator, 0)
	agg := addLayer(&g, par, "agg", dataflow.Operator, 0)
	snk := len(g.Nodes)
	g.Nodes = append(g.Nodes, dataflow.NodeSpec{Name: "sink", Kind: dataflow.Sink})
	for i := range par {
		g.Edges = append(g.Edges, dataflow.EdgeSpec{From: src + i, To: mp + i})
	}
	for i := range par {
		for j := range par {
			g.Edges = append(g.Edges, dataflow.EdgeSpec{From: mp + i, To: agg + j})
		}
	}
	for j := range par {
		g.Edges = append(g.Edges, dataflow.EdgeSpec{From: agg + j, To: snk})
	}
	cg, err := dataflow.NewGraph(g)
	if err != nil {
		return nil, nil, err
	}
	logics := func() []dataflow.Logic {
		ls := make([]dataflow.Logic, len(g.Nodes))
		for i := range par {
			ls[src+i] = source{}
			ls[mp+i] = mapper{ports: par}
			ls[agg+i] = &aggregate{sums: Sums{}}
		}
		ls[snk] = &Sink{Latest: map[int64]int64{}}
		return ls
	}
	return cg, logics, nil
}

// addLayer adds par nodes of kind, named prefix0, prefix1, ..., each
// with budget, to g and returns the index of the first.
func addLayer(g *dataflow.Graph, par int, prefix string, kind dataflow.Kind, budget int) int {
	first := len(g.Nodes)
	for i := range par {
		g.Nodes = append(g.Nodes, dataflow.NodeSpec{Name: fmt.Sprintf("%s%d", prefix, i), Kind: kind, Budget: budget})
	}
	return first
}

// refine is one Newton step towards the integer square root of n.
func refine(x, n int64) int64 {
	if x <= 0 {
		return n
	}
	return (x + n/x) / 2
}

// body refines a record's value each time round the loop: a Newton step
// towards the square root of the value its source gave it.
type body struct{}

func (body) Route(dataflow.Item) int { return 0 }
func (body) Apply(r dataflow.Item) int64 {
	n := int64(r.I) * 1000003
	if r.Hops == 0 {
		return refine(n, n)
	}
	return refine(r.Val, n)
}
func (body) Save() any        { return nil }
func (body) Load(s any) error { return stateless(s) }

// Iteration is a source feeding a loop: head -> body, body -> head (the
// back-edge), body -> sink after iter rounds. Each record converges on
// the integer square root of i*1000003 (20 rounds are plenty).
func Iteration(budget, iter, capacity int, mode dataflow.Mode) (*dataflow.Graph, func() []dataflow.Logic, error) {
	g := dataflow.Graph{Cap: capacity, Iter: iter, Mode: mode,
		Nodes: []dataflow.NodeSpec{{Name: "src", Budget: budget},
			{Name: "head", Kind: dataflow.Operator}, {Name: "body", Kind: dataflow.Operator},
			{Name: "sink", Kind: dataflow.Sink}},
		Edges: []dataflow.EdgeSpec{{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 1, Back: true}, {From: 2, To: 3}},
	}
	cg, err := dataflow.NewGraph(g)
	if err != nil {
		return nil, nil, err
	}
	return cg, func() []dataflow.Logic {
		return []dataflow.Logic{source{}, passthrough{}, body{}, &Sink{Latest: map[int64]int64{}, iter: true}}
	}, nil
}
