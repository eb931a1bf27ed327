package runtime_test

import (
	"context"
	"fmt"
	"time"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// A three-node bank: transfer money, take a snapshot without stopping, and
// read the recorded global state.
func ExampleCluster() {
	top := spec.Complete(3)
	cl, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology:  top,
		NewApp:    func(spec.ProcID) (core.App, error) { return app.NewBank(100) },
		Transport: transport.NewMemory(top, transport.MemoryConfig{}),
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer cl.Stop(ctx)

	_ = cl.Send("P1", "P2", app.Transfer(30))
	id, _ := cl.Snapshot("P1")
	_ = cl.Send("P2", "P3", app.Transfer(10))
	g, err := cl.Collect(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("snapshot", g.ID, "total", g.Total())
	// Output: snapshot 1 total 300
}
