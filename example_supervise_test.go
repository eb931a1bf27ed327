package markerwave_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/markerwave/markerwave"
)

// The key-value store under supervision: a snapshot, a node killed, and
// the store back on its own, every shard as the snapshot recorded it.
// etcd is a real one, started in this process for the example
// (impl/coord/etcdembed); a service names its own.
func Example_supervise() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	etcd, err := startSharedEtcd()
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "kv-supervised")
	defer os.RemoveAll(dir)
	recovered := make(chan markerwave.Recovery, 1)
	s, err := markerwave.Supervise(ctx, markerwave.SuperviseConfig{
		Config: markerwave.Config{
			Topology:   markerwave.Complete(3),
			NewApp:     kvApps(false),
			Invariants: []markerwave.Invariant{oneOwner("a", "b", "c", "d")},
			Store:      dir,
		},
		Etcd:       markerwave.Etcd{Endpoints: []string{etcd.Endpoint()}, Cluster: fmt.Sprint("example-", clusters.Add(1))},
		OnRecovery: func(r markerwave.Recovery) { recovered <- r },
	})
	if err != nil {
		panic(err)
	}
	defer s.Stop(ctx)
	_ = s.Send("P1", "P2", move("a", "1"))
	_ = s.Quiesce(ctx)
	g, err := s.TakeSnapshot(ctx, "P1")
	if err != nil {
		panic(err)
	}
	_ = s.Send("P2", "P3", move("a", "1")) // after the snapshot: rolled back
	_ = s.Quiesce(ctx)

	_ = s.Crash("P2")
	r := <-recovered
	fmt.Printf("%s found dead; incarnation %d restarted from snapshot %d (the latest: %v)\n",
		r.Death.Proc, r.Incarnation.N, r.Incarnation.From, r.Incarnation.From == g.ID)
	g2, err := s.TakeSnapshot(ctx, "P3")
	if err != nil {
		panic(err)
	}
	for _, n := range g2.Nodes {
		fmt.Printf("%s owns %s\n", n.Proc, n.App)
	}
	// Output:
	// P2 found dead; incarnation 2 restarted from snapshot 1 (the latest: true)
	// P1 owns {"b":"2","c":"3"}
	// P2 owns {"a":"1","d":"4"}
	// P3 owns {}
}
