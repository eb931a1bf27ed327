package coretest_test

import (
	"fmt"
	"log"

	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/spec"
)

// The article's two-account transfer on a Net: P1 ($100) sends $30 to P2
// ($50) while P2 initiates snapshot 1, every frame delivered by hand.
func Example() {
	net, err := coretest.NewBank(spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50})
	if err != nil {
		log.Fatal(err)
	}
	p1p2, p2p1 := spec.Channel{From: "P1", To: "P2"}, spec.Channel{From: "P2", To: "P1"}
	must := func(_ any, err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	must(net.SendAmount("P1", "P2", 30)) // $30 in flight on P1->P2
	must(net.Initiate("P2", 1))          // P2 records $50
	must(net.Deliver(p2p1))              // P2's marker: P1 records $70
	must(net.Deliver(p1p2))              // the $30, recorded on P1->P2
	must(net.Deliver(p1p2))              // P1's marker closes P1->P2

	g := net.Recorded()[1]
	fmt.Printf("P1 $%d, P2 $%d, P1->P2 %s\n", g.Procs["P1"].Bal, g.Procs["P2"].Bal, spec.FormatMsgs(g.Chans[p1p2]))
	fmt.Printf("total: $%d\n", g.Total())
	// The run as a trace (spec.WriteTrace writes it; conformance replays it).
	for _, ev := range net.Trace("").Events {
		fmt.Println(ev)
	}
	// Output:
	// P1 $70, P2 $50, P1->P2 <<30#1>>
	// total: $150
	// SendApp(P1, P2, 30) #1
	// Initiate(1) at P2
	// RecvMarker(P2, P1) [snap 1]
	// RecvApp(P1, P2) 30#1
	// RecvMarker(P1, P2) [snap 1]
}
