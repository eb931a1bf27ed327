package markerwave_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/markerwave/markerwave"
	"github.com/markerwave/markerwave/impl/coord/etcdembed"
)

// The key-value store under supervision: a snapshot, a node killed, and
// the store back on its own, every shard as the snapshot recorded it.
// The etcd it coordinates through is a real one, started in this process
// on loopback (impl/coord/etcdembed, a new temporary directory and free
// ports); a service of several machines names its etcd cluster's
// endpoints instead.
func Example_supervise() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	etcd, err := etcdembed.Start(etcdembed.Config{})
	if err != nil {
		panic(err)
	}
	defer etcd.Stop()
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
		Etcd:       markerwave.Etcd{Endpoints: []string{etcd.Endpoint()}, Cluster: "kv"},
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
