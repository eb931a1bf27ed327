package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// deriver turns an OutsiderRun into a trace of the spec (see
// outsider_derive.go): the run-wide tables, what was derived, and the
// findings in the implementation's terms.
type deriver struct {
	run   *OutsiderRun
	top   *spec.Topology
	snaps *snapNames
	prov  *provenance
	notes []string
	// finding is the first marker the implementation never sent.
	finding *Divergence
	tab     *msgTable
	cuts    map[spec.SnapID]*snapCut
	// tabOf is the message table of the incarnation each snapshot was
	// recorded in; nodesOf its derived nodes.
	tabOf           map[spec.SnapID]*msgTable
	nodesOf         map[spec.SnapID]map[spec.ProcID]*nodeDeriv
	logsMarkerSends map[spec.ProcID]bool
	crashed         map[spec.ProcID]bool
	// initiated is each snapshot's initiator in the derived run.
	initiated map[spec.SnapID]spec.ProcID
	// silent are the nodes that log no marker receipts; choices the
	// first marker's sender at each of their recording points; inc the
	// incarnation being derived.
	silent  map[spec.ProcID]bool
	choices map[choiceKey]spec.ProcID
	inc     int
	// fullCuts is every recorded snapshot's cut, reported or derived.
	fullCuts map[spec.SnapID]map[spec.Channel]spec.ChanCut
	// unsent names the messages received or reported recorded that no
	// send gives (unsentMsgs).
	unsent unsentMsgs
}

// Derived is a trace of the spec derived from an outsider run, with
// what the derivation found: which values are the implementation's own
// and which derived, notes on the run in its terms, a marker never sent,
// and the implementation's snapshot ids.
type Derived struct {
	Trace spec.Trace
	Lines []int // Lines[i]: the trace line of event i's observation
	// LineFiles[i]: the file of Lines[i], the log of event i's node.
	LineFiles []string
	// RestoreLines[k] and RestoreFiles[k]: the line and file of the
	// restore line that starts incarnation k+2 (0 and "" if its logs name
	// it only in their headers).
	RestoreLines []int
	RestoreFiles []string
	Files        []string
	Prov         []ProvLine
	Notes        []string
	Finding      *Divergence
	names        *snapNames
	cuts         map[spec.SnapID]map[spec.Channel]spec.ChanCut
	// msgIDs[i]: the message id event i's observation gave, nil if none.
	msgIDs []*spec.ObsID
	unsent unsentMsgs
}

// TraceFile is the derived trace as a markerwave-trace/3 file holds it:
// every recorded snapshot with its cut seqs, derived where the
// implementation reported none (for markerwave export --tlc and other
// readers of that format).
func (d Derived) TraceFile() spec.Trace {
	tr := d.Trace
	tr.Recorded = slices.Clone(tr.Recorded)
	for i, r := range tr.Recorded {
		if len(r.Cut) == 0 {
			tr.Recorded[i].Cut = d.cuts[r.Snap]
		}
	}
	return tr
}

// SnapName is the implementation's id of spec snapshot id s, as it wrote
// it (0, "alpha", 7).
func (d Derived) SnapName(s spec.SnapID) string { return d.names.name(s) }

// Derive derives run's trace of the spec. An error is bad input (named by
// file, line and field): a duplicated id, a step or clock that does not
// match the log, logs that are not causally consistent.
func Derive(run *OutsiderRun) (Derived, error) { return derive(run, nil) }

// derive is Derive taking, at each recording point of a node that logs
// no marker receipts, the first marker from the process choices names
// ("": the node initiates).
func derive(run *OutsiderRun, choices map[choiceKey]spec.ProcID) (Derived, error) {
	d := &deriver{run: run, top: run.Header.Topology, snaps: newSnapNames(run.snapIDs()), prov: newProvenance(),
		cuts: map[spec.SnapID]*snapCut{}, tabOf: map[spec.SnapID]*msgTable{}, nodesOf: map[spec.SnapID]map[spec.ProcID]*nodeDeriv{},
		logsMarkerSends: map[spec.ProcID]bool{}, crashed: map[spec.ProcID]bool{}, initiated: map[spec.SnapID]spec.ProcID{},
		silent: silentNodes(run), choices: choices, fullCuts: map[spec.SnapID]map[spec.Channel]spec.ChanCut{}}
	d.scan()
	out := Derived{Files: run.Files, names: d.snaps}
	out.Trace.Header = d.header()
	var prev *msgTable
	for k, inc := range run.incs {
		d.inc = k
		if err := d.incarnation(k, inc, prev, &out); err != nil {
			return out, err
		}
		prev = d.tab
	}
	rec, err := d.recorded()
	if err != nil {
		return out, err
	}
	out.Trace.Recorded = rec
	out.Prov, out.Notes, out.Finding, out.cuts, out.unsent = d.prov.lines(), d.notes, d.finding, d.fullCuts, d.unsent
	return out, nil
}

// scan notes which nodes log their marker sends, and which nodes
// crashed (a node still suspects them at the end: the crash rule of
// traces/README.md). A node logs its marker sends if it has a
// marker_send line, or if it logs other marker events (a marker_recv or
// marker_drop) in a run where some node logs marker_send lines (one
// instrumentation for the run: such a node without marker_send lines
// sent none). A node that logs no marker event at all (silentNodes) is
// partial: its marker sends are derived, as its receipts are.
func (d *deriver) scan() {
	suspected := map[spec.ProcID]map[spec.ProcID]bool{}
	sends, marks := map[spec.ProcID]bool{}, map[spec.ProcID]bool{}
	runLogs := false
	for _, inc := range d.run.incs {
		for p, obs := range inc.nodes {
			for _, o := range obs {
				sends[p] = sends[p] || o.ev.Ev == spec.ObsMarkerSend
				marks[p] = marks[p] || isMarkerObs(o.ev.Ev)
				noteSuspicion(suspected, p, o.ev)
			}
			runLogs = runLogs || sends[p]
		}
	}
	for q, by := range suspected {
		for _, s := range by {
			d.crashed[q] = d.crashed[q] || s
		}
	}
	for _, p := range d.top.Procs {
		d.logsMarkerSends[p] = sends[p] || (marks[p] && runLogs)
	}
}

// noteSuspicion records in suspected (by suspect, then suspecter)
// whether p suspects the peer after observation e.
func noteSuspicion(suspected map[spec.ProcID]map[spec.ProcID]bool, p spec.ProcID, e spec.OutsiderEvent) {
	if e.Ev != spec.ObsSuspect && e.Ev != spec.ObsUnsuspect {
		return
	}
	if suspected[e.Peer] == nil {
		suspected[e.Peer] = map[spec.ProcID]bool{}
	}
	suspected[e.Peer][p] = e.Ev == spec.ObsSuspect
}

// header is the derived trace's header.
func (d *deriver) header() spec.Header {
	h := d.run.Header
	out := spec.Header{Topology: h.Topology, InitBal: h.InitBal, Budget: h.Budget, Drained: h.Drained, Note: h.Note,
		Source: fmt.Sprintf("derived from %s of an outsider run", plural(max(len(d.run.Files), 1), "log"))}
	if h.Source != "" {
		out.Source += " (" + h.Source + ")"
	}
	if len(h.Snaps) > 0 {
		out.Snaps = map[spec.SnapID]spec.ProcID{}
		for s, p := range h.Snaps {
			out.Snaps[d.snaps.of(s)] = p
		}
	}
	return out
}

// incarnation derives incarnation k (restored from the cut of inc.from
// after the one before, whose table is prev) and appends its merged
// steps to out.
func (d *deriver) incarnation(k int, inc outsiderInc, prev *msgTable, out *Derived) error {
	base := d.bases(k, inc)
	d.tab = newMsgTable(d.top)
	if k > 0 {
		d.tab = prev.restored(d.top, d.cuts[d.snaps.of(*inc.from)])
	}
	nodes, err := d.nodes(inc, base)
	if err != nil {
		return err
	}
	evs, err := mergeDerived(d.top, nodes)
	if err != nil {
		return err
	}
	if k > 0 {
		out.Trace.Restores = append(out.Trace.Restores, spec.Restore{Snap: d.snaps.of(*inc.from), Incarnation: k + 1, At: len(out.Trace.Events)})
		at := d.run.restoreAt[incKey(inc.from)]
		out.RestoreLines, out.RestoreFiles = append(out.RestoreLines, at.line), append(out.RestoreFiles, at.file)
	}
	for _, e := range evs {
		out.Trace.Events = append(out.Trace.Events, e.e)
		out.Lines, out.LineFiles = append(out.Lines, e.obs.line), append(out.LineFiles, e.obs.file)
		out.msgIDs = append(out.msgIDs, e.obs.ev.ID)
	}
	return nil
}

// nodes derives every node's steps in an incarnation from base: its
// sends indexed first (a receive may name any of them), then each node,
// the markers of nodes that log none placed, the marker sends checked.
func (d *deriver) nodes(inc outsiderInc, base incBase) ([]*nodeDeriv, error) {
	for _, p := range d.top.Procs {
		if err := d.indexSends(p, inc.nodes[p], base.sent); err != nil {
			return nil, err
		}
	}
	nodes := make([]*nodeDeriv, len(d.top.Procs))
	for i, p := range d.top.Procs {
		n, err := d.node(p, inc.nodes[p], base)
		if err != nil {
			return nil, err
		}
		nodes[i] = n
	}
	return nodes, d.settleMarkers(inc, nodes)
}

// settleMarkers places the markers of the nodes that log none, then
// checks every node's marker sends against inc's logs, keeping the first
// divergence found; a marker whose receipt is logged and whose send is
// not is bad input.
func (d *deriver) settleMarkers(inc outsiderInc, nodes []*nodeDeriv) error {
	for _, n := range nodes {
		if d.silent[n.p] {
			n.insertMarkers()
		}
	}
	for _, n := range nodes {
		f, err := n.checkMarkers(inc)
		if err != nil {
			return err
		}
		if f != nil && d.finding == nil {
			d.finding = f
		}
	}
	return nil
}

// incBase is where an incarnation starts: each node's state and each
// channel's counts of messages sent and received.
type incBase struct {
	state     map[spec.ProcID]spec.LocalState
	sent, got map[spec.Channel]uint64
}

// bases is incarnation k's start: the initial balances for the first,
// the restored snapshot's cut for a later one.
func (d *deriver) bases(k int, inc outsiderInc) incBase {
	b := incBase{state: map[spec.ProcID]spec.LocalState{}, sent: map[spec.Channel]uint64{}, got: map[spec.Channel]uint64{}}
	if k == 0 {
		for _, p := range d.top.Procs {
			b.state[p] = spec.LocalState{Bal: d.run.Header.InitBal[p]}
		}
		return b
	}
	c := d.cut(d.snaps.of(*inc.from))
	maps.Copy(b.state, c.state)
	maps.Copy(b.sent, c.sent)
	maps.Copy(b.got, c.got)
	return b
}

// node derives node p's observations obs in an incarnation from base.
func (d *deriver) node(p spec.ProcID, obs []obsAt, base incBase) (*nodeDeriv, error) {
	n := &nodeDeriv{d: d, p: p, st: base.state[p], model: map[spec.SnapID]int{}, markerSent: map[spec.SnapID]map[spec.Channel]int{},
		sentOn: maps.Clone(base.sent), gotOn: maps.Clone(base.got)}
	for _, o := range obs {
		if err := n.observe(o); err != nil {
			return nil, err
		}
	}
	d.register(n)
	return n, nil
}

// register files node n under each snapshot it recorded (with the
// message table of its incarnation), and as the initiator of those it
// initiated.
func (d *deriver) register(n *nodeDeriv) {
	for s, i := range n.model {
		d.tabOf[s] = d.tab
		if d.nodesOf[s] == nil {
			d.nodesOf[s] = map[spec.ProcID]*nodeDeriv{}
		}
		d.nodesOf[s][n.p] = n
		if n.evs[i].e.Action == spec.Initiate {
			d.initiated[s] = n.p
		}
	}
}

// mergeDerived merges the nodes' steps in a causal order: a receive
// after its send, a marker's receipt after its sender's recording point;
// each event gets its vector clock. A dependency no node produces (a
// message restored in flight, or never sent) does not hold a step back:
// the replay judges it. Clocks the log gives are checked (checkGiven): a
// clock that fails is an error.
func mergeDerived(top *spec.Topology, nodes []*nodeDeriv) ([]dEvent, error) {
	will, total := producedDeps(nodes)
	m := &merger{top: top, nodes: nodes, will: will, done: map[depKey]dEvent{}, pos: make([]int, len(nodes)),
		vc: make([][]uint64, len(nodes)), lo: make([][]uint64, len(nodes))}
	steps := make([]uint64, len(nodes))
	for i, n := range nodes {
		m.vc[i], m.lo[i] = make([]uint64, len(top.Procs)), make([]uint64, len(top.Procs))
		steps[i] = uint64(len(n.evs))
	}
	m.given = newGivenClocks[obsAt](top.Procs, steps, "its sends, receives, marker receipts, recording points and failure steps count; marker_send lines and a record after the first marker do not")
	out := make([]dEvent, 0, total)
	for len(out) < total {
		took, err := m.pass(&out)
		if err != nil {
			return nil, err
		}
		if !took {
			return nil, m.stuck()
		}
	}
	return out, nil
}

// producedDeps is the set of dependencies some node's step produces, and
// the number of steps in all.
func producedDeps(nodes []*nodeDeriv) (map[depKey]bool, int) {
	will := map[depKey]bool{}
	total := 0
	for _, n := range nodes {
		total += len(n.evs)
		for _, e := range n.evs {
			if e.produces.ok {
				will[e.produces] = true
			}
		}
	}
	return will, total
}

// merger is mergeDerived's state: each node's next step, its clock and
// its logged steps' clock (dEvent.lo), the last clock it gave, the
// dependencies produced so far.
type merger struct {
	top   *spec.Topology
	nodes []*nodeDeriv
	will  map[depKey]bool
	done  map[depKey]dEvent
	pos   []int
	vc    [][]uint64
	lo    [][]uint64
	given *givenClocks[obsAt]
}

// pass takes, node by node, every next step whose dependency holds.
func (m *merger) pass(out *[]dEvent) (bool, error) {
	took := false
	for i, n := range m.nodes {
		for m.pos[i] < len(n.evs) {
			e := n.evs[m.pos[i]]
			src, ok := m.done[e.dep]
			if e.dep.ok && m.will[e.dep] && !ok {
				break
			}
			if err := m.take(i, &e, src, ok); err != nil {
				return took, err
			}
			*out = append(*out, e)
			m.pos[i]++
			took = true
		}
	}
	return took, nil
}

// take stamps e, node i's next step, with its clocks (src: the step it
// depends on, if ok) and checks the clocks the log gives.
func (m *merger) take(i int, e *dEvent, src dEvent, ok bool) error {
	var from, fromLo []uint64
	if ok {
		from, fromLo = src.e.VC, src.lo
	}
	stepClock(m.vc[i], i, from)
	e.e.VC = slices.Clone(m.vc[i])
	if !e.inserted {
		stepClock(m.lo[i], i, fromLo)
	}
	e.lo = slices.Clone(m.lo[i])
	if e.produces.ok {
		m.done[e.produces] = *e
	}
	return m.checkGiven(i, e, src, ok)
}

// checkGiven checks the clocks the log gives e, node i's step, and the
// observations after it that are no step (e.tail), against e.lo, the
// clock of i's logged steps up to e (givenClocks.check says what must
// hold). i's own entry counts its logged steps: sends, receives, marker
// receipts, recording points, failure steps; a marker_send line and a
// record after the first marker are no steps and give the clock of the
// step before them. A node that logs no marker events (silent), whose
// marker receipts the audit places, is checked loosely. The clock e
// must cover is that of src, the step it depends on if ok: as src's line
// gives it, else src.lo, which any clock counting as above is at least.
func (m *merger) checkGiven(i int, e *dEvent, src dEvent, ok bool) error {
	silent := m.nodes[i].d.silent[m.top.Procs[i]]
	if e.vc != nil && !e.inserted {
		var from *clockFrom[obsAt]
		if ok {
			from = &clockFrom[obsAt]{clockAt: clockAt[obsAt]{vc: src.lo, at: src.obs}}
			if src.vc != nil {
				from.vc, from.given = src.vc, true
			}
		}
		if err := m.given.check(i, clockAt[obsAt]{vc: e.vc, at: e.obs}, e.lo, from, true, silent); err != nil {
			return err
		}
	}
	for _, o := range e.tail {
		if err := m.given.check(i, clockAt[obsAt]{vc: o.ev.VC, at: o}, e.lo, nil, false, silent); err != nil {
			return err
		}
	}
	return nil
}

// stuck is the error of logs no causal order can merge: each node's next
// step and what it waits for.
func (m *merger) stuck() error {
	var waits []string
	for i, n := range m.nodes {
		if m.pos[i] < len(n.evs) {
			e := n.evs[m.pos[i]]
			waits = append(waits, fmt.Sprintf("%s's step %d (%s) waits for %s", string(n.p), e.step, e.obs.where(), e.dep.describe()))
		}
	}
	return fmt.Errorf("the logs are not causally consistent (a cycle of receives before their sends): %s", strings.Join(waits, "; "))
}

func (k depKey) describe() string {
	if k.snap != 0 {
		return fmt.Sprintf("%s to record snapshot %d", string(k.c.From), k.snap)
	}
	return fmt.Sprintf("message %d on %s to be sent", k.seq, k.c)
}
