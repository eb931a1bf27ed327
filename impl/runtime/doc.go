// Package runtime runs markerwave nodes: each core.Node in its own
// goroutine, fed by a transport, driven through a safe API, reporting its
// local snapshots to a Collector that assembles global snapshots (the
// snapshot data itself is impl/snapshot's). A Cluster runs all the nodes
// of a topology in one process; RunProcess runs one node of a
// multi-process cluster.
//
// # One node of a multi-process cluster
//
// Each node process does, in order:
//
//  1. LoadConfig(path, self): read the cluster config (FileConfig) and
//     check it and this machine; every problem is named by its field's
//     JSON path in a *ConfigError. The config's "app" names an
//     application kind registered in impl/app (app.Register); the runtime
//     knows applications only through app.Params.
//  2. Open a PartStore for the config's SnapshotDir (impl/store's Open).
//  3. To restart from a stored snapshot, load it (impl/store's Load) and
//     pass it as ProcessOptions.From; every node of the cluster must
//     restart from the same one.
//  4. RunProcess(ctx, cfg, self, opts) until ctx ends: it starts the
//     transport, the trace, the part writer, the node, the workload and
//     the snapshot schedule, and stops them in reverse order on return,
//     reporting undelivered frames and node errors in its error.
//
// # All nodes in one process
//
// NewCluster with one transport for all (transport.NewMemory) or one per
// node; Send and Snapshot drive it, Collect waits for a snapshot, Quiesce
// for the channels to drain, and Stop ends it. See the Example.
package runtime
