// Package markerwave takes consistent snapshots of a distributed service
// while it runs (Chandy and Lamport 1985), and checks the service's own
// invariants on every one.
//
// The service supplies its state machine, App, in the manner of
// hashicorp/raft's FSM: Capture encodes the local state, Restore replaces
// it, Send is the local effect of sending a message, Apply the effect of
// receiving one. markerwave supplies the rest: nodes that carry the
// messages over FIFO channels, markers that record a global state no run
// contradicts, the channel states in flight across it, a store, and
// recovery from the latest complete snapshot.
//
// # Usage
//
// First, write the App. Its methods are called by one goroutine per node,
// never concurrently; a method that returns an error must leave the state
// as it was. Capture must be deterministic for a given state; Restore
// must accept whatever Capture returned.
//
// Second, state the invariants of a global snapshot: properties of all
// the processes' states together with the messages in flight, for
// example "every key has exactly one owner" or "no job is both queued and
// running":
//
//	owners := markerwave.Invariant{Name: "one owner per key", Check: func(s markerwave.AppSnapshot) error {
//		// decode s.States[p] and s.InFlight[c]; return an error naming what is wrong
//	}}
//
// Third, start a cluster with the application, a transport (nil: in
// memory; transport.NewTCP for loopback or real sockets) and a store:
//
//	c, err := markerwave.Start(markerwave.Config{
//		Topology:   markerwave.Complete(3),
//		NewApp:     func(p markerwave.ProcID) (markerwave.App, error) { return newShard(p), nil },
//		Invariants: []markerwave.Invariant{owners},
//		Store:      dir,
//	})
//
// Fourth, run the service through the cluster: c.Send(from, to, payload)
// has from's App.Send run, and to's App.Apply when the message arrives.
//
// Fifth, take snapshots whenever you like; the service keeps running:
//
//	g, err := c.TakeSnapshot(ctx, "P1")
//
// TakeSnapshot tells you how each one ended: a complete snapshot (saved
// in the store) on which every invariant holds; an *InvariantError that
// names each invariant broken (or panicking) and holds the snapshot that
// shows it; an *AbortedError when a node aborted it (with Config.Detector
// set, a snapshot waiting for a crashed node is aborted within
// DetectorConfig.Bound); an *IncompleteError naming what was missing when
// ctx ended.
//
// Sixth, stop (c.Stop delivers what is in flight first), and to recover
// after a crash, restart from the latest snapshot complete at every node:
//
//	from, err := markerwave.Recover(dir, topology) // nil: none, start fresh
//	c, err := markerwave.Start(markerwave.Config{..., From: from})
//
// Recover's error is not a fresh start: a directory that is missing or
// no store, or a store whose snapshots are all damaged or of another
// topology (ErrUnrecoverable, naming why each was passed over), is
// answered before anything starts; start fresh only on purpose.
//
// Every node then resumes from its recorded state, and every message in
// flight across the snapshot's cut is delivered again, once.
//
// Seventh, or instead: let the cluster recover on its own. Supervise runs
// it under a supervisor coordinated through etcd (its client; you run
// etcd, or the tests' impl/coord/etcdembed): each complete snapshot
// TakeSnapshot saves is published to a catalog in etcd, each node holds
// a lease, and when a node is found dead (the detector's suspicion, or
// its lease gone) the survivors stop and every node restarts from the
// latest snapshot of the catalog whose parts on disk agree, in a new
// incarnation advanced by a compare-and-swap:
//
//	s, err := markerwave.Supervise(ctx, markerwave.SuperviseConfig{
//		Config: cfg,
//		Etcd:   markerwave.Etcd{Endpoints: []string{"http://127.0.0.1:2379"}},
//		OnRecovery: func(r markerwave.Recovery) { log.Print(r.Death.Proc, " dead: incarnation ", r.Incarnation.N) },
//	})
//
// See docs/supervised.md for the bounds and the keys in etcd.
//
// # What is checked
//
// The snapshot algorithm is verified against tla/ChandyLamport.tla by
// package conformance, for any App: the recorded cut is consistent
// (ConsistentCut), each channel's recorded state is exactly the messages
// in flight across it (ExactChannelState), and the recorded state is one
// the run could have passed through (the theorem). These do not depend on
// what the state means. The spec abstracts a process's state to a
// balance; an App that moves a conserved quantity says how by also
// implementing Quantities (the bank in impl/app does), and the spec's
// Conservation is then about its quantity. An opaque App is abstracted
// by counting messages (core.OpaqueBalance), and what its state must
// satisfy is what its Invariants say. See docs/embedding.md.
package markerwave
