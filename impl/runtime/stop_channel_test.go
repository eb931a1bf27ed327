package runtime_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// TestRunProcessStopsOnStoppedChannel: a node whose channel stopped for
// good (here P3 restored from a snapshot, its peers started fresh: every
// handshake between them is refused) stops on its own with its summary,
// instead of running on to its context's end logging the error every
// heartbeat (the supervised nemesis's cluster that never snapshotted
// again).
func TestRunProcessStopsOnStoppedChannel(t *testing.T) {
	checkNoLeak(t)
	cfg := testConfig(t, t.TempDir())
	cfg.TraceDir = ""
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	runNodes(t, cfg, st, 300*time.Millisecond, nil)
	used, err := st.Used()
	require.NoError(t, err)
	require.NotEmpty(t, used)
	from, err := st.Load(used[0])
	require.NoError(t, err)

	lns := map[spec.ProcID]net.Listener{}
	for _, p := range cfg.Topology.Procs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[p] = ln
		cfg.Nodes[p] = mwrt.NodeAddress{Listen: ln.Addr().String()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		log strings.Builder
	)
	w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(b) })
	errs := map[spec.ProcID]error{}
	for _, p := range cfg.Topology.Procs {
		var g *snapshot.Global
		if p == "P3" {
			g = &from
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := mwrt.RunProcess(ctx, cfg, p, mwrt.ProcessOptions{Store: st, Out: w, Listener: lns[p], From: g})
			mu.Lock()
			errs[p] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "the nodes ran to the context's end:\n%s", log.String())
	for _, p := range cfg.Topology.Procs {
		require.Error(t, errs[p], p)
		assert.Contains(t, errs[p].Error(), "a channel stopped", p)
		assert.Contains(t, log.String(), string(p)+": stopping on its own: a channel stopped: a peer restarted, or restored from another snapshot, its channel cannot resume")
	}
}
