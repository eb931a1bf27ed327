package runtime_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// Collect checks every complete snapshot against the application's
// invariants: one that holds lets the snapshot through; a broken one and
// a panicking one are both named, with the snapshot that shows them.
func TestCollectChecksInvariants(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(3)
	wrongTotal := app.Conservation(301) // the banks hold 300: broken on every snapshot
	panics := spec.Invariant{Name: "panics", Check: func(s spec.AppSnapshot) error {
		owners := map[string][]spec.ProcID{}
		return fmt.Errorf("owner %s", owners["k"][int(s.Snap)]) // a bug in the invariant itself
	}}
	cl, err := mwrt.NewCluster(mwrt.ClusterConfig{
		Topology: topo, NewApp: bankApps(100),
		Transport:  transport.NewMemory(topo, transport.MemoryConfig{}),
		Invariants: []spec.Invariant{app.Conservation(300), wrongTotal, panics},
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Stop(ctxFor(t, 5*time.Second))) }()

	require.NoError(t, cl.Send("P1", "P2", app.Transfer(30)))
	id, err := cl.Snapshot("P1")
	require.NoError(t, err)
	g, err := cl.Collect(ctxFor(t, 5*time.Second), id)
	var ie *mwrt.InvariantError
	require.ErrorAs(t, err, &ie, "the collector did not check the invariants: Collect returned %v", err)
	assert.Equal(t, id, g.ID, "the snapshot is returned with the error")
	assert.Equal(t, g.ID, ie.Global.ID)
	var broken []string
	for _, e := range ie.Err.(interface{ Unwrap() []error }).Unwrap() {
		var one *spec.InvariantError
		require.True(t, errors.As(e, &one))
		broken = append(broken, one.Invariant)
		assert.Equal(t, one.Invariant == "panics", one.Panicked)
	}
	assert.Equal(t, []string{"Conservation", "panics"}, broken, "the Conservation that holds is not reported")
	msg := err.Error()
	assert.Contains(t, msg, `breaks invariant "Conservation": the snapshot holds 300 (`)
	assert.Contains(t, msg, "the system holds 301")
	assert.Contains(t, msg, `invariant "panics" panicked: runtime error: index out of range [1] with length 0`)
	assert.Contains(t, msg, `P1 state {"bal":`, "the report shows the snapshot's states")
}
