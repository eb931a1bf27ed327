package coretest

import (
	"fmt"
	"math/rand/v2"

	"github.com/markerwave/markerwave/spec"
)

// RandomBank is a seeded, drained run of at least events steps of a bank
// of five accounts of $1000 on a complete graph: random transfers of $1 to
// $20 (refused ones are part of the workload), FIFO deliveries, and a
// snapshot started at a random process about once every snapEvery steps.
// The same arguments give the same run. It is the long run benchmarks and
// scaling tests need.
func RandomBank(events, snapEvery int, seed uint64) (*Net, error) {
	if snapEvery < 2 {
		return nil, fmt.Errorf("coretest: snapEvery %d, want at least 2", snapEvery)
	}
	topo := spec.Complete(5)
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		bal[p] = 1000
	}
	net, err := NewBank(topo, bal)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 2))
	sid := spec.SnapID(0)
	for len(net.Events) < events {
		if err := net.randomStep(r, snapEvery, &sid); err != nil {
			return nil, err
		}
	}
	return net, net.Drain()
}

// randomStep takes one of RandomBank's steps on a random channel: a
// transfer (45%), a delivery, or, once in snapEvery, snapshot *sid+1 at
// a random process.
func (n *Net) randomStep(r *rand.Rand, snapEvery int, sid *spec.SnapID) error {
	topo := n.Topo
	c := topo.Chans[r.IntN(len(topo.Chans))]
	switch x := r.IntN(snapEvery); {
	case x < snapEvery*45/100:
		_, _ = n.SendAmount(c.From, c.To, 1+r.Int64N(20))
	case x < snapEvery-1:
		if len(n.Queues[c]) > 0 {
			_, err := n.Deliver(c)
			return err
		}
	default:
		*sid++
		_, err := n.Initiate(topo.Procs[r.IntN(len(topo.Procs))], *sid)
		return err
	}
	return nil
}
