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
	chans := map[Channel]bool{}
	for c := range g.Chans {
		chans[c] = true
	}
	for c := range h.Chans {
		chans[c] = true
	}
	var cs []Channel
	for c := range chans {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return ChannelLess(cs[i], cs[j]) })
	for _, c := range cs {
		if !slices.Equal(g.Chans[c], h.Chans[c]) {
			lines = append(lines, fmt.Sprintf("chan %s: %s vs %s", c, FormatMsgs(g.Chans[c]), FormatMsgs(h.Chans[c])))
		}
	}
	return strings.Join(lines, "\n")
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
