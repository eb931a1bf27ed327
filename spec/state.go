package spec

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// LocalState is the spec's abstraction of one process's state, the TLA+
// record LocalState == [bal, sent, rcvd]: its balance, how many application
// sends it has made (each spends one unit of its budget) and how many
// application messages it has received (a monotone counter).
type LocalState struct {
	Bal  int64 `json:"bal"`
	Sent int   `json:"sent"`
	Rcvd int   `json:"rcvd"`
}

// AppMsg is an application message in a channel, the TLA+ record
// [kind |-> "app", amt |-> Amt, seq |-> Seq]: Seq numbers the messages of
// one channel from 1, in send order.
type AppMsg struct {
	Amt int64  `json:"amt"`
	Seq uint64 `json:"seq"`
}

// GlobalState is the application part of a global state, the TLA+ record
// AppState == [proc, chan]: every process's local state and every channel's
// application messages in order. A recorded snapshot has this form too.
type GlobalState struct {
	Procs map[ProcID]LocalState `json:"procs"`
	Chans map[Channel][]AppMsg  `json:"-"`
}

// Total is the money the state holds: balances plus amounts in flight.
func (g GlobalState) Total() int64 {
	var t int64
	for _, l := range g.Procs {
		t += l.Bal
	}
	for _, ms := range g.Chans {
		for _, m := range ms {
			t += m.Amt
		}
	}
	return t
}

// Clone returns a deep copy.
func (g GlobalState) Clone() GlobalState {
	c := GlobalState{Procs: make(map[ProcID]LocalState, len(g.Procs)), Chans: make(map[Channel][]AppMsg, len(g.Chans))}
	for p, l := range g.Procs {
		c.Procs[p] = l
	}
	for ch, ms := range g.Chans {
		c.Chans[ch] = append([]AppMsg(nil), ms...)
	}
	return c
}

// Equal reports whether two states are the same, treating a missing
// channel as empty.
func (g GlobalState) Equal(h GlobalState) bool { return g.Diff(h) == "" }

// Diff describes how h differs from g, one line per difference in a fixed
// order, or "" when they are equal.
func (g GlobalState) Diff(h GlobalState) string {
	return strings.Join(append(g.diffProcs(h), g.diffChans(h)...), "\n")
}

// diffProcs is one line per process whose state differs between g and h
// (or which only one of them has), in id order.
func (g GlobalState) diffProcs(h GlobalState) []string {
	var lines []string
	procs := map[ProcID]bool{}
	for p := range g.Procs {
		procs[p] = true
	}
	for p := range h.Procs {
		procs[p] = true
	}
	for _, p := range sortedProcs(procs) {
		a, aok := g.Procs[p]
		b, bok := h.Procs[p]
		if a != b || aok != bok {
			lines = append(lines, fmt.Sprintf("proc %s: %s vs %s", string(p), fmtLocal(a, aok), fmtLocal(b, bok)))
		}
	}
	return lines
}

// diffChans is one line per channel whose messages differ between g and h
// (a missing channel being empty), in channel order.
func (g GlobalState) diffChans(h GlobalState) []string {
	var lines []string
	for _, c := range unionChans(g.Chans, h.Chans) {
		if !slices.Equal(g.Chans[c], h.Chans[c]) {
			lines = append(lines, fmt.Sprintf("chan %s: %s vs %s", c, FormatMsgs(g.Chans[c]), FormatMsgs(h.Chans[c])))
		}
	}
	return lines
}

// unionChans lists the channels either a or b has, each once, in channel
// order.
func unionChans(a, b map[Channel][]AppMsg) []Channel {
	cs := make([]Channel, 0, len(a)+len(b))
	for c := range a {
		cs = append(cs, c)
	}
	for c := range b {
		if _, dup := a[c]; !dup {
			cs = append(cs, c)
		}
	}
	sort.Slice(cs, func(i, j int) bool { return ChannelLess(cs[i], cs[j]) })
	return cs
}

func fmtLocal(l LocalState, ok bool) string {
	if !ok {
		return "(absent)"
	}
	return fmt.Sprintf("[bal=%d sent=%d rcvd=%d]", l.Bal, l.Sent, l.Rcvd)
}

// FormatMsgs renders a channel's messages as "<<30#1, 20#2>>" (amount#seq).
func FormatMsgs(ms []AppMsg) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%d#%d", m.Amt, m.Seq)
	}
	return "<<" + strings.Join(parts, ", ") + ">>"
}

func sortedProcs(set map[ProcID]bool) []ProcID { return slices.Sorted(maps.Keys(set)) }
