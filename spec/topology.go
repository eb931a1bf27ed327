package spec

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Topology is a set of processes joined by directed FIFO channels: the TLA+
// constants Proc and Chan. Procs and Chans are kept sorted (by id, then by
// (From, To)) so that every layer iterates them in the same order.
type Topology struct {
	Procs []ProcID
	Chans []Channel

	index map[ProcID]int
	in    map[ProcID][]Channel
	out   map[ProcID][]Channel
	chans map[Channel]int
}

// NewTopology validates procs and chans and returns the topology. It mirrors
// the ASSUME of tla/ChandyLamport.tla: ids are well formed and distinct,
// channels join two distinct known processes, no channel is listed twice,
// and the graph is strongly connected. Errors name what is wrong.
func NewTopology(procs []ProcID, chans []Channel) (*Topology, error) {
	if len(procs) == 0 {
		return nil, fmt.Errorf("topology: no processes")
	}
	t := &Topology{
		Procs: append([]ProcID(nil), procs...),
		Chans: append([]Channel(nil), chans...),
		index: make(map[ProcID]int, len(procs)),
		in:    make(map[ProcID][]Channel, len(procs)),
		out:   make(map[ProcID][]Channel, len(procs)),
		chans: make(map[Channel]int, len(chans)),
	}
	if err := t.indexProcs(); err != nil {
		return nil, err
	}
	if err := t.indexChans(); err != nil {
		return nil, err
	}
	if from, to, ok := t.unreachablePair(); ok {
		return nil, fmt.Errorf("topology: not strongly connected: %s cannot reach %s", string(from), string(to))
	}
	return t, nil
}

// indexProcs sorts t.Procs and indexes them, checking that each id is well
// formed and none is listed twice.
func (t *Topology) indexProcs() error {
	sort.Slice(t.Procs, func(i, j int) bool { return t.Procs[i] < t.Procs[j] })
	for i, p := range t.Procs {
		if err := ValidateProcID(p); err != nil {
			return fmt.Errorf("topology: %w", err)
		}
		if i > 0 && t.Procs[i-1] == p {
			return fmt.Errorf("topology: duplicate process id %q", string(p))
		}
		t.index[p] = i
	}
	return nil
}

// indexChans sorts t.Chans and indexes them with each process's in- and
// out-channels, checking that each joins two distinct known processes and
// none is listed twice.
func (t *Topology) indexChans() error {
	sort.Slice(t.Chans, func(i, j int) bool { return ChannelLess(t.Chans[i], t.Chans[j]) })
	for i, c := range t.Chans {
		if err := t.checkEnds(c); err != nil {
			return err
		}
		if i > 0 && t.Chans[i-1] == c {
			return fmt.Errorf("topology: duplicate channel %s", c)
		}
		t.chans[c] = i
		t.out[c.From] = append(t.out[c.From], c)
		t.in[c.To] = append(t.in[c.To], c)
	}
	return nil
}

// checkEnds checks that channel c joins two distinct processes of t.
func (t *Topology) checkEnds(c Channel) error {
	for _, p := range []ProcID{c.From, c.To} {
		if _, ok := t.index[p]; !ok {
			return fmt.Errorf("topology: channel %s: unknown process %q", c, string(p))
		}
	}
	if c.From == c.To {
		return fmt.Errorf("topology: channel %s is a self-loop; self-loops are not supported", c)
	}
	return nil
}

// Equal reports whether t and u have the same processes and channels.
func (t *Topology) Equal(u *Topology) bool {
	return slices.Equal(t.Procs, u.Procs) && slices.Equal(t.Chans, u.Chans)
}

// ChannelLess orders channels by (From, To).
func ChannelLess(a, b Channel) bool {
	if a.From != b.From {
		return a.From < b.From
	}
	return a.To < b.To
}

// unreachablePair returns the first (from, to) in sorted order such that no
// directed path leads from from to to.
func (t *Topology) unreachablePair() (ProcID, ProcID, bool) {
	for _, p := range t.Procs {
		seen := map[ProcID]bool{p: true}
		stack := []ProcID{p}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, c := range t.out[x] {
				if !seen[c.To] {
					seen[c.To] = true
					stack = append(stack, c.To)
				}
			}
		}
		for _, q := range t.Procs {
			if !seen[q] {
				return p, q, true
			}
		}
	}
	return "", "", false
}

// Has reports whether p is a process of the topology.
func (t *Topology) Has(p ProcID) bool { _, ok := t.index[p]; return ok }

// HasChan reports whether c is a channel of the topology.
func (t *Topology) HasChan(c Channel) bool { _, ok := t.chans[c]; return ok }

// ProcIndex is p's position in Procs, or -1.
func (t *Topology) ProcIndex(p ProcID) int {
	if i, ok := t.index[p]; ok {
		return i
	}
	return -1
}

// ChanIndex is c's position in Chans, or -1.
func (t *Topology) ChanIndex(c Channel) int {
	if i, ok := t.chans[c]; ok {
		return i
	}
	return -1
}

// In lists p's incoming channels, sorted. The slice must not be modified.
func (t *Topology) In(p ProcID) []Channel { return t.in[p] }

// Out lists p's outgoing channels, sorted. The slice must not be modified.
func (t *Topology) Out(p ProcID) []Channel { return t.out[p] }

// topologyJSON is the file form: {"procs": [...], "channels": [{"from","to"}]}.
type topologyJSON struct {
	Procs    []ProcID  `json:"procs"`
	Channels []Channel `json:"channels"`
}

// MarshalJSON writes the file form.
func (t *Topology) MarshalJSON() ([]byte, error) {
	return json.Marshal(topologyJSON{Procs: t.Procs, Channels: t.Chans})
}

// UnmarshalJSON reads and validates the file form.
func (t *Topology) UnmarshalJSON(b []byte) error {
	nt, err := ParseTopology(b)
	if err != nil {
		return err
	}
	*t = *nt
	return nil
}

// ParseTopology reads {"procs": ["P1", ...], "channels": [{"from": "P1",
// "to": "P2"}, ...]} strictly (unknown fields are errors) and validates it.
func ParseTopology(b []byte) (*Topology, error) {
	var tj topologyJSON
	if err := DecodeStrict(b, &tj); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	return NewTopology(tj.Procs, tj.Channels)
}

// Ring is P1 -> P2 -> ... -> Pn -> P1.
func Ring(n int) *Topology {
	procs := numbered(n)
	var chans []Channel
	for i := range procs {
		chans = append(chans, Channel{procs[i], procs[(i+1)%n]})
	}
	if n == 1 {
		chans = nil
	}
	return mustTopology(procs, chans)
}

// Complete joins every ordered pair of distinct processes P1..Pn.
func Complete(n int) *Topology {
	procs := numbered(n)
	return mustTopology(procs, AllPairs(procs))
}

// AllPairs is the channels of the complete graph on procs: one for every
// ordered pair of distinct processes, in the order of procs.
func AllPairs(procs []ProcID) []Channel {
	var chans []Channel
	for _, p := range procs {
		for _, q := range procs {
			if p != q {
				chans = append(chans, Channel{p, q})
			}
		}
	}
	return chans
}

func numbered(n int) []ProcID {
	procs := make([]ProcID, n)
	for i := range procs {
		procs[i] = ProcID(fmt.Sprintf("P%d", i+1))
	}
	return procs
}

func mustTopology(procs []ProcID, chans []Channel) *Topology {
	t, err := NewTopology(procs, chans)
	if err != nil {
		panic(err) // unreachable: Ring and Complete build valid graphs for n >= 1
	}
	return t
}
