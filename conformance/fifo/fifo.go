// Package fifo checks, with the porcupine linearizability checker, that a
// transport's channels really are the reliable FIFO channels the
// Chandy-Lamport algorithm assumes.
//
// Each directed channel is treated as a queue object: Transport.Send is
// enqueue(v), and a delivery from the receiver's inbox is dequeue() -> v.
// A Recorder wraps both calls with real invocation and response times
// (invocation just before Send, response just after it returns; for a
// delivery, invocation when the receiver starts waiting on its inbox and
// response when an envelope arrives). The history, partitioned by channel,
// must be linearizable with respect to a sequential FIFO queue: there is a
// total order of the operations, consistent with real time, in which every
// dequeue returns the head of the queue. A lost, duplicated, reordered or
// invented envelope makes the history non-linearizable.
//
// Why porcupine here and nowhere else: linearizability is the right
// correctness notion for a channel, an object that concurrent clients
// operate on in real time. It is not the notion for a snapshot. A
// Chandy-Lamport snapshot is a consistent cut, not a linearizable read: the
// recorded global state may never have existed at any single instant of
// real time; it is only guaranteed to be reachable from the initial state
// and to reach the current state (the paper's theorem, checked by
// tla/ChandyLamport.tla and by the model and conformance packages). So
// snapshots are checked against the spec, and porcupine checks only the
// channels underneath.
package fifo

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// Kind is a queue operation.
type Kind string

const (
	// Enqueue is a Send: it puts Value at the tail of the channel.
	Enqueue Kind = "enq"
	// Dequeue is a delivery: it takes the value at the head of the channel.
	Dequeue Kind = "deq"
)

// Input is the input of one operation on channel Chan. Value is the
// enqueued value (Enqueue only); a Dequeue's value is its output.
type Input struct {
	Chan  spec.Channel `json:"chan"`
	Kind  Kind         `json:"kind"`
	Value uint64       `json:"value,omitempty"`
}

// MarkerBit marks marker values: a marker of snapshot s has value
// MarkerBit|s, an application frame its Seq.
const MarkerBit = uint64(1) << 63

// ValueOf is the queue value of a frame. Application frames must carry
// Seq values unique on their channel for the check to identify them.
func ValueOf(f wire.Frame) uint64 {
	if f.Kind == wire.KindMarker {
		return MarkerBit | uint64(f.Snap)
	}
	return f.Seq
}

func fmtValue(v uint64) string {
	if v&MarkerBit != 0 {
		return fmt.Sprintf("M%d", v&^MarkerBit)
	}
	return fmt.Sprintf("%d", v)
}

// Recorder records a concurrent history of sends and deliveries. It is safe
// for concurrent use.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// NewRecorder returns an empty recorder; times are measured from now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

// Add appends one operation with the given times (for histories built by
// hand or by a transport wrapper). out is the dequeued value, ignored for
// an Enqueue.
func (r *Recorder) Add(client int, in Input, out uint64, call, ret int64) {
	op := porcupine.Operation{ClientId: client, Input: in, Call: call, Return: ret}
	if in.Kind == Dequeue {
		op.Output = out
	}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Send calls t.Send(env) and records it as an enqueue by client if it
// succeeds. A failed Send is not an operation on the channel.
func (r *Recorder) Send(t transport.Transport, env wire.Envelope, client int) error {
	call := r.now()
	err := t.Send(env)
	ret := r.now()
	if err == nil {
		r.Add(client, Input{Chan: env.Chan, Kind: Enqueue, Value: ValueOf(env.Frame)}, 0, call, ret)
	}
	return err
}

// Recv waits on in for one envelope, takes it (one only, so that each
// delivery is one operation with its own times) and records the delivery
// as a dequeue by client on the envelope's channel. The dequeue is the
// Take that returned the envelope, so its interval is that Take's: the
// wait for Ready before it is no part of the operation (with the wait in,
// a receiver idle for a while made dequeues overlapping a channel's every
// enqueue of that while, and porcupine's search took 23 s on a history it
// then found linearizable). ok is false when in is closed or stop is
// closed first; nothing is recorded then.
func (r *Recorder) Recv(in *transport.Inbox, stop <-chan struct{}, client int) (env wire.Envelope, ok bool) {
	var call int64
	for {
		call = r.now()
		batch, open := in.Take(nil, 1)
		if len(batch) == 1 {
			env = batch[0]
			break
		}
		if !open {
			return env, false
		}
		select {
		case <-in.Ready():
		case <-stop:
			return env, false
		}
	}
	r.Add(client, Input{Chan: env.Chan, Kind: Dequeue}, ValueOf(env.Frame), call, r.now())
	return env, true
}

// Operations returns a copy of the history so far.
func (r *Recorder) Operations() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// queue is the model state: the channel's contents, head first. States are
// never mutated.
type queue []uint64

// Model is the sequential specification: one FIFO queue per channel, the
// history partitioned by channel.
func Model() porcupine.Model {
	return porcupine.Model{
		Partition: partition,
		Init:      func() interface{} { return queue(nil) },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			q := state.(queue)
			in := input.(Input)
			switch in.Kind {
			case Enqueue:
				n := make(queue, len(q)+1)
				copy(n, q)
				n[len(q)] = in.Value
				return true, n
			case Dequeue:
				v, _ := output.(uint64)
				if len(q) == 0 || q[0] != v {
					return false, q
				}
				return true, q[1:]
			}
			return false, q
		},
		Equal: func(a, b interface{}) bool { return slices.Equal(a.(queue), b.(queue)) },
		Hash: func(state interface{}) uint64 {
			h := fnv.New64a()
			var b [8]byte
			for _, v := range state.(queue) {
				for i := range b {
					b[i] = byte(v >> (8 * i))
				}
				h.Write(b[:])
			}
			return h.Sum64()
		},
		DescribeOperation: func(input, output interface{}) string {
			in := input.(Input)
			if in.Kind == Enqueue {
				return fmt.Sprintf("%s enq(%s)", in.Chan, fmtValue(in.Value))
			}
			v, _ := output.(uint64)
			return fmt.Sprintf("%s deq() -> %s", in.Chan, fmtValue(v))
		},
		DescribeState: func(state interface{}) string {
			q := state.(queue)
			parts := make([]string, len(q))
			for i, v := range q {
				parts[i] = fmtValue(v)
			}
			return "[" + strings.Join(parts, " ") + "]"
		},
	}
}

func partition(history []porcupine.Operation) [][]porcupine.Operation {
	by := map[spec.Channel][]porcupine.Operation{}
	for _, op := range history {
		c := op.Input.(Input).Chan
		by[c] = append(by[c], op)
	}
	chans := make([]spec.Channel, 0, len(by))
	for c := range by {
		chans = append(chans, c)
	}
	sort.Slice(chans, func(i, j int) bool { return spec.ChannelLess(chans[i], chans[j]) })
	out := make([][]porcupine.Operation, len(chans))
	for i, c := range chans {
		out[i] = by[c]
	}
	return out
}

// Result is the outcome of Check.
type Result struct {
	Verdict porcupine.CheckResult // Ok, Illegal or Unknown (timed out)
	Ops     int                   // operations checked
	// Visualization and History are the files written for a history that
	// is not Ok: porcupine's HTML visualisation and the history as JSON.
	Visualization, History string
}

// Check checks ops for linearizability against Model within timeout. If
// the verdict is not Ok and outDir is not empty, it writes
// outDir/name.html (porcupine's visualisation, open it in a browser) and
// outDir/name.history.json (the history) and names them in the Result.
func Check(ops []porcupine.Operation, timeout time.Duration, outDir, name string) (Result, error) {
	m := Model()
	verdict, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	res := Result{Verdict: verdict, Ops: len(ops)}
	if verdict == porcupine.Ok || outDir == "" {
		return res, nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return res, err
	}
	res.Visualization = filepath.Join(outDir, name+".html")
	if err := porcupine.VisualizePath(m, info, res.Visualization); err != nil {
		return res, fmt.Errorf("fifo: writing visualisation: %w", err)
	}
	res.History = filepath.Join(outDir, name+".history.json")
	if err := writeHistory(res.History, ops); err != nil {
		return res, err
	}
	return res, nil
}

// historyOp is the JSON form of one operation.
type historyOp struct {
	Client int          `json:"client"`
	Chan   spec.Channel `json:"chan"`
	Kind   Kind         `json:"kind"`
	Value  string       `json:"value"`
	Call   int64        `json:"call_ns"`
	Return int64        `json:"return_ns"`
}

func writeHistory(path string, ops []porcupine.Operation) error {
	hs := make([]historyOp, len(ops))
	for i, op := range ops {
		in := op.Input.(Input)
		v := in.Value
		if in.Kind == Dequeue {
			v, _ = op.Output.(uint64)
		}
		hs[i] = historyOp{Client: op.ClientId, Chan: in.Chan, Kind: in.Kind, Value: fmtValue(v), Call: op.Call, Return: op.Return}
	}
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].Call < hs[j].Call })
	b, err := json.MarshalIndent(hs, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
