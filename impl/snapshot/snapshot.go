package snapshot

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/spec"
)

// Msg is an application message recorded as channel state.
type Msg struct {
	Seq     uint64 `json:"seq"`
	Amt     int64  `json:"amt"`
	Payload []byte `json:"payload"`
}

// ChanSeq pairs an outgoing channel with the seq its next message gets.
type ChanSeq struct {
	Chan spec.Channel `json:"chan"`
	Next uint64       `json:"next"`
}

// NodeState is one node's recorded state in a snapshot.
type NodeState struct {
	Proc  spec.ProcID     `json:"proc"`
	App   []byte          `json:"app"`   // the application's captured state
	State spec.LocalState `json:"state"` // its abstraction
	// Opaque: the application is no Quantities; State.Bal counts
	// messages (core.OpaqueBalance), it is no balance. Written only when
	// true, so a bank's files are byte for byte what they were before
	// the field was added (2026-12-03), and a file without it reads as
	// before: store.Version stays 1.
	Opaque bool `json:"opaque,omitempty"`
	// NextSend is, per outgoing channel, the seq of the first message sent
	// after the node recorded its state.
	NextSend []ChanSeq `json:"next_send"`
}

// ChanState is one channel's recorded state: the messages that were in
// flight across the cut, in order.
type ChanState struct {
	Chan spec.Channel `json:"chan"`
	// NextRecv is the seq the receiver expected next when it recorded its
	// state; Msgs are numbered from it without gaps.
	NextRecv uint64 `json:"next_recv"`
	Msgs     []Msg  `json:"msgs"`
}

// Part is one node's completed part of a snapshot: its state and the
// states of its incoming channels. It is what a node reports to a
// Collector or persists in a multi-process cluster.
type Part struct {
	Snap      spec.SnapID `json:"snap"`
	Initiated bool        `json:"initiated"` // this node initiated the snapshot
	Node      NodeState   `json:"node"`
	In        []ChanState `json:"in"` // incoming channels, topology order
}

// Global is an assembled Chandy-Lamport snapshot: every node's
// recorded state and every channel's recorded messages, in topology order.
type Global struct {
	ID        spec.SnapID    `json:"id"`
	Initiator spec.ProcID    `json:"initiator,omitempty"`
	Topology  *spec.Topology `json:"topology"`
	Nodes     []NodeState    `json:"nodes"`
	Chans     []ChanState    `json:"chans"`
}

// Assemble builds the global snapshot s from one part per process of t,
// in any order. It refuses a part of another snapshot, two parts of one
// process, a part of a process t does not have, a missing part, two
// initiating parts, a part holding the state of a channel that is not
// one of its process's incoming channels (or holding one twice), and a
// channel without a state; then it checks that the parts fit together
// (Global.Validate).
func Assemble(t *spec.Topology, s spec.SnapID, parts []Part) (Global, error) {
	g := Global{ID: s, Topology: t}
	byProc, err := g.indexParts(parts)
	if err != nil {
		return g, err
	}
	// The channel states by channel index: one index lookup per channel,
	// no map of 65,280 entries to grow on the complete graph of 256.
	chans := make([]ChanState, len(t.Chans))
	have := make([]bool, len(t.Chans))
	for _, q := range t.Procs {
		p, ok := byProc[q]
		if !ok {
			return g, fmt.Errorf("assemble snapshot %d: no part from %s", s, string(q))
		}
		g.Nodes = append(g.Nodes, p.Node)
		if err := g.placeChans(p, chans, have); err != nil {
			return g, err
		}
	}
	if i := slices.Index(have, false); i >= 0 {
		return g, fmt.Errorf("assemble snapshot %d: no state for channel %s", s, t.Chans[i])
	}
	if len(chans) > 0 { // nil for a topology without channels, as always
		g.Chans = chans
	}
	return g, g.Validate()
}

// indexParts maps each part of g's snapshot to its process, refusing a
// part of another snapshot, of a process g's topology does not have, two
// parts of one process and two initiating parts; it sets g.Initiator.
func (g *Global) indexParts(parts []Part) (map[spec.ProcID]Part, error) {
	s := g.ID
	byProc := make(map[spec.ProcID]Part, len(parts))
	for _, p := range parts {
		if p.Snap != s {
			return nil, fmt.Errorf("assemble snapshot %d: part of %s belongs to snapshot %d", s, string(p.Node.Proc), p.Snap)
		}
		if !g.Topology.Has(p.Node.Proc) {
			return nil, fmt.Errorf("assemble snapshot %d: part of %q, which is not a process of the topology", s, string(p.Node.Proc))
		}
		if _, dup := byProc[p.Node.Proc]; dup {
			return nil, fmt.Errorf("assemble snapshot %d: two parts of %s", s, string(p.Node.Proc))
		}
		byProc[p.Node.Proc] = p
		if !p.Initiated {
			continue
		}
		if g.Initiator != "" {
			return nil, fmt.Errorf("assemble snapshot %d: both %s and %s initiated it", s, string(g.Initiator), string(p.Node.Proc))
		}
		g.Initiator = p.Node.Proc
	}
	return byProc, nil
}

// placeChans puts the channel states of part p at their channels'
// indexes in chans, noting them in have, refusing a state of a channel
// that is not one of p's process's incoming channels, or one held twice.
func (g *Global) placeChans(p Part, chans []ChanState, have []bool) error {
	q := p.Node.Proc
	for _, cs := range p.In {
		i := g.Topology.ChanIndex(cs.Chan)
		if cs.Chan.To != q || i < 0 {
			return fmt.Errorf("assemble snapshot %d: part of %s holds a state of %s, which is not one of its incoming channels", g.ID, string(q), cs.Chan)
		}
		if have[i] {
			return fmt.Errorf("assemble snapshot %d: part of %s holds two states of %s", g.ID, string(q), cs.Chan)
		}
		chans[i], have[i] = cs, true
	}
	return nil
}

// Validate checks that the snapshot is well formed and its cut consistent:
// one state per process and per channel in topology order, and on every
// channel P->Q the cut analysis's checks of the record (spec.CheckChannel
// with the snapshot's Cut, P.NextSend-1 and Q.NextRecv-1): no orphan message
// (ConsistentCut), and the recorded messages exactly seqs Q.NextRecv ..
// P.NextSend-1, those P sent before its cut and Q received after its own
// (ExactChannelState).
func (g *Global) Validate() error {
	if err := g.validateShape(); err != nil {
		return err
	}
	t := g.Topology
	for i, n := range g.Nodes {
		if err := g.validateNode(n, t.Procs[i]); err != nil {
			return err
		}
	}
	// Every state must be its channel's before the cut seqs, which are
	// read from the states, can say anything.
	if err := g.validateChanOrder(); err != nil {
		return err
	}
	return g.validateChans()
}

// validateChans checks every channel state against the cut seqs the
// node states give (validateChan).
func (g *Global) validateChans() error {
	cut := g.cutSeqs()
	for i, cs := range g.Chans {
		if err := g.validateChan(cs, g.Topology.Chans[i], cut[i]); err != nil {
			return err
		}
	}
	return nil
}

// validateChanOrder checks that the channel states are the topology's
// channels', in its order.
func (g *Global) validateChanOrder() error {
	for i, cs := range g.Chans {
		if want := g.Topology.Chans[i]; cs.Chan != want {
			return fmt.Errorf("snapshot %d: channel state %d is %s, want %s", g.ID, i, cs.Chan, want)
		}
	}
	return nil
}

// validateShape checks the snapshot's id, topology and initiator, and
// that it has one state per process and per channel.
func (g *Global) validateShape() error {
	t := g.Topology
	switch {
	case t == nil:
		return fmt.Errorf("snapshot %d: no topology", g.ID)
	case g.ID == 0:
		return fmt.Errorf("snapshot id 0")
	case g.Initiator != "" && !t.Has(g.Initiator):
		return fmt.Errorf("snapshot %d: unknown initiator %q", g.ID, string(g.Initiator))
	case len(g.Nodes) != len(t.Procs):
		return fmt.Errorf("snapshot %d: %d node states for %d processes", g.ID, len(g.Nodes), len(t.Procs))
	case len(g.Chans) != len(t.Chans):
		return fmt.Errorf("snapshot %d: %d channel states for %d channels", g.ID, len(g.Chans), len(t.Chans))
	}
	return nil
}

// validateNode checks node state n, which must be p's: its counters and
// one send seq per outgoing channel.
func (g *Global) validateNode(n NodeState, p spec.ProcID) error {
	if n.Proc != p {
		return fmt.Errorf("snapshot %d: node state %d is %q, want %s", g.ID, g.Topology.ProcIndex(p), string(n.Proc), string(p))
	}
	if n.State.Sent < 0 || n.State.Rcvd < 0 {
		return fmt.Errorf("snapshot %d: %s has negative counters", g.ID, string(n.Proc))
	}
	return g.validateNextSend(n)
}

// validateNextSend checks that node state n has one send seq, from 1,
// per outgoing channel of its process, in topology order.
func (g *Global) validateNextSend(n NodeState) error {
	out := g.Topology.Out(n.Proc)
	if len(n.NextSend) != len(out) {
		return fmt.Errorf("snapshot %d: %s has %d send seqs for %d outgoing channels", g.ID, string(n.Proc), len(n.NextSend), len(out))
	}
	for j, cs := range n.NextSend {
		if cs.Chan != out[j] || cs.Next == 0 {
			return fmt.Errorf("snapshot %d: %s: bad send seq %d for %s", g.ID, string(n.Proc), cs.Next, cs.Chan)
		}
	}
	return nil
}

// validateChan checks channel state cs of c against the snapshot's cut
// seqs k of c (Cut): the cut analysis's checks of the record
// (spec.CheckChannel), and positive amounts.
func (g *Global) validateChan(cs ChanState, c spec.Channel, k spec.ChanCut) error {
	if cs.NextRecv == 0 {
		return fmt.Errorf("snapshot %d: channel %s: receive seq 0", g.ID, c)
	}
	if err := spec.CheckChannel(c, k, cs.abstract()); err != nil {
		return fmt.Errorf("snapshot %d: channel %s: %w", g.ID, c, err)
	}
	for _, m := range cs.Msgs {
		if m.Amt <= 0 {
			return fmt.Errorf("snapshot %d: channel %s: message seq %d has amount %d", g.ID, c, m.Seq, m.Amt)
		}
	}
	return nil
}

// Node returns the recorded state of p.
func (g *Global) Node(p spec.ProcID) (NodeState, bool) {
	for _, n := range g.Nodes {
		if n.Proc == p {
			return n, true
		}
	}
	return NodeState{}, false
}

// Local rebuilds p's core.LocalSnapshot, e.g. for core.Restore via its
// Checkpoint.
func (g *Global) Local(p spec.ProcID) (core.LocalSnapshot, bool) {
	n, ok := g.Node(p)
	if !ok {
		return core.LocalSnapshot{}, false
	}
	var in []ChanState
	for _, cs := range g.Chans {
		if cs.Chan.To != p {
			continue
		}
		in = append(in, cs)
	}
	return g.local(n, in), true
}

// local is n's core.LocalSnapshot given the states of its incoming
// channels, in order.
func (g *Global) local(n NodeState, in []ChanState) core.LocalSnapshot {
	ls := core.LocalSnapshot{Snap: g.ID, Proc: n.Proc, App: n.App, State: n.State, Opaque: n.Opaque}
	for _, cs := range n.NextSend {
		ls.NextSend = append(ls.NextSend, core.ChanSeq{Chan: cs.Chan, Next: cs.Next})
	}
	for _, cs := range in {
		r := core.ChanRecording{Chan: cs.Chan, Status: core.Done, NextRecv: cs.NextRecv}
		for _, m := range cs.Msgs {
			r.Msgs = append(r.Msgs, core.RecordedMsg{Seq: m.Seq, Amt: m.Amt, Payload: m.Payload})
		}
		ls.Chans = append(ls.Chans, r)
	}
	return ls
}

// PartOf converts a core local snapshot into a part; Global.Local is
// its inverse.
func PartOf(ls core.LocalSnapshot, initiated bool) Part {
	p := Part{
		Snap:      ls.Snap,
		Initiated: initiated,
		Node:      NodeState{Proc: ls.Proc, App: ls.App, State: ls.State, Opaque: ls.Opaque, NextSend: make([]ChanSeq, len(ls.NextSend))},
		In:        make([]ChanState, len(ls.Chans)),
	}
	for j, cs := range ls.NextSend {
		p.Node.NextSend[j] = ChanSeq{Chan: cs.Chan, Next: cs.Next}
	}
	for i, r := range ls.Chans {
		ms := make([]Msg, len(r.Msgs))
		for k, m := range r.Msgs {
			ms[k] = Msg{Seq: m.Seq, Amt: m.Amt, Payload: m.Payload}
		}
		p.In[i] = ChanState{Chan: r.Chan, NextRecv: r.NextRecv, Msgs: ms}
	}
	return p
}

// abstract is the channel's recorded messages as the spec's.
func (cs ChanState) abstract() []spec.AppMsg {
	ms := make([]spec.AppMsg, len(cs.Msgs))
	for k, m := range cs.Msgs {
		ms[k] = spec.AppMsg{Amt: m.Amt, Seq: m.Seq}
	}
	return ms
}

// Abstract is the snapshot as the spec's global state.
func (g *Global) Abstract() spec.GlobalState {
	st := spec.GlobalState{Procs: make(map[spec.ProcID]spec.LocalState, len(g.Nodes)), Chans: make(map[spec.Channel][]spec.AppMsg, len(g.Chans))}
	for _, n := range g.Nodes {
		st.Procs[n.Proc] = n.State
	}
	for _, cs := range g.Chans {
		st.Chans[cs.Chan] = cs.abstract()
	}
	return st
}

// AppSnapshot is the snapshot as the application sees it: every node's
// captured state and every channel's in-flight payloads, what the
// application's invariants (spec.Invariant) are checked on. It shares
// g's byte slices.
func (g *Global) AppSnapshot() spec.AppSnapshot {
	s := spec.AppSnapshot{Snap: g.ID, States: make(map[spec.ProcID][]byte, len(g.Nodes)), InFlight: make(map[spec.Channel][][]byte, len(g.Chans))}
	for _, n := range g.Nodes {
		s.States[n.Proc] = n.App
	}
	for _, cs := range g.Chans {
		ps := make([][]byte, len(cs.Msgs))
		for k, m := range cs.Msgs {
			ps[k] = m.Payload
		}
		s.InFlight[cs.Chan] = ps
	}
	return s
}

// AppString renders the snapshot as the application sees it (what
// AppSnapshot holds): each node's captured state and each channel's
// in-flight payloads, for a report on an application's invariant.
func (g *Global) AppString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "snapshot %d", g.ID)
	if g.Initiator != "" {
		fmt.Fprintf(&b, " (initiated by %s)", string(g.Initiator))
	}
	b.WriteString("\n")
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "  %s state %s\n", string(n.Proc), n.App)
	}
	for _, cs := range g.Chans {
		for _, m := range cs.Msgs {
			fmt.Fprintf(&b, "  %s in flight #%d %s\n", cs.Chan, m.Seq, m.Payload)
		}
	}
	return b.String()
}

// RecordedSnapshot is the snapshot as a trace's recorded snapshot
// (spec.RecordedSnapshot): its id, initiator, Abstract state and Cut.
func (g *Global) RecordedSnapshot() spec.RecordedSnapshot {
	a := g.Abstract()
	return spec.RecordedSnapshot{Snap: g.ID, Initiator: g.Initiator, Procs: a.Procs, Chans: a.Chans, Cut: g.Cut()}
}

// Cut is the snapshot's cut seqs, what Restore resumes every channel at
// (core.Cut of its local parts).
func (g *Global) Cut() map[spec.Channel]spec.ChanCut {
	// The channel states by receiver, in one pass (Local per node would
	// scan every channel once per node).
	in := make(map[spec.ProcID][]ChanState, len(g.Nodes))
	for _, cs := range g.Chans {
		in[cs.Chan.To] = append(in[cs.Chan.To], cs)
	}
	parts := make([]core.LocalSnapshot, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		parts = append(parts, g.local(n, in[n.Proc]))
	}
	return core.Cut(parts...)
}

// cutSeqs is Cut by channel index, for Validate once the node states
// and the channel order are checked: the same numbers (core.Cut: a
// channel's Sent is its sender's NextSend less one, its Got its receiver's
// NextRecv less one) without building the local parts and a map keyed by
// channel. Topology.Chans are sorted by sender then receiver, so the
// nodes' NextSend lists, in node order, usually list the channels in
// that order: no index lookup then.
func (g *Global) cutSeqs() []spec.ChanCut {
	t := g.Topology
	cut := make([]spec.ChanCut, len(t.Chans))
	i := 0 // the channel index expected next
	for _, n := range g.Nodes {
		for _, cs := range n.NextSend {
			if i = chanIndexFrom(t, cs.Chan, i); i < 0 {
				i = len(t.Chans)
				continue
			}
			if cs.Next > 0 {
				cut[i].Sent = cs.Next - 1
			}
			i++
		}
	}
	for i, cs := range g.Chans {
		if cs.NextRecv > 0 {
			cut[i].Got = cs.NextRecv - 1
		}
	}
	return cut
}

// chanIndexFrom is c's index in t.Chans: i, the index expected, if it
// holds c (no map lookup in the common case), else t.ChanIndex(c).
func chanIndexFrom(t *spec.Topology, c spec.Channel, i int) int {
	if i < len(t.Chans) && t.Chans[i] == c {
		return i
	}
	return t.ChanIndex(c)
}

// Total is the money the snapshot holds: balances plus amounts in flight.
func (g *Global) Total() int64 {
	var t int64
	for _, n := range g.Nodes {
		t += n.State.Bal
	}
	return t + g.InFlight()
}

// InFlight is the money recorded in channels.
func (g *Global) InFlight() int64 {
	var t int64
	for _, cs := range g.Chans {
		for _, m := range cs.Msgs {
			t += m.Amt
		}
	}
	return t
}

// Recorded is the number of messages recorded in channels.
func (g *Global) Recorded() int {
	n := 0
	for _, cs := range g.Chans {
		n += len(cs.Msgs)
	}
	return n
}

// String renders the snapshot for people. For an application moving a
// quantity (core.Quantities: a bank's money) it is balances, the amount
// in flight per non-empty channel, and the total. A node of an opaque
// application shows its captured state instead (as text, shortened; or
// its size, if it is not text), its channels their message counts, and
// the snapshot no total: its bal counts messages.
func (g Global) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "snapshot %d", g.ID)
	if g.Initiator != "" {
		fmt.Fprintf(&b, " (initiated by %s)", string(g.Initiator))
	}
	b.WriteString("\n")
	w := 4
	opaque := false
	for _, n := range g.Nodes {
		w = max(w, len(n.Proc))
		opaque = opaque || n.Opaque
	}
	bal := g.writeBalances(&b, w)
	g.writeChannels(&b, 2*w+2, opaque)
	if !opaque {
		fmt.Fprintf(&b, "  total %d = %d in accounts + %d in flight\n", g.Total(), bal, g.InFlight())
	}
	return b.String()
}

// writeBalances writes one line per node (its name padded to w): its
// balance, or an opaque application's state, and its counters; it
// returns the balances' sum.
func (g Global) writeBalances(b *strings.Builder, w int) int64 {
	var bal int64
	for _, n := range g.Nodes {
		if n.Opaque {
			fmt.Fprintf(b, "  %-*s state %s   (sent %d, received %d)\n", w, string(n.Proc), stateText(n.App), n.State.Sent, n.State.Rcvd)
			continue
		}
		fmt.Fprintf(b, "  %-*s balance %10d   (sent %d, received %d)\n", w, string(n.Proc), n.State.Bal, n.State.Sent, n.State.Rcvd)
		bal += n.State.Bal
	}
	return bal
}

// maxStateText is how much of a captured state String shows.
const maxStateText = 60

// stateText is a captured state for String: the text on one line (each
// run of white space one blank), its first maxStateText bytes and "..."
// if longer; its size if it is not text.
func stateText(app []byte) string {
	text := func(r rune) bool { return unicode.IsPrint(r) || unicode.IsSpace(r) }
	if !utf8.Valid(app) || slices.ContainsFunc([]rune(string(app)), func(r rune) bool { return !text(r) }) {
		return fmt.Sprintf("(%d bytes, not text)", len(app))
	}
	t := strings.Join(strings.Fields(string(app)), " ")
	if len(t) <= maxStateText {
		return t
	}
	cut := maxStateText
	for !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + "..."
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// writeChannels writes a line per channel that recorded messages (its
// name padded to w; of an opaque application, only their count), or one
// saying none did.
func (g Global) writeChannels(b *strings.Builder, w int, opaque bool) {
	busy := 0
	for _, cs := range g.Chans {
		if len(cs.Msgs) == 0 {
			continue
		}
		busy++
		if opaque {
			fmt.Fprintf(b, "  in flight %-*s %d msg%s\n", w, cs.Chan.String(), len(cs.Msgs), plural(len(cs.Msgs)))
			continue
		}
		writeInFlight(b, w, cs)
	}
	if busy == 0 {
		b.WriteString("  in flight: nothing (all channels recorded empty)\n")
	}
}

// writeInFlight writes the line of a channel state with messages: the
// channel (padded to w), their total and their amounts, the first five
// of more than six.
func writeInFlight(b *strings.Builder, w int, cs ChanState) {
	var amt int64
	amts := make([]string, len(cs.Msgs))
	for k, m := range cs.Msgs {
		amt += m.Amt
		amts[k] = fmt.Sprint(m.Amt)
	}
	if len(amts) > 6 {
		amts = append(amts[:5], "...")
	}
	fmt.Fprintf(b, "  in flight %-*s %10d   (%d msgs: %s)\n", w, cs.Chan.String(), amt, len(cs.Msgs), strings.Join(amts, " "))
}
