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
//
// # What it promises
//
// Nodes. Each Node runs its core.Node on one goroutine; every method may
// be called from any goroutine and runs there, so the core's steps are
// totally ordered. A node hands each incoming channel's frames to the
// core in the order the transport delivered them, markers included (it
// never lets data overtake a marker, or the reverse). A frame the core
// rejects fails its channel (*ChannelError, matching ErrChannelFailed):
// reported once through OnError, then that frame and every later one of
// the channel are held, never applied, and listed by Held and Stop.
// Progress (state recorded, channel closed) and every completed local
// part reach the Collector before the node takes its next step; with a
// trace, every step is emitted before that.
//
// Collection. Collector.Collect(ctx, s) returns the snapshot assembled
// from exactly one part of s per process (snapshot.Assemble, which
// refuses parts of another snapshot and an inconsistent cut), checked
// against the application's invariants (ClusterConfig.Invariants; a
// broken or panicking one is an *InvariantError holding the snapshot;
// node processes check those their config's app kind declares the same
// way, checkGlobal, and never save a snapshot that breaks one: they log
// it, with the state that shows it, and name it in their summary), and
// hands each snapshot out once: a later Collect of it returns ErrCollected.
// Reports of a snapshot already collected, or given up with Forget, are
// dropped. Otherwise Collect returns an *IncompleteError naming exactly
// what s lacks: NeverRecorded, the processes without a part that never
// recorded, in topology order; Open, every incoming channel of those
// processes whose marker never arrived, by receiver in topology order,
// then in incoming order (a process with a part has none open);
// Stopped, the stopped nodes among them; Failed, the failed channels
// among Open. It returns at once, with Cause ErrNodeStopped or the first
// failed channel, when a node without its part has stopped or a channel
// in Open has failed; else at ctx's end, with ctx's error as Cause, and
// a later Collect can still get the snapshot. The collected snapshot's
// abstraction is the spec's recorded state of that id, down to each
// channel's cut seqs (conformance replays every collected snapshot
// against the model).
//
// Snapshot ids. Cluster.Snapshot gives concurrent calls distinct ids,
// above the restored snapshot's when restored. RunProcess numbers every
// run's snapshots with a run tag no stored id has, and after a restore
// above the restored snapshot's id, so parts of different runs are never
// assembled together.
//
// Restore. A node restored from a snapshot (NodeConfig.From,
// ClusterConfig.From, ProcessOptions.From) starts in its recorded state
// (application state, counters, every channel's next seqs at the cut)
// and delivers each incoming channel's recorded messages first, in
// order, before any frame from the transport: on every channel the first
// deliveries are the recorded messages, then the new traffic, numbered
// on from the cut. The restored cluster's run, after the application
// steps that led to the recorded state, is a run of the spec. NewCluster
// refuses a snapshot that is not well formed (snapshot.Global.Validate)
// before any node starts. A process restored by RunProcess tells its
// peers which snapshot it was restored from at the TCP handshake
// (TCPConfig.Restored: differently restored nodes refuse each other,
// naming both ids), writes its log apart (RestoredTracePath, the
// header's RestoredFrom) and flushes it after every event, so that the
// run it was restored from and the restored one are audited as one
// history (conformance.MergeNodeLogs).
//
// Control. A process whose config gives it a control address
// (nodes.ID.control, loopback only without "tls") serves POST /snapshot
// there (control.go): it initiates a snapshot with the next id of its
// run and answers the id; the snapshot is then saved like a scheduled
// one.
//
// Security and metrics. With the config's "tls" (TLSConfig) every
// channel is mutual TLS (transport.TLS: a peer without a certificate of
// the cluster, or claiming another node, is refused and logged), and
// the control and metrics endpoints are HTTPS requiring a client
// certificate of the cluster; without it they are plain, for trusted
// networks, and loopback only. A process with nodes.ID.metrics serves
// its Metrics (metrics.go: Flink's checkpoint figures) at GET /metrics.
//
// Baselines. Cluster.StopTheWorld holds every node's application sends,
// waits until every application message sent has been delivered, records
// every node's state, then resumes the held sends in order: its snapshot
// is a state the run passed through, with every channel empty, and its
// cut seqs are the channels' seqs at that moment. Senders block
// meanwhile; snapshots and deliveries go on.
//
// Stopping. Quiesce returns once every frame sent was delivered, and
// fails at once naming the failed channels if frames are held on one.
// Stop waits for that (bounded by ctx), stops the nodes (bounded by one
// second more) and closes the transports; its *StopReport lists every
// frame accepted and never delivered, refused, or unacknowledged, every
// failed channel and node error, and every node that did not stop.
//
// Failures (tla/ChandyLamportFaults.tla; DetectorConfig, detector.go).
// With a detector (NodeConfig.Detector, ClusterConfig.Detector, the
// config's "failures"), a node sends a heartbeat on every outgoing
// channel it has sent nothing on for an interval, and suspects an
// in-neighbour it has heard nothing from for longer than the timeout:
// within Timeout + Interval of the last frame that reached it
// (DetectorConfig.Bound); Hint suspects at once on stronger evidence
// (RunProcess: a refused connection to a peer heard before). A peer
// heard again is trusted again. Each suspicion, withdrawal and abort is
// a Fault, reported through OnFault and Faults, naming the peer, its
// incarnation if its heartbeats carried one, and since when it was
// silent; it is also a step of the core (core.Node.Suspect, Unsuspect,
// Abort), so it is traced. While a node suspects q: SendApp to q is
// refused (core.ErrSuspected, naming q) before the application is
// debited; every snapshot waiting for a marker from q is aborted
// (core.Node.Abort: its recording released; its later markers dropped),
// and the Collector returns an *AbortedError (matching ErrAborted) for it,
// naming who aborted it and why, as it does for a snapshot that lacks the
// part of a suspected process, so a snapshot ends complete, aborted or
// incomplete; Initiate is refused (ErrPeerSuspected) until q is heard
// again. Node.Crash stops a node as a crash does, telling no one, for
// tests; Node.Suspect suspects an in-neighbour at once, as the detector
// does after the timeout (its aborts included), for a caller that decides
// suspicions itself (with Interval 0 no timer does).
//
// Graceful stop. Node.Finish ends a node's transfers (ErrFinished) and
// sends a done frame behind them on every outgoing channel; Draining
// says what the node still waits for (live in-neighbours not done,
// snapshots under way). RunProcess does both when ctx ends, waits at most
// the config's drain_ms, and returns nil after a clean stop or a
// *StopSummary naming dead peers, aborted and unfinished snapshots and
// lost frames. A process also aborts, when it suspects a peer, every
// snapshot whose part it saved that lacks that peer's part (its
// initiator killed after its markers went out, say), records every abort
// in the store (AbortStore), never assembles an aborted snapshot, and
// does not wait for one another node aborted; every abort is said in one
// wording, spec.AbortVerdict, as the store's catalog and the audit say
// it. Its workload holds back transfers to a peer never heard from (a
// node started alone keeps its money).
//
// Where each promise is checked: the package's tests (Collector
// properties with rapid, concurrent Collects, run tags, failed channels,
// restore from a persisted snapshot), and conformance's randomised
// in-memory and TCP runs: TestRuntimeMemory and TestRuntimeTCP (collected
// snapshots against the model), TestRuntimeRestore, TestRuntimeCollectIncomplete
// and TestRuntimeStopTheWorld (restore, IncompleteError and the
// baseline against the model and the run's events); failures in
// detector_test.go (a crash on the in-memory and the TCP transport, a
// false suspicion withdrawn, a drained stop) and conformance's
// TestLockstepFaults (the core's share against model/faults.go) and
// TestRuntimeLockstepFaults (the nodes, the Collector's verdicts, the
// aborts and Draining against model/faults.go on rings and chords);
// TestRuntimeStopTheWorldMidSend (a transfer inside Send when the pause
// begins) and TestRuntimeRestoreQueued (frames queued before a restored
// node starts).
package runtime
