// Package trace streams spec.Events as a JSON-lines trace: a Sink writes
// a header line, then one event a line, in the format spec.WriteTrace
// writes and spec.ReadTrace reads. The runtime (impl/runtime) opens one
// Sink per process and emits every step of its node.
//
// Use: NewSink(w, header), then Emit each event as it happens, Flush
// whenever the output must be readable (or durable) up to now, and Close
// at the end.
//
// # What a Sink promises
//
//   - Format: for the same header and events, the bytes written are
//     spec.WriteTrace's, byte for byte (payloads are written as given, no
//     HTML escaping), so spec.ReadTrace reads back exactly the events
//     emitted.
//   - Completeness and order: the events written are exactly those whose
//     Emit returned nil, each once, in the order of those calls, each
//     whole on its own line. They are a prefix of the Emit calls: after
//     the first error every later Emit, Flush and Close returns that same
//     error, so a trace never has a gap. Count is the number of events
//     written.
//   - Refusals: NewSink refuses a nil writer or a header without topology
//     (ErrInvalidArg). Emit refuses an event spec.ReadTrace would refuse
//     (spec.Event.Validate against the header's topology) or that has no
//     JSON encoding, such as a Payload that is not JSON (ErrInvalidEvent),
//     and every event after Close (ErrClosed). A write error of the
//     underlying writer is returned wrapped (errors.Is finds it).
//   - Flush and Close: output is buffered. After Flush returns nil, the
//     writer holds the header and every event whose Emit returned nil
//     before the Flush, whole lines only. Close flushes and, if the
//     writer is an io.Closer, closes it exactly once, even when the flush
//     failed; later Closes return the first one's result and Flush after
//     Close writes nothing. Until Flush or Close the writer may hold a
//     partial last line.
//   - Concurrency: a Sink is safe for concurrent use. Lines of concurrent
//     Emits never interleave; the events of one goroutine appear in the
//     order it emitted them.
//
// A nil *Sink (Off) is the sink for tracing turned off: its methods do
// nothing, return nil (Count 0, Enabled false) and do not allocate, so
// callers need no branch of their own.
package trace
