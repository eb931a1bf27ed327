package dataflow

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An unaligned X that recorded snapshot 1 on S1's barrier refuses S1's
// barrier 2 until S2's barrier 1 completes its part; its barrier 2 then
// overtakes only the records behind its queued barrier 1.
func TestSuccessiveWaitsForThePreviousSnapshot(t *testing.T) {
	g := diamond(t, Unaligned, 5, 4).Successively()
	c := NewCluster(g, nil)
	s1, s2, x := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	must(t)(s1.Inject())
	must(t)(c.Take(s1x, ActRecvBarrier))
	assert.Equal(t, 1, x.Snap())
	assert.False(t, x.Done(), "S2's input is recording")
	must(t)(s1.Inject())
	_, err := c.Take(s1x, ActRecvBarrier)
	assert.ErrorIs(t, err, ErrPrevious)
	must(t)(s2.Emit())
	must(t)(c.Take(s2x, ActProcess)) // logged for snapshot 1
	must(t)(s2.Inject())
	must(t)(c.Take(s2x, ActRecvBarrier))
	require.True(t, x.Done())
	one := x.Part()
	assert.Len(t, one.Logged[s2x], 1)
	// X's output: barrier 1, the record from S2. Barrier 2 goes between.
	st := must(t)(c.Take(s1x, ActRecvBarrier))
	require.True(t, st.Recorded)
	assert.Equal(t, 2, x.Snap())
	assert.Equal(t, []Item{{Barrier: true, Snap: 1}, {Barrier: true, Snap: 2}}, x.Queue(xk)[:2])
	assert.Len(t, x.Part().Overtaken[xk], 1)
	assert.Len(t, one.Logged[s2x], 1, "snapshot 1's part is unchanged")
	_, err = c.Nodes[3].RecvBarrier(xk, Item{Barrier: true, Snap: 2})
	assert.ErrorIs(t, err, ErrBarrierOrder, "barrier 2 cannot come before barrier 1")
	_, err = x.RecvBarrier(s1x, Item{Src: 0, I: 1, Seq: 1})
	assert.ErrorIs(t, err, ErrNotBarrier)
}

// Without Successive a source injects once, as in the spec.
func TestSingleSnapshotInjectsOnce(t *testing.T) {
	c := NewCluster(diamond(t, Aligned, 1, 2), nil)
	must(t)(c.Nodes[0].Inject())
	_, err := c.Nodes[0].Inject()
	assert.ErrorIs(t, err, ErrAlreadyRecorded)
}

// cyclic is S -> H, H -> B, B -> H (back-edge), B -> K.
func cyclic(t *testing.T, mode Mode, budget, capacity int) *Graph {
	t.Helper()
	g, err := NewGraph(Graph{
		Nodes: []NodeSpec{{Name: "S", Budget: budget}, {Name: "H", Kind: Operator},
			{Name: "B", Kind: Operator}, {Name: "K", Kind: Sink}},
		Edges: []EdgeSpec{{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 1, Back: true}, {From: 2, To: 3}},
		Cap:   capacity, Iter: 2, Mode: mode, Successive: true,
	})
	require.NoError(t, err)
	return g
}

// collector gathers each node's final part of every snapshot.
type collector struct {
	parts map[int][]*Part // by snapshot id, indexed by node
}

func (k *collector) note(c *Cluster) {
	for i, n := range c.Nodes {
		if !n.Done() {
			continue
		}
		ps := k.parts[n.Snap()]
		if ps == nil {
			ps = make([]*Part, len(c.Nodes))
			k.parts[n.Snap()] = ps
		}
		if ps[i] == nil {
			ps[i] = n.Part()
		}
	}
}

// complete is the snapshots every node completed its part of.
func (k *collector) complete() []*Snapshot {
	var out []*Snapshot
	for id := 1; k.parts[id] != nil; id++ {
		whole := true
		for _, p := range k.parts[id] {
			whole = whole && p != nil
		}
		if whole {
			out = append(out, &Snapshot{Parts: k.parts[id]})
		}
	}
	return out
}

// randomRun steps c at random to the end: emits, takes, and every few
// steps each source injects its next snapshot (sources at different
// times, so snapshots overlap and nodes wait for the previous one).
func randomRun(c *Cluster, rng *rand.Rand, every int, k *collector) {
	var sources []*Node
	for _, n := range c.Nodes {
		if c.G.Nodes[n.ID()].Kind == Source {
			sources = append(sources, n)
		}
	}
	for idle := 0; idle < 200; {
		moved := false
		switch x := rng.IntN(10); {
		case x == 0 && every > 0:
			s := sources[rng.IntN(len(sources))]
			if s.Emitted()/every > s.Snap() && s.Snap() < 8 {
				_, err := s.Inject()
				moved = err == nil
			}
		case x < 4:
			_, err := sources[rng.IntN(len(sources))].Emit()
			moved = err == nil
		default:
			e := rng.IntN(len(c.G.Edges))
			if it, ok := c.Nodes[c.G.Edges[e].From].Head(e); ok {
				want := ActProcess
				if it.Barrier {
					want = ActRecvBarrier
				}
				_, err := c.Take(e, want)
				moved = err == nil
			}
		}
		if k != nil {
			k.note(c)
		}
		if moved {
			idle = 0
		} else {
			idle++
		}
	}
}

// Successive snapshots in random schedules, on a DAG and a cycle, every
// protocol: each completed snapshot, restored and run on, gives every
// record at the sink exactly once.
func TestSuccessiveRestoreExactlyOnce(t *testing.T) {
	graphs := map[string]func(Mode) *Graph{
		"diamond": func(m Mode) *Graph { return diamond(t, m, 12, 2).Successively() },
		"cycle":   func(m Mode) *Graph { return cyclic(t, m, 12, 2) },
	}
	restored := 0
	for name, mk := range graphs {
		for _, mode := range []Mode{Aligned, Unaligned, ChandyLamport} {
			for seed := range uint64(20) {
				t.Run(fmt.Sprintf("%s/%s/%d", name, mode, seed), func(t *testing.T) {
					g := mk(mode)
					rng := rand.New(rand.NewPCG(seed, 1))
					c := NewCluster(g, nil)
					k := &collector{parts: map[int][]*Part{}}
					randomRun(c, rng, 3, k)
					total := 0
					for _, n := range g.Nodes {
						total += n.Budget
					}
					require.Len(t, c.Sink().Output(), total, "the run ended")
					snaps := k.complete()
					require.NotEmpty(t, snaps)
					for i, s := range snaps {
						require.Equal(t, i+1, s.ID(), "snapshots complete in order")
						r, err := RestoreCluster(g, s, nil)
						require.NoError(t, err)
						randomRun(r, rng, 0, nil)
						out := r.Sink().Output()
						require.Len(t, out, total, "restored from snapshot %d", s.ID())
						for key, n := range out {
							require.Equal(t, 1, n, "record %v at the sink, restored from snapshot %d", key, s.ID())
						}
						if mode == Aligned && name == "diamond" {
							all, _ := s.ChannelRecords(g)
							assert.Zero(t, all, "ABS on a DAG records no channel state")
						}
						restored++
					}
				})
			}
		}
	}
	assert.Greater(t, restored, 6*20, "most runs completed several snapshots")
}
