// Package transport carries wire.Envelopes on the directed channels of a
// spec.Topology: the reliable FIFO channels the Chandy-Lamport algorithm
// assumes (tla/ChandyLamport.tla models a channel as a sequence, appended
// by Send and consumed from its head by Receive).
//
// Memory is an in-process transport, optionally with random delays; TCP
// runs one TCP connection per directed channel and survives cut
// connections, in plain TCP (trusted networks) or mutual TLS
// (TCPConfig.TLS, tcp_tls.go: certificates of one cluster's CA, each
// naming its node). Both implement Transport.
//
// # Using it
//
// In order:
//
//  1. Create the transport for a topology (NewMemory, NewTCP).
//  2. Start one reader per served process on Inbox(p): it waits on
//     Ready and takes what is waiting with Take, a batch at a time. The
//     inbox is an unbounded queue, so a slow reader never blocks a sender.
//  3. Call Send for the served processes' outgoing channels, from any
//     goroutines.
//  4. Call Close once: it stops everything and returns what was accepted
//     but not handed to a reader (a *ShutdownError), which the caller must
//     account for (the runtime treats it as channel state not delivered).
//
// # Contract
//
// Per-channel FIFO. The envelopes of one channel reach the receiver's
// Inbox in the order in which their Sends took effect. Concurrent Sends on
// one channel are ordered by the transport (each is one atomic step
// between its call and its return), so the history of a channel is that
// of a linearizable FIFO queue (conformance/fifo checks this with
// porcupine). Envelopes of different channels are not ordered with respect
// to each other; with MemoryConfig.MaxDelay their interleaving varies from
// run to run.
//
// Exactly once. Every envelope a Send accepted (nil error) reaches its
// receiver's Inbox exactly once, or Close reports it: never lost silently,
// never duplicated, never altered (Send copies the frame's slices; the
// receiver gets an equal frame), never invented. For TCP this holds across
// any number of cut connections: the sender keeps every frame until the
// receiver acknowledges it and resumes after a reconnect from the count the
// receiver reports holding (see TCP for the protocol).
//
// Ownership. The frames a reader takes are its own: no other envelope
// shares their bytes and the transport never writes them again, so a
// reader may keep or modify them (their slices are capped: an append
// copies). Both transports copy a frame's slices into chunks shared by
// many frames (Memory from the sender's frame, TCP from the connection's
// receive buffer, see frameReader), so a payload kept long keeps its
// chunk alive; copy it to keep it alone.
//
// Value ranges. Any frame that wire.Frame.Validate accepts is carried:
// markers and application frames, empty or nil payloads and clocks, and
// (Memory) payloads of any size. TCP bounds a frame's encoding (after its
// 4-byte length prefix) by TCPConfig.MaxFrameSize, at most
// wire.MaxFrameSize; a frame of exactly that size is carried.
//
// Refusals. Send refuses, without side effects, and names:
//   - a channel not in the topology: ErrUnknownChannel (the error names the
//     channel);
//   - a frame that fails wire.Frame.Validate: the wire error (matching
//     wire.ErrProtocol: wire.ErrInvalidFrame, wire.ErrKind);
//   - (TCP) a frame whose encoding exceeds MaxFrameSize: wire.ErrTooLarge;
//   - (TCP) a channel whose sender this transport does not serve:
//     ErrUnknownProc;
//   - (TCP) a channel stopped by a peer restart: the *PeerRestartedError;
//   - any Send after Close has begun: ErrClosed.
//
// Inbox refuses a process that is not in the topology or (TCP) not served
// here with ErrUnknownProc.
//
// TCP refuses, on the receiving side, a hello that names another receiver,
// an unknown process, a channel not in the topology or another handshake
// version (the peer reads the reason in the rejection, ErrRejected on its
// side), and closes a connection that breaks the frame protocol (an
// oversized, truncated or invalid frame, an out-of-range ack); each is
// reported as a *ConnError through TCP.Errors and TCPConfig.OnError, and
// the other connections go on.
//
// Incarnations (TCP). Each TCP draws a random nonzero incarnation when it
// is created. A channel resumes only between the two incarnations that
// started it: when a handshake shows that either end restarted, the
// channel's history is lost, so the channel fails for good instead of
// resuming wrongly. Each end that sees it reports one *PeerRestartedError
// (matching ErrPeerRestarted and wire.ErrProtocol) naming the restarted end
// and both incarnations, the channel is not dialed again, later Sends on
// it return that error, a restarted receiver is never handed frames meant
// for its previous incarnation, and Close lists the channel's pending
// frames in ShutdownError.Unacked. Crash recovery is the runtime's job
// (restore every node from one snapshot).
//
// Close. Close returns within a bounded time (TCP: DrainTimeout for
// pending acknowledgements, then the time to stop its goroutines) and
// leaves no goroutine running. It closes every Inbox and makes later Sends
// fail with ErrClosed. It returns nil when every accepted envelope was
// taken by an Inbox reader, and otherwise a *ShutdownError listing, each
// list in per-channel send order:
//   - Undelivered: envelopes that reached the receiving side (Memory: all
//     of them, delayed ones included) that no reader took. An envelope
//     leaves the inbox only when a Take returns it, so even with readers
//     still reading while Close runs, what they took is a prefix of each
//     channel and Undelivered (the Memory part) is the rest, never both;
//   - Unacked (TCP): frames the receiver never acknowledged. The receiver
//     may hold some of them (an ack can be lost with its connection), so
//     between two transports these may overlap the receiver's deliveries;
//     within one TCP serving both ends whose drain succeeds it is empty.
//
// Calls to Close after the first return nil.
package transport
