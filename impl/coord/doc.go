// Package coord is the supervised mode's coordination through etcd
// (docs/supervised.md): recovery without an operator. It needs only
// etcd's client (go.etcd.io/etcd/client/v3); impl/coord/etcdembed starts
// a real server in-process for tests and demos.
//
// Under /markerwave/<cluster>/ etcd holds, each part of the recovery:
//
//   - members/<P>: detection, and one supervisor per process. One key
//     per node, attached to a lease its supervisor renews; a supervisor
//     claims all its processes in one transaction before it starts a
//     node (Claim: every key absent, or none put), then enters them in
//     the incarnation chosen (Enter); a node whose supervisor dies
//     stops renewing, etcd deletes the key when the lease expires
//     (LeaseTTL + 0.5 s), and every supervisor watching members/ finds it
//     dead (WatchDepartures).
//   - catalog/<id>: the restart point. An Entry per complete snapshot:
//     id, time by the snapshot's own record, each part's size and
//     checksum, who holds it; created once by a transaction (Publish).
//     Choose picks the latest whose parts on disk agree, naming each
//     part that disagrees.
//   - incarnation: one restart at a time. The current incarnation's
//     number and start point, advanced by a compare-and-swap on the key's
//     revision (Advance): of two survivors that both saw N, one starts
//     N+1 and the other follows it.
//   - restored/<N>/<P>: the recovery's completion. Which snapshot node P
//     restored from in incarnation N (MarkRestored, Restored).
//
// A Supervisor runs the loop: claim its processes, start the nodes
// (Nodes: goroutines or child processes) in a new incarnation from
// Choose's snapshot, hold their leases, wait for a death (a node's own report: a child's exit,
// the runtime's detector; or a departure from members/), stop the
// survivors, and start again; Metrics exports the detection and restart
// times.
package coord
