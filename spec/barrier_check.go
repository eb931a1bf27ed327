package spec

import "fmt"

// CheckEvent checks that ev names a known action, its node, an edge of
// that node, and records from sources: what a barrier trace's reader
// knows from the graph alone.
func (g BarrierGraph) CheckEvent(ev BarrierEvent) error {
	if ev.Action == BarrierRestore {
		return checkRestore(ev)
	}
	n := g.NodeIndex(ev.Node)
	if n < 0 {
		return fmt.Errorf("node %q is not in the graph", ev.Node)
	}
	for _, step := range []func(BarrierEvent) error{g.checkShape, g.checkEdge, g.checkRec} {
		if err := step(ev); err != nil {
			return err
		}
	}
	if ev.Part != nil {
		return g.checkPart(ev.Node, ev.Part)
	}
	return nil
}

// checkRestore: a Restore is of the whole cluster, with no other field.
func checkRestore(ev BarrierEvent) error {
	if ev != (BarrierEvent{Action: BarrierRestore}) {
		return fmt.Errorf("a Restore has no other field")
	}
	return nil
}

// hasEdge reports whether ev names an edge.
func (ev BarrierEvent) hasEdge() bool { return ev.From != "" || ev.To != "" }

// checkShape checks the fields each action has: a source's Emit and
// Inject, a Process or RecvBarrier at the edge's receiver.
func (g BarrierGraph) checkShape(ev BarrierEvent) error {
	switch ev.Action {
	case BarrierEmit, BarrierInject:
		return g.checkSourceStep(ev)
	case BarrierProcess, BarrierRecvBarrier:
		return checkReceive(ev)
	case BarrierTimeout, BarrierTimeoutOut:
		return g.checkTimeout(ev)
	}
	return fmt.Errorf("unknown action (want Emit, Inject, Process, RecvBarrier, Timeout, TimeoutOut or Restore)")
}

// checkTimeout: a Timeout or TimeoutOut (tla/BarrierAdaptive.tla) is an
// adaptive graph's (a Timeout at a node that is not a source), with no
// edge and no record, and with the node's part as it switched.
func (g BarrierGraph) checkTimeout(ev BarrierEvent) error {
	switch {
	case g.Mode != ModeAdaptive:
		return fmt.Errorf("a %s is a step of the adaptive mode, not of %s", ev.Action, g.Mode)
	case g.Kind(ev.Node) == KindSource && ev.Action == BarrierTimeout:
		return fmt.Errorf("%q is a source: a source does not align, so it has no Timeout", ev.Node)
	case ev.hasEdge() || ev.Rec != nil || ev.Part == nil:
		return fmt.Errorf("a %s has no edge and no record, and has its node's part", ev.Action)
	}
	return nil
}

// checkSourceStep: an Emit puts its record on an edge from its source,
// an Inject records the source's part (Emit, Inject of the spec).
func (g BarrierGraph) checkSourceStep(ev BarrierEvent) error {
	if g.Kind(ev.Node) != KindSource {
		return fmt.Errorf("%q is not a source", ev.Node)
	}
	if ev.Action == BarrierEmit {
		return checkEmit(ev)
	}
	if ev.hasEdge() || ev.Rec != nil || ev.Part == nil {
		return fmt.Errorf("an Inject has no edge and no record, and has its node's part")
	}
	return nil
}

// checkEmit: an Emit has its record and the edge from its node.
func checkEmit(ev BarrierEvent) error {
	if !ev.hasEdge() || ev.From != ev.Node || ev.Rec == nil || ev.Part != nil {
		return fmt.Errorf("an Emit has its record and the edge from its node it puts it on, and no part")
	}
	return nil
}

// checkReceive: a Process takes a record and records nothing, a
// RecvBarrier takes no record, both off an edge into their node.
func checkReceive(ev BarrierEvent) error {
	switch {
	case ev.To != ev.Node:
		return fmt.Errorf("the edge %s does not end at the node %q", BarrierEdgeKey(ev.From, ev.To), ev.Node)
	case ev.Action == BarrierProcess && (ev.Rec == nil || ev.Part != nil):
		return fmt.Errorf("a Process has a record and no part")
	case ev.Action == BarrierRecvBarrier && ev.Rec != nil:
		return fmt.Errorf("a RecvBarrier has no record")
	}
	return nil
}

// checkEdge: the edge named is the graph's, and only a Process logs.
func (g BarrierGraph) checkEdge(ev BarrierEvent) error {
	if ev.hasEdge() && g.EdgeIndex(ev.From, ev.To) < 0 {
		return fmt.Errorf("the graph has no edge %s", BarrierEdgeKey(ev.From, ev.To))
	}
	if ev.Logged && ev.Action != BarrierProcess {
		return fmt.Errorf("only a Process logs a record")
	}
	return nil
}

// checkRec checks ev's record, if any.
func (g BarrierGraph) checkRec(ev BarrierEvent) error {
	if ev.Rec == nil {
		return nil
	}
	return g.checkRecord(*ev.Rec)
}

// checkRecord checks that r comes from a source of g, numbered from 1
// there and on its edge, with hops a natural number; an outside stream
// processor may leave the seq and hops out (conformance.DeriveBarrier
// derives them).
func (g BarrierGraph) checkRecord(r BarrierRecord) error {
	if g.Kind(r.Src) != KindSource {
		return fmt.Errorf("the record's source %q is not a source of the graph", r.Src)
	}
	if r.I < 1 || r.Seq < 0 || r.Hops < 0 || r.Seq == 0 && r.Hops != 0 {
		return fmt.Errorf("the record <<%s, %d>> (hops %d, seq %d): i and seq count from 1, hops from 0; a record without its seq has no hops either (both are derived)", r.Src, r.I, r.Hops, r.Seq)
	}
	return nil
}

// checkPart checks that node n's part p has natural counts, cut
// sequence numbers for n's outputs and inputs only, overtaken records
// on its outputs only, and an output of records from the sources.
func (g BarrierGraph) checkPart(n string, p *BarrierPart) error {
	if p.Emitted < 0 || p.Cnt < 0 {
		return fmt.Errorf("the part's counts must be natural numbers")
	}
	if err := g.checkType(n, p.Type); err != nil {
		return err
	}
	for _, step := range []func(string, *BarrierPart) error{g.checkCuts, g.checkOvertaken, g.checkOut} {
		if err := step(n, p); err != nil {
			return err
		}
	}
	return nil
}

// checkType: a part's type is the adaptive mode's, "aligned" or
// "unaligned", at a node that is not a source, and there always.
func (g BarrierGraph) checkType(n, t string) error {
	if g.Mode != ModeAdaptive || g.Kind(n) == KindSource {
		if t != "" {
			return fmt.Errorf("the part's type %q: only a node that is not a source, in the adaptive mode, reports one", t)
		}
		return nil
	}
	if t != ModeAligned && t != ModeUnaligned {
		return fmt.Errorf("the part's type %q: want aligned or unaligned (the adaptive mode reports the type each node took)", t)
	}
	return nil
}

// ends reports whether key is an output (out) or an input of node n.
func (g BarrierGraph) ends(key, n string, out bool) bool {
	for _, e := range g.Edges {
		if e.Key() == key && (out && e.From == n || !out && e.To == n) {
			return true
		}
	}
	return false
}

// checkCuts: cut_sent names n's outputs, cut_rcvd its inputs, with
// natural sequence numbers.
func (g BarrierGraph) checkCuts(n string, p *BarrierPart) error {
	for key, s := range p.CutSent {
		if !g.ends(key, n, true) || s < 0 {
			return fmt.Errorf("cut_sent[%q]: not an output of %s, or negative", key, n)
		}
	}
	for key, s := range p.CutRcvd {
		if !g.ends(key, n, false) || s < 0 {
			return fmt.Errorf("cut_rcvd[%q]: not an input of %s, or negative", key, n)
		}
	}
	return nil
}

// checkOvertaken: the records overtaken are on n's outputs, from sources.
func (g BarrierGraph) checkOvertaken(n string, p *BarrierPart) error {
	for key, rs := range p.Overtaken {
		if !g.ends(key, n, true) {
			return fmt.Errorf("overtaken[%q]: not an output of %s", key, n)
		}
		for _, r := range rs {
			if err := g.checkRecord(r); err != nil {
				return fmt.Errorf("overtaken[%q]: %w", key, err)
			}
		}
	}
	return nil
}

// checkOut: the sink's output counts records of the sources, each at
// least once.
func (g BarrierGraph) checkOut(_ string, p *BarrierPart) error {
	for _, c := range p.Out {
		if err := g.checkRecord(BarrierRecord{Src: c.Src, I: c.I, Seq: 1}); err != nil || c.N < 1 {
			return fmt.Errorf("out: <<%s, %d>> %d times: a record of a source, at least once", c.Src, c.I, c.N)
		}
	}
	return nil
}
