package core_test

import (
	"fmt"
	"log"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// The article's two accounts, driven by hand: P1 ($100) transfers $30 to
// P2 ($50) and P2 initiates a snapshot while the $30 is in flight. The
// snapshot records P1 after the send, P2 before the receipt and the $30
// on channel P1->P2: $150, the money in the system.
func Example() {
	topo := spec.Complete(2) // P1->P2 and P2->P1
	initial := map[spec.ProcID]int64{"P1": 100, "P2": 50}

	// 1. One node per process.
	nodes := map[spec.ProcID]*core.Node{}
	for _, p := range topo.Procs {
		bank, err := app.NewBank(initial[p])
		if err != nil {
			log.Fatal(err)
		}
		if nodes[p], err = core.New(core.Config{Topology: topo, Self: p, App: bank}); err != nil {
			log.Fatal(err)
		}
	}

	// 3. One FIFO queue per channel for the frames each step sends, and
	// 5. the local snapshots collected as nodes complete them.
	queues := map[spec.Channel][]wire.Frame{}
	var parts []core.LocalSnapshot
	handle := func(st core.Step, err error) {
		if err != nil {
			log.Fatal(err)
		}
		for _, env := range st.Out {
			queues[env.Chan] = append(queues[env.Chan], env.Frame)
		}
		if st.Completed != 0 {
			parts = append(parts, nodes[st.Event.Proc].TakeCompleted()...)
		}
	}
	// 4. Deliver a channel's head at its receiver.
	deliver := func(from, to spec.ProcID) {
		c := spec.Channel{From: from, To: to}
		f := queues[c][0]
		queues[c] = queues[c][1:]
		handle(nodes[to].Deliver(wire.Envelope{Chan: c, Frame: f}))
	}

	// 2. Feed the steps.
	handle(nodes["P1"].SendApp("P2", app.Transfer(30))) // $30 in flight
	handle(nodes["P2"].Initiate(1))                     // P2 records $50
	deliver("P2", "P1")                                 // P2's marker: P1 records $70
	deliver("P1", "P2")                                 // the $30, recorded on P1->P2
	deliver("P1", "P2")                                 // P1's marker closes P1->P2

	var total int64
	for _, ls := range parts {
		fmt.Printf("snapshot %d, %s: $%d\n", ls.Snap, ls.Proc, ls.State.Bal)
		total += ls.State.Bal
		for _, r := range ls.Chans {
			for _, m := range r.Msgs {
				fmt.Printf("snapshot %d, %s: $%d in flight\n", ls.Snap, r.Chan, m.Amt)
				total += m.Amt
			}
		}
	}
	fmt.Printf("total: $%d\n", total)
	// Output:
	// snapshot 1, P1: $70
	// snapshot 1, P2: $50
	// snapshot 1, P1->P2: $30 in flight
	// total: $150
}
