package instrument_test

import (
	"fmt"
	"os"

	"github.com/markerwave/markerwave/instrument"
)

// The article's two accounts: N1 sends $30 to N2 while N2 initiates
// snapshot 0; N1's marker follows the $30, so N2 records it in flight.
// One file holds every node's observations (New, then For each node);
// markerwave audit reads it as it is.
func Example() {
	rec, err := instrument.New(os.Stdout, instrument.Config{
		Run: "two-accounts", Procs: []string{"N1", "N2"},
		InitBal: map[string]int64{"N1": 100, "N2": 50}, Drained: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	n1, n2 := rec.For("N1"), rec.For("N2")
	n1.Send("N2", "t1", 30)
	n2.RecordState(0, 50) // N2 initiates snapshot 0
	n2.MarkerSent("N1", 0)
	n1.MarkerReceived("N2", 0)
	n1.RecordState(0, 70)
	n1.MarkerSent("N2", 0)
	n1.Report(0) // N1->N1 has no channel in: its part is done
	n2.Recv("N1", "t1", 30)
	n2.RecordChannelMessage(0, "N1", "t1", 30) // N2 records N1->N2 until N1's marker
	n2.MarkerReceived("N1", 0)
	n2.Report(0)
	if err := rec.Close(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"format":"markerwave-outsider/1","run":"two-accounts","topology":{"procs":["N1","N2"],"channels":[{"from":"N1","to":"N2"},{"from":"N2","to":"N1"}]},"init_bal":{"N1":100,"N2":50},"drained":true}
	// {"node":"N1","ev":"send","to":"N2","id":"t1","amount":30}
	// {"node":"N2","ev":"record","snap":0,"state":{"bal":50}}
	// {"node":"N2","ev":"marker_send","to":"N1","snap":0}
	// {"node":"N1","ev":"marker_recv","from":"N2","snap":0}
	// {"node":"N1","ev":"record","snap":0,"state":{"bal":70}}
	// {"node":"N1","ev":"marker_send","to":"N2","snap":0}
	// {"snapshot":{"snap":0,"procs":{"N1":{"bal":70}}}}
	// {"node":"N2","ev":"recv","from":"N1","id":"t1","amount":30}
	// {"node":"N2","ev":"marker_recv","from":"N1","snap":0}
	// {"snapshot":{"snap":0,"procs":{"N2":{"bal":50}},"chans":{"N1->N2":{"ids":["t1"]}}}}
}
