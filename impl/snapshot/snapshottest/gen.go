// Package snapshottest draws consistent snapshots for the property tests
// of the packages that handle them (impl/snapshot, impl/store): arbitrary
// strongly connected topologies over arbitrary process ids, arbitrary
// snapshot ids, states, payloads and application states, and on every
// channel a cut with 0..4 messages in flight across it.
//
// A drawn snapshot is consistent in the strongest sense the runtime
// produces: each channel's recorded messages are exactly the seqs its
// receiver had not received and its sender had sent at their cuts, and
// each process's sent and rcvd counters are the number of seqs before its
// cut on its outgoing and incoming channels.
package snapshottest

import (
	"fmt"
	"math"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// MaxInFlight bounds the messages drawn in flight on one channel.
const MaxInFlight = 4

// maxSeq bounds the drawn receive seqs, so that counters fit in an int;
// maxMoney bounds balances and amounts, so that totals fit in an int64
// (Global.Total) for up to 64 processes, each with 64 incoming channels.
const (
	maxSeq   = 1 << 20
	maxMoney = 1 << 40
)

// ProcID draws a well-formed process id (spec.ValidateProcID).
func ProcID() *rapid.Generator[spec.ProcID] {
	return rapid.Custom(func(t *rapid.T) spec.ProcID {
		return spec.ProcID(rapid.StringMatching(`[A-Za-z][A-Za-z0-9_.-]{0,7}`).Draw(t, "proc"))
	})
}

// Topology draws a strongly connected topology of 1..maxProcs distinct
// processes: a ring through all of them in drawn order, plus drawn chords.
func Topology(maxProcs int) *rapid.Generator[*spec.Topology] {
	return rapid.Custom(func(t *rapid.T) *spec.Topology {
		procs := rapid.SliceOfNDistinct(ProcID(), 1, maxProcs, func(p spec.ProcID) spec.ProcID { return p }).Draw(t, "procs")
		n := len(procs)
		have := map[spec.Channel]bool{}
		var chans []spec.Channel
		add := func(c spec.Channel) {
			if c.From != c.To && !have[c] {
				have[c] = true
				chans = append(chans, c)
			}
		}
		for i := range procs {
			add(spec.Channel{From: procs[i], To: procs[(i+1)%n]})
		}
		if n > 2 {
			for _, e := range rapid.SliceOfN(rapid.IntRange(0, n*n-1), 0, n*n).Draw(t, "chords") {
				add(spec.Channel{From: procs[e/n], To: procs[e%n]})
			}
		}
		topo, err := spec.NewTopology(procs, chans)
		if err != nil {
			panic(fmt.Sprintf("snapshottest: drawn topology: %v", err))
		}
		return topo
	})
}

// Global draws a consistent snapshot over a drawn topology of up to
// maxProcs processes (Validate accepts it).
func Global(maxProcs int) *rapid.Generator[snapshot.Global] {
	return rapid.Custom(func(t *rapid.T) snapshot.Global {
		return Over(Topology(maxProcs).Draw(t, "topology")).Draw(t, "global")
	})
}

// Over draws a consistent snapshot over topology topo.
func Over(topo *spec.Topology) *rapid.Generator[snapshot.Global] {
	return rapid.Custom(func(t *rapid.T) snapshot.Global {
		g := snapshot.Global{
			ID:        spec.SnapID(rapid.Uint64Range(1, math.MaxUint64).Draw(t, "id")),
			Initiator: rapid.SampledFrom(append([]spec.ProcID{""}, topo.Procs...)).Draw(t, "initiator"),
			Topology:  topo,
		}
		nextSend := map[spec.Channel]uint64{}
		for _, c := range topo.Chans {
			cs := snapshot.ChanState{Chan: c, NextRecv: rapid.Uint64Range(1, maxSeq).Draw(t, "next_recv")}
			for k := range rapid.IntRange(0, MaxInFlight).Draw(t, "in_flight") {
				cs.Msgs = append(cs.Msgs, snapshot.Msg{
					Seq:     cs.NextRecv + uint64(k),
					Amt:     rapid.Int64Range(1, maxMoney).Draw(t, "amt"),
					Payload: rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "payload"),
				})
			}
			nextSend[c] = cs.NextRecv + uint64(len(cs.Msgs))
			g.Chans = append(g.Chans, cs)
		}
		for _, p := range topo.Procs {
			n := snapshot.NodeState{
				Proc:  p,
				App:   rapid.SliceOfN(rapid.Byte(), 0, 32).Draw(t, "app"),
				State: spec.LocalState{Bal: rapid.Int64Range(0, maxMoney).Draw(t, "bal")},
			}
			for _, c := range topo.Out(p) {
				n.NextSend = append(n.NextSend, snapshot.ChanSeq{Chan: c, Next: nextSend[c]})
				n.State.Sent += int(nextSend[c] - 1)
			}
			for _, c := range topo.In(p) {
				n.State.Rcvd += int(g.Chans[topo.ChanIndex(c)].NextRecv - 1)
			}
			g.Nodes = append(g.Nodes, n)
		}
		return g
	})
}

// Parts splits g into its processes' parts, in topology order: each
// process's state and the states of its incoming channels. Assemble is
// its inverse.
func Parts(g snapshot.Global) []snapshot.Part {
	parts := make([]snapshot.Part, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		p := snapshot.Part{Snap: g.ID, Initiated: n.Proc == g.Initiator, Node: n}
		for _, cs := range g.Chans {
			if cs.Chan.To == n.Proc {
				p.In = append(p.In, cs)
			}
		}
		parts = append(parts, p)
	}
	return parts
}
