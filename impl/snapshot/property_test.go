package snapshot_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/snapshot/snapshottest"
	"github.com/markerwave/markerwave/spec"
)

// canon makes every empty slice of g nil, so that snapshots compare by
// content: JSON and PartOf may turn a nil slice into an empty one.
func canon(g snapshot.Global) snapshot.Global {
	g.Nodes = append([]snapshot.NodeState(nil), g.Nodes...)
	for i := range g.Nodes {
		g.Nodes[i] = canonNode(g.Nodes[i])
	}
	g.Chans = canonChans(g.Chans)
	return g
}

func canonNode(n snapshot.NodeState) snapshot.NodeState {
	n.App = nilIfEmpty(n.App)
	if len(n.NextSend) == 0 {
		n.NextSend = nil
	}
	return n
}

func canonChans(cs []snapshot.ChanState) []snapshot.ChanState {
	if len(cs) == 0 {
		return nil
	}
	out := make([]snapshot.ChanState, len(cs))
	for i, c := range cs {
		out[i] = c
		out[i].Msgs = nil
		for _, m := range c.Msgs {
			m.Payload = nilIfEmpty(m.Payload)
			out[i].Msgs = append(out[i].Msgs, m)
		}
	}
	return out
}

func canonPart(p snapshot.Part) snapshot.Part {
	p.Node = canonNode(p.Node)
	p.In = canonChans(p.In)
	return p
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Assemble of a consistent snapshot's parts, in any order, returns the
// snapshot; Local and PartOf are inverse; the JSON encoding decodes
// strictly to the same snapshot, which validates again.
func TestAssembleRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := snapshottest.Global(6).Draw(t, "g")
		require.NoError(t, g.Validate(), "the generator draws consistent snapshots")
		parts := snapshottest.Parts(g)
		shuffled := rapid.Permutation(parts).Draw(t, "order")

		a, err := snapshot.Assemble(g.Topology, g.ID, shuffled)
		require.NoError(t, err)
		require.Equal(t, canon(g), canon(a), "Assemble of the parts is the snapshot")

		for i, p := range g.Topology.Procs {
			ls, ok := a.Local(p)
			require.True(t, ok, "Local(%s)", p)
			assert.Equal(t, canonPart(parts[i]), canonPart(snapshot.PartOf(ls, p == g.Initiator)), "PartOf(Local(%s))", p)
		}
		_, ok := a.Local("no-such-proc")
		assert.False(t, ok)

		b, err := json.Marshal(a)
		require.NoError(t, err)
		var back snapshot.Global
		require.NoError(t, spec.DecodeStrict(b, &back))
		require.Equal(t, canon(g), canon(back), "JSON round trip")
		require.NoError(t, back.Validate())
	})
}

// Validate's cut seqs by channel index are Cut's (core.Cut of the local
// parts), channel by channel, also when a node lists its send seqs out of
// topology order (cutSeqs then looks the channels up).
func TestCutSeqsAreCut(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := snapshottest.Global(6).Draw(t, "g")
		if rapid.Bool().Draw(t, "shuffle") {
			i := rapid.IntRange(0, len(g.Nodes)-1).Draw(t, "node")
			g.Nodes = append([]snapshot.NodeState(nil), g.Nodes...)
			g.Nodes[i].NextSend = rapid.Permutation(g.Nodes[i].NextSend).Draw(t, "order")
		}
		cut, seqs := g.Cut(), snapshot.CutSeqs(&g)
		require.Len(t, seqs, len(g.Topology.Chans))
		for i, c := range g.Topology.Chans {
			assert.Equal(t, cut[c], seqs[i], "channel %s", c)
		}
	})
}

// Abstract, RecordedSnapshot, Cut, Total, InFlight and Recorded say what
// the recorded data says, computed here from the drawn channels directly.
func TestAbstractionsOfArbitrarySnapshots(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := snapshottest.Global(6).Draw(t, "g")
		var bal, inFlight int64
		recorded := 0
		procs := map[spec.ProcID]spec.LocalState{}
		chans := map[spec.Channel][]spec.AppMsg{}
		cut := map[spec.Channel]spec.ChanCut{}
		for _, n := range g.Nodes {
			procs[n.Proc] = n.State
			bal += n.State.Bal
			for _, cs := range n.NextSend {
				k := cut[cs.Chan]
				k.Sent = cs.Next - 1
				cut[cs.Chan] = k
			}
		}
		for _, cs := range g.Chans {
			msgs := []spec.AppMsg{}
			for _, m := range cs.Msgs {
				msgs = append(msgs, spec.AppMsg{Amt: m.Amt, Seq: m.Seq})
				inFlight += m.Amt
				recorded++
			}
			chans[cs.Chan] = msgs
			k := cut[cs.Chan]
			k.Got = cs.NextRecv - 1
			cut[cs.Chan] = k
		}
		abs := g.Abstract()
		assert.Equal(t, procs, abs.Procs, "Abstract: process states")
		assert.Equal(t, chans, abs.Chans, "Abstract: channel contents, seqs included")
		assert.Equal(t, cut, g.Cut(), "Cut: each channel's seqs before the sender's and the receiver's cut")
		assert.Equal(t, inFlight, g.InFlight(), "InFlight")
		assert.Equal(t, bal+inFlight, g.Total(), "Total: balances plus money in flight")
		assert.Equal(t, recorded, g.Recorded(), "Recorded: messages recorded")
		var locals []core.LocalSnapshot
		for _, p := range g.Topology.Procs {
			ls, _ := g.Local(p)
			locals = append(locals, ls)
		}
		assert.Equal(t, core.Cut(locals...), g.Cut(), "Cut is core.Cut of the local snapshots")
		rs := g.RecordedSnapshot()
		assert.Equal(t, spec.RecordedSnapshot{Snap: g.ID, Initiator: g.Initiator, Procs: procs, Chans: chans, Cut: cut}, rs)
		s := g.String()
		assert.Contains(t, s, fmt.Sprintf("snapshot %d", g.ID))
		assert.Contains(t, s, fmt.Sprintf("total %d = %d in accounts + %d in flight", bal+inFlight, bal, inFlight))
	})
}

// assemblyFault damages the parts of snapshot g and says what Assemble
// must name (a regular expression).
type assemblyFault struct {
	name  string
	plant func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string)
}

// quote is fmt.Sprintf, quoted as a regular expression.
func quote(format string, args ...any) string { return regexp.QuoteMeta(fmt.Sprintf(format, args...)) }

var assemblyFaults = []assemblyFault{
	{"part of another snapshot", func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string) {
		i := rapid.IntRange(0, len(parts)-1).Draw(t, "i")
		parts[i].Snap = g.ID + 1
		if g.ID+1 == 0 {
			parts[i].Snap = 1
		}
		return parts, quote("part of %s belongs to snapshot %d", parts[i].Node.Proc, parts[i].Snap)
	}},
	{"two parts of one process", func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string) {
		i := rapid.IntRange(0, len(parts)-1).Draw(t, "i")
		p := parts[i]
		p.Initiated = false
		return append(parts, p), quote("two parts of %s", p.Node.Proc)
	}},
	{"part of a process the topology lacks", func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string) {
		q := snapshottest.ProcID().Filter(func(q spec.ProcID) bool { return !g.Topology.Has(q) }).Draw(t, "foreign")
		return append(parts, snapshot.Part{Snap: g.ID, Node: snapshot.NodeState{Proc: q}}), quote("part of %q, which is not a process of the topology", q)
	}},
	{"missing part", func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string) {
		i := rapid.IntRange(0, len(parts)-1).Draw(t, "i")
		q := parts[i].Node.Proc
		return append(parts[:i], parts[i+1:]...), quote("no part from %s", q)
	}},
	{"two initiators", func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string) {
		if len(parts) < 2 {
			t.Skip("one process")
		}
		i := rapid.IntRange(0, len(parts)-1).Draw(t, "i")
		j := rapid.IntRange(0, len(parts)-1).Filter(func(j int) bool { return j != i }).Draw(t, "j")
		for k := range parts {
			parts[k].Initiated = k == i || k == j
		}
		// The error names them in the order Assemble met them.
		a, b := parts[i].Node.Proc, parts[j].Node.Proc
		return parts, fmt.Sprintf("both (%s and %s|%s and %s) initiated it", regexp.QuoteMeta(string(a)), regexp.QuoteMeta(string(b)), regexp.QuoteMeta(string(b)), regexp.QuoteMeta(string(a)))
	}},
	{"state of a channel that is not incoming", func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string) {
		if len(g.Chans) == 0 {
			t.Skip("no channels")
		}
		c := rapid.SampledFrom(g.Chans).Draw(t, "chan")
		i := rapid.IntRange(0, len(parts)-1).Filter(func(i int) bool { return parts[i].Node.Proc != c.Chan.To }).Draw(t, "i")
		parts[i].In = append(parts[i].In, c)
		return parts, quote("part of %s holds a state of %s, which is not one of its incoming channels", parts[i].Node.Proc, c.Chan)
	}},
	{"two states of one channel", func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string) {
		if len(g.Chans) == 0 {
			t.Skip("no channels")
		}
		c := rapid.SampledFrom(g.Chans).Draw(t, "chan")
		i := g.Topology.ProcIndex(c.Chan.To)
		parts[i].In = append(parts[i].In, c)
		return parts, quote("part of %s holds two states of %s", c.Chan.To, c.Chan)
	}},
	{"missing channel state", func(t *rapid.T, g snapshot.Global, parts []snapshot.Part) ([]snapshot.Part, string) {
		if len(g.Chans) == 0 {
			t.Skip("no channels")
		}
		c := rapid.SampledFrom(g.Chans).Draw(t, "chan")
		i := g.Topology.ProcIndex(c.Chan.To)
		var in []snapshot.ChanState
		for _, cs := range parts[i].In {
			if cs.Chan != c.Chan {
				in = append(in, cs)
			}
		}
		parts[i].In = in
		return parts, quote("no state for channel %s", c.Chan)
	}},
}

// Assemble refuses every kind of misfit among the parts, whatever the
// snapshot, naming the snapshot and the process or channel at fault.
func TestAssembleRefusesMisfits(t *testing.T) {
	for _, f := range assemblyFaults {
		t.Run(f.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				g := snapshottest.Global(5).Draw(t, "g")
				parts, want := f.plant(t, g, snapshottest.Parts(g))
				parts = rapid.Permutation(parts).Draw(t, "order")
				_, err := snapshot.Assemble(g.Topology, g.ID, parts)
				require.Error(t, err, "Assemble accepted parts with %s", f.name)
				assert.Contains(t, err.Error(), fmt.Sprintf("assemble snapshot %d: ", g.ID))
				assert.Regexp(t, want, err.Error())
			})
		})
	}
}

// validationFault damages a consistent snapshot and returns the name of
// what it damaged (a process, a channel, or "" if only the counts show).
type validationFault struct {
	name  string
	plant func(t *rapid.T, g *snapshot.Global) string
}

// pickChan draws a channel of g (skipping topologies without one) and
// returns its index.
func pickChan(t *rapid.T, g *snapshot.Global) int {
	if len(g.Chans) == 0 {
		t.Skip("no channels")
	}
	return rapid.IntRange(0, len(g.Chans)-1).Draw(t, "chan")
}

// pickRecorded draws a channel state of g and one of its recorded
// messages' index, skipping if the channel recorded none.
func pickRecorded(t *rapid.T, g *snapshot.Global) (*snapshot.ChanState, int) {
	cs := &g.Chans[pickChan(t, g)]
	if len(cs.Msgs) == 0 {
		t.Skip("nothing recorded")
	}
	return cs, rapid.IntRange(0, len(cs.Msgs)-1).Draw(t, "msg")
}

// pickSend draws a channel of g and returns its sender's NextSend entry.
func pickSend(t *rapid.T, g *snapshot.Global) (*snapshot.ChanSeq, spec.Channel) {
	c := g.Chans[pickChan(t, g)].Chan
	n := &g.Nodes[g.Topology.ProcIndex(c.From)]
	for j := range n.NextSend {
		if n.NextSend[j].Chan == c {
			return &n.NextSend[j], c
		}
	}
	panic("no send seq for " + c.String())
}

func pickNode(t *rapid.T, g *snapshot.Global) *snapshot.NodeState {
	return &g.Nodes[rapid.IntRange(0, len(g.Nodes)-1).Draw(t, "node")]
}

func cloneGlobal(g snapshot.Global) snapshot.Global {
	b, err := json.Marshal(g)
	if err != nil {
		panic(err)
	}
	var c snapshot.Global
	if err := spec.DecodeStrict(b, &c); err != nil {
		panic(err)
	}
	return c
}

var validationFaults = []validationFault{
	{"no topology", func(t *rapid.T, g *snapshot.Global) string { g.Topology = nil; return "no topology" }},
	{"unknown initiator", func(t *rapid.T, g *snapshot.Global) string {
		g.Initiator = snapshottest.ProcID().Filter(func(q spec.ProcID) bool { return !g.Topology.Has(q) }).Draw(t, "initiator")
		return string(g.Initiator)
	}},
	{"node state missing", func(t *rapid.T, g *snapshot.Global) string {
		i := rapid.IntRange(0, len(g.Nodes)-1).Draw(t, "node")
		g.Nodes = append(g.Nodes[:i], g.Nodes[i+1:]...)
		return ""
	}},
	{"node state of another process", func(t *rapid.T, g *snapshot.Global) string {
		n := pickNode(t, g)
		p := n.Proc
		n.Proc = snapshottest.ProcID().Filter(func(q spec.ProcID) bool { return q != p }).Draw(t, "proc")
		return string(p)
	}},
	{"negative counter", func(t *rapid.T, g *snapshot.Global) string {
		n := pickNode(t, g)
		v := rapid.IntRange(-1<<40, -1).Draw(t, "v")
		if rapid.Bool().Draw(t, "sent") {
			n.State.Sent = v
		} else {
			n.State.Rcvd = v
		}
		return string(n.Proc)
	}},
	{"send seq 0", func(t *rapid.T, g *snapshot.Global) string {
		cs, c := pickSend(t, g)
		cs.Next = 0
		return c.String()
	}},
	{"send seq of another channel", func(t *rapid.T, g *snapshot.Global) string {
		cs, c := pickSend(t, g)
		cs.Chan = spec.Channel{From: c.To, To: c.From}
		return string(c.From)
	}},
	{"send seq later", func(t *rapid.T, g *snapshot.Global) string {
		cs, c := pickSend(t, g)
		cs.Next++
		return c.String()
	}},
	{"send seq earlier", func(t *rapid.T, g *snapshot.Global) string {
		cs, c := pickSend(t, g)
		cs.Next--
		return c.String()
	}},
	{"channel state missing", func(t *rapid.T, g *snapshot.Global) string {
		i := pickChan(t, g)
		g.Chans = append(g.Chans[:i], g.Chans[i+1:]...)
		return ""
	}},
	{"channel state of another channel", func(t *rapid.T, g *snapshot.Global) string {
		i := pickChan(t, g)
		c := g.Chans[i].Chan
		g.Chans[i].Chan = spec.Channel{From: c.To, To: c.From}
		return c.String()
	}},
	{"receive seq 0", func(t *rapid.T, g *snapshot.Global) string {
		i := pickChan(t, g)
		g.Chans[i].NextRecv = 0
		return g.Chans[i].Chan.String()
	}},
	{"receive seq later (orphan or lost first message)", func(t *rapid.T, g *snapshot.Global) string {
		i := pickChan(t, g)
		g.Chans[i].NextRecv++
		return g.Chans[i].Chan.String()
	}},
	{"receive seq earlier (a message missing)", func(t *rapid.T, g *snapshot.Global) string {
		i := pickChan(t, g)
		if g.Chans[i].NextRecv == 1 {
			t.Skip("receive seq 1")
		}
		g.Chans[i].NextRecv--
		return g.Chans[i].Chan.String()
	}},
	{"recorded message dropped", func(t *rapid.T, g *snapshot.Global) string {
		cs, k := pickRecorded(t, g)
		cs.Msgs = append(cs.Msgs[:k], cs.Msgs[k+1:]...)
		return cs.Chan.String()
	}},
	{"message recorded twice", func(t *rapid.T, g *snapshot.Global) string {
		cs, k := pickRecorded(t, g)
		cs.Msgs = append(cs.Msgs[:k+1], cs.Msgs[k:]...)
		return cs.Chan.String()
	}},
	{"message recorded that was not in flight", func(t *rapid.T, g *snapshot.Global) string {
		i := pickChan(t, g)
		cs := &g.Chans[i]
		cs.Msgs = append(cs.Msgs, snapshot.Msg{Seq: cs.NextRecv + uint64(len(cs.Msgs)), Amt: 1})
		return cs.Chan.String()
	}},
	{"wrong seq", func(t *rapid.T, g *snapshot.Global) string {
		cs, k := pickRecorded(t, g)
		old := cs.Msgs[k].Seq
		cs.Msgs[k].Seq = rapid.Uint64().Filter(func(s uint64) bool { return s != old }).Draw(t, "seq")
		return cs.Chan.String()
	}},
	{"amount not positive", func(t *rapid.T, g *snapshot.Global) string {
		cs, k := pickRecorded(t, g)
		cs.Msgs[k].Amt = rapid.Int64Max(0).Draw(t, "amt")
		return cs.Chan.String()
	}},
}

// Validate finds every inconsistency planted in an arbitrary consistent
// snapshot, and names the snapshot and what is at fault.
func TestValidateFindsEveryPlantedFault(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := snapshottest.Global(5).Draw(t, "g")
		require.NoError(t, g.Validate())
		zero := cloneGlobal(g)
		zero.ID = 0
		require.ErrorContains(t, zero.Validate(), "snapshot id 0")
	})
	for _, f := range validationFaults {
		t.Run(f.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				g := cloneGlobal(snapshottest.Global(5).Draw(t, "g"))
				where := f.plant(t, &g)
				err := g.Validate()
				require.Error(t, err, "Validate accepted a snapshot with %s", f.name)
				assert.Contains(t, err.Error(), fmt.Sprintf("snapshot %d", g.ID))
				if where != "" {
					assert.Contains(t, err.Error(), where)
				}
			})
		})
	}
}
