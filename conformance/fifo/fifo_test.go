package fifo

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// checkTimeout bounds each porcupine check. How long porcupine's search
// takes depends on how much the operations' intervals overlap, and that
// grows with the machine's load (a receiver descheduled between its
// Take's call and return overlaps every enqueue of that while), not with
// anything the transport did: alone, a check of these histories takes
// milliseconds. A check that does not end in time is Unknown, no verdict
// on the transport (requireLinearizable).
const checkTimeout = 10 * time.Second

// outDir is where the histories porcupine found not linearizable, or
// could not decide, and their visualisations go: $MARKERWAVE_FIFO_OUT if
// set, else a fresh directory in the temporary directory, created only
// when something is written there, and kept (and named in the log) so
// the files survive the test.
func outDir() string {
	if d := os.Getenv("MARKERWAVE_FIFO_OUT"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("markerwave-fifo-%d-%d", os.Getpid(), time.Now().UnixNano()))
}

// workload: on every channel, senders goroutines each send perSender
// application frames concurrently (Send is safe for concurrent use on one
// channel: both transports append under a per-channel lock, so a channel's
// order is the order in which concurrent Sends took effect); one goroutine
// per process reads its inbox. fault, if set, runs until stop closes and
// reports how many faults it injected.
type workload struct {
	senders, perSender int
	// pauseEvery > 0 makes each sender sleep about a millisecond after
	// every pauseEvery frames, so that the run lasts long enough for
	// faults to land while frames are in flight.
	pauseEvery int
	fault      func(stop <-chan struct{}) int
}

// value of the k-th frame (from 1) of sender g: unique on its channel.
func value(g, k int) uint64 { return uint64(g*100000 + k) }

// run drives tr with w and returns the history, the number of faults and
// the number of frames sent.
func run(t *testing.T, tr transport.Transport, top *spec.Topology, w workload, seed uint64) ([]porcupine.Operation, int) {
	t.Helper()
	rec := NewRecorder()
	total := len(top.Chans) * w.senders * w.perSender
	var received atomic.Int64
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	client := len(top.Chans) * w.senders // receivers' client ids follow the senders'
	for _, p := range top.Procs {
		in, err := tr.Inbox(p)
		require.NoError(t, err)
		rwg.Add(1)
		go func(client int) {
			defer rwg.Done()
			for {
				env, ok := rec.Recv(in, stop, client)
				if !ok {
					return
				}
				if env.Chan.To != p {
					t.Errorf("inbox of %s got %s", string(p), env)
				}
				received.Add(1)
			}
		}(client)
		client++
	}
	faultStop := make(chan struct{})
	faults := make(chan int, 1)
	if w.fault != nil {
		go func() { faults <- w.fault(faultStop) }()
	} else {
		faults <- 0
	}
	var swg sync.WaitGroup
	gate := make(chan struct{}) // all senders start together
	for ci, ch := range top.Chans {
		for g := 0; g < w.senders; g++ {
			swg.Add(1)
			go func(client int) {
				defer swg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(client)))
				<-gate
				for k := 1; k <= w.perSender; k++ {
					env := wire.Envelope{Chan: ch, Frame: wire.Frame{Kind: wire.KindApp, Seq: value(g, k), Payload: []byte{byte(k)}}}
					if err := rec.Send(tr, env, client); err != nil {
						t.Errorf("send %s: %v", env, err)
						return
					}
					if w.pauseEvery > 0 && k%w.pauseEvery == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					switch rng.IntN(8) {
					case 0:
						time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
					case 1, 2:
						runtime.Gosched()
					}
				}
			}(ci*w.senders + g)
		}
	}
	close(gate)
	swg.Wait()
	// The wait for the last deliveries takes milliseconds alone; the bound
	// only keeps a lost frame from hanging the test (the count below then
	// names it), and is generous so that a loaded machine never reaches it.
	deadline := time.Now().Add(20 * time.Second)
	for received.Load() < int64(total) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	close(faultStop)
	nf := <-faults
	close(stop)
	rwg.Wait()
	if err := closeBounded(t, tr); err != nil {
		t.Errorf("close: %v", err)
	}
	require.EqualValues(t, total, received.Load(), "every accepted frame is delivered (reliability)")
	return rec.Operations(), nf
}

func closeBounded(t *testing.T, tr transport.Transport) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- tr.Close() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s")
		return nil
	}
}

// requireLinearizable checks ops for linearizability with porcupine,
// once, within checkTimeout, writing the history and its visualisation
// unless Ok, and then the channels' order (requireOrder, which needs no
// search and always decides). Illegal fails the test, naming both files.
// Unknown (the search did not end in time, see checkTimeout) is logged
// with both files and is no failure of the transport: requireOrder still
// checks what a FIFO channel must do.
func requireLinearizable(t *testing.T, ops []porcupine.Operation) {
	t.Helper()
	start := time.Now()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	res, err := Check(ops, checkTimeout, outDir(), name)
	require.NoError(t, err)
	took := time.Since(start).Round(time.Millisecond)
	switch res.Verdict {
	case porcupine.Ok:
		t.Logf("%d operations linearizable (checked in %v)", len(ops), took)
	case porcupine.Illegal:
		t.Fatalf("history of %d operations is %s w.r.t. per-channel FIFO queues\n  visualisation: %s\n  history:       %s",
			len(ops), res.Verdict, res.Visualization, res.History)
	default:
		t.Logf("NOT DECIDED: porcupine did not decide within %v whether the history of %d operations is linearizable (Unknown; %s): no verdict on the transport; requireOrder checks its order\n  visualisation: %s\n  history:       %s",
			took, len(ops), overlaps(ops), res.Visualization, res.History)
	}
	requireOrder(t, ops)
}

// requireOrder fails unless, on every channel, the history is what a
// reliable FIFO channel allows, checked without a search: every dequeued
// value was enqueued on that channel and is dequeued once, no dequeue
// returns before its enqueue was invoked, and of two enqueues one of
// which returned before the other was invoked, the first is dequeued
// first. Each channel has one receiver, so its dequeues are in the order
// of their invocations. (Linearizability implies all of it; porcupine
// decides the rest, the overlapping operations.)
func requireOrder(t *testing.T, ops []porcupine.Operation) {
	t.Helper()
	for _, chOps := range partition(ops) {
		if err := channelOrder(chOps); err != nil {
			t.Fatalf("channel %s is no FIFO channel: %v", chOps[0].Input.(Input).Chan, err)
		}
	}
}

// channelOrder is requireOrder on one channel's operations.
func channelOrder(ops []porcupine.Operation) error {
	enq := map[uint64]porcupine.Operation{}
	var deqs []porcupine.Operation
	for _, op := range ops {
		if in := op.Input.(Input); in.Kind == Enqueue {
			enq[in.Value] = op
		} else {
			deqs = append(deqs, op)
		}
	}
	slices.SortFunc(deqs, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	at := map[uint64]int{} // value -> position of its dequeue
	for i, d := range deqs {
		v := d.Output.(uint64)
		e, ok := enq[v]
		switch _, twice := at[v]; {
		case !ok:
			return fmt.Errorf("dequeue %d returns %s, never enqueued", i+1, fmtValue(v))
		case twice:
			return fmt.Errorf("%s dequeued twice (dequeues %d and %d)", fmtValue(v), at[v]+1, i+1)
		case d.Return < e.Call:
			return fmt.Errorf("dequeue %d returns %s before its enqueue was invoked", i+1, fmtValue(v))
		}
		at[v] = i
	}
	return enqueueOrder(enq, at)
}

// enqueueOrder: every enqueue of enq is dequeued (at holds the positions
// of the dequeues), and of two enqueues in real-time order the first is
// dequeued first. It reports the first fault in the enqueues' order.
func enqueueOrder(enq map[uint64]porcupine.Operation, at map[uint64]int) error {
	es := slices.SortedFunc(maps.Values(enq), func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	for _, e := range es {
		v := e.Input.(Input).Value
		if _, ok := at[v]; !ok {
			return fmt.Errorf("%s enqueued, never dequeued", fmtValue(v))
		}
	}
	for i, e := range es {
		v := e.Input.(Input).Value
		for _, f := range es[i+1:] {
			if w := f.Input.(Input).Value; e.Return < f.Call && at[w] < at[v] {
				return fmt.Errorf("%s enqueued before %s was, dequeued after it (dequeues %d and %d)", fmtValue(v), fmtValue(w), at[v]+1, at[w]+1)
			}
		}
	}
	return nil
}

// overlaps measures how much the checker had to choose: pairs of enqueues
// on one channel whose intervals overlap (either order is a legal
// linearization), and dequeues invoked before their own enqueue returned.
func overlaps(ops []porcupine.Operation) string {
	type key struct {
		c spec.Channel
		v uint64
	}
	enqs := map[spec.Channel][]porcupine.Operation{}
	enqOf := map[key]porcupine.Operation{}
	for _, op := range ops {
		if in := op.Input.(Input); in.Kind == Enqueue {
			enqs[in.Chan] = append(enqs[in.Chan], op)
			enqOf[key{in.Chan, in.Value}] = op
		}
	}
	pairs, early := 0, 0
	for _, es := range enqs {
		for i := range es {
			for j := i + 1; j < len(es); j++ {
				if es[i].Call <= es[j].Return && es[j].Call <= es[i].Return {
					pairs++
				}
			}
		}
	}
	for _, op := range ops {
		if in := op.Input.(Input); in.Kind == Dequeue {
			if e, ok := enqOf[key{in.Chan, op.Output.(uint64)}]; ok && op.Call <= e.Return {
				early++
			}
		}
	}
	return fmt.Sprintf("%d overlapping enqueue pairs, %d dequeues invoked before their enqueue returned", pairs, early)
}

func TestMemoryChannelsAreLinearizableFIFO(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"no-delay", 0}, {"random-delays", 300 * time.Microsecond}} {
		t.Run(tc.name, func(t *testing.T) {
			top := spec.Complete(3)
			tr := transport.NewMemory(top, transport.MemoryConfig{MaxDelay: tc.delay, Seed: 7})
			ops, _ := run(t, tr, top, workload{senders: 3, perSender: 50}, 1)
			t.Log(overlaps(ops))
			requireLinearizable(t, ops)
		})
	}
}

func loopback(top *spec.Topology) map[spec.ProcID]string {
	m := map[spec.ProcID]string{}
	for _, p := range top.Procs {
		m[p] = "127.0.0.1:0"
	}
	return m
}

func newTCP(t *testing.T, top *spec.Topology) *transport.TCP {
	t.Helper()
	tr, err := transport.NewTCP(top, transport.TCPConfig{Addrs: loopback(top), DrainTimeout: 2 * time.Second})
	require.NoError(t, err)
	return tr
}

func TestTCPChannelsAreLinearizableFIFO(t *testing.T) {
	top := spec.Complete(3)
	tr := newTCP(t, top)
	ops, _ := run(t, tr, top, workload{senders: 3, perSender: 50}, 2)
	t.Log(overlaps(ops))
	requireLinearizable(t, ops)
}

// Connections are cut many times mid-run; the transport reconnects and
// resends, and the history must still be that of lossless FIFO queues.
func TestTCPWithCutConnectionsIsLinearizableFIFO(t *testing.T) {
	top := spec.Complete(3)
	tr := newTCP(t, top)
	cutter := func(stop <-chan struct{}) int {
		rng := rand.New(rand.NewPCG(3, 4))
		cuts := 0
		for {
			select {
			case <-stop:
				return cuts
			case <-time.After(time.Duration(1+rng.IntN(3)) * time.Millisecond):
			}
			if tr.CutConnection(top.Chans[rng.IntN(len(top.Chans))]) {
				cuts++
			}
		}
	}
	// Senders pause now and then so the run lasts long enough for cuts to
	// land while frames are in flight.
	ops, cuts := run(t, tr, top, workload{senders: 2, perSender: 80, pauseEvery: 5, fault: cutter}, 3)
	st := tr.Stats()
	t.Logf("%d cuts, stats %+v; %s", cuts, st, overlaps(ops))
	assert.GreaterOrEqual(t, cuts, 3, "connections were cut several times mid-run")
	assert.Greater(t, st.Dials, len(top.Chans), "channels reconnected")
	requireLinearizable(t, ops)
}

// broken is a deliberately faulty transport for the negative tests: on one
// channel it swaps, drops or duplicates the k-th frame.
type broken struct {
	transport.Transport
	victim spec.Channel
	mode   string // "swap", "drop" or "dup"
	k      int

	mu   sync.Mutex
	n    int
	held *wire.Envelope
}

func (b *broken) Send(env wire.Envelope) error {
	if env.Chan != b.victim {
		return b.Transport.Send(env)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	switch {
	case b.mode == "drop" && b.n == b.k:
		return nil // accepted, never delivered
	case b.mode == "dup" && b.n == b.k:
		if err := b.Transport.Send(env); err != nil {
			return err
		}
		return b.Transport.Send(env)
	case b.mode == "swap" && b.n == b.k:
		b.held = &env
		return nil
	case b.mode == "swap" && b.n == b.k+1:
		if err := b.Transport.Send(env); err != nil {
			return err
		}
		held := *b.held
		b.held = nil
		return b.Transport.Send(held)
	}
	return b.Transport.Send(env)
}

// The check has teeth: a channel that swaps two frames, loses one or
// delivers one twice is reported non-linearizable, and the visualisation
// is written; the order check (requireOrder) names the fault too.
func TestBrokenChannelIsNotLinearizable(t *testing.T) {
	for _, mode := range []string{"swap", "drop", "dup"} {
		t.Run(mode, func(t *testing.T) {
			top := spec.Ring(2)
			victim := spec.Channel{From: "P1", To: "P2"}
			b := &broken{Transport: transport.NewMemory(top, transport.MemoryConfig{}), victim: victim, mode: mode, k: 7}
			rec := NewRecorder()
			in, err := b.Inbox("P2")
			require.NoError(t, err)
			const n = 20
			wantN := map[string]int{"swap": n, "drop": n - 1, "dup": n + 1}[mode]
			stop := make(chan struct{})
			done := make(chan int)
			go func() {
				got := 0
				for got < wantN {
					if _, ok := rec.Recv(in, stop, 1); !ok {
						break
					}
					got++
				}
				done <- got
			}()
			for k := 1; k <= n; k++ {
				require.NoError(t, rec.Send(b, wire.Envelope{Chan: victim, Frame: wire.Frame{Kind: wire.KindApp, Seq: uint64(k)}}, 0))
			}
			select {
			case got := <-done:
				require.Equal(t, wantN, got)
			case <-time.After(5 * time.Second):
				close(stop)
				t.Fatalf("receiver got fewer than %d frames", wantN)
			}
			var se *transport.ShutdownError
			if err := b.Close(); err != nil && !errors.As(err, &se) {
				t.Fatal(err)
			}
			dir := os.Getenv("MARKERWAVE_FIFO_OUT")
			if dir == "" {
				dir = t.TempDir()
			}
			res, err := Check(rec.Operations(), checkTimeout, dir, "broken-"+mode)
			require.NoError(t, err)
			assert.Equal(t, porcupine.Illegal, res.Verdict)
			assert.ErrorContains(t, channelOrder(rec.Operations()), map[string]string{"swap": "dequeued after it", "drop": "enqueued, never dequeued", "dup": "dequeued twice"}[mode], "the order check, which needs no search, names the fault")
			html, err := os.ReadFile(res.Visualization)
			require.NoError(t, err, "the visualisation is written")
			assert.Contains(t, string(html), "<html")
			_, err = os.Stat(res.History)
			require.NoError(t, err)
			t.Logf("non-linearizable as expected; visualisation at %s", res.Visualization)
		})
	}
}

// The model itself, on hand-made histories with overlapping operations.
func TestModelHandMadeHistories(t *testing.T) {
	c := spec.Channel{From: "P1", To: "P2"}
	enq := func(v uint64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: 0, Input: Input{Chan: c, Kind: Enqueue, Value: v}, Call: call, Return: ret}
	}
	deq := func(v uint64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: 1, Input: Input{Chan: c, Kind: Dequeue}, Output: v, Call: call, Return: ret}
	}
	check := func(ops ...porcupine.Operation) porcupine.CheckResult {
		return porcupine.CheckOperationsTimeout(Model(), ops, time.Second)
	}
	// Concurrent enqueues may take effect in either order.
	assert.Equal(t, porcupine.Ok, check(enq(1, 0, 10), enq(2, 5, 15), deq(2, 20, 21), deq(1, 22, 23)))
	assert.Equal(t, porcupine.Ok, check(enq(1, 0, 10), enq(2, 5, 15), deq(1, 20, 21), deq(2, 22, 23)))
	// Sequential enqueues may not.
	assert.Equal(t, porcupine.Illegal, check(enq(1, 0, 10), enq(2, 11, 15), deq(2, 20, 21), deq(1, 22, 23)))
	// A dequeue cannot return a value before it was enqueued...
	assert.Equal(t, porcupine.Illegal, check(deq(1, 0, 1), enq(1, 5, 6)))
	// ...but may when the operations overlap.
	assert.Equal(t, porcupine.Ok, check(deq(1, 0, 10), enq(1, 5, 6)))
	// Nothing is dequeued twice, and channels are independent.
	assert.Equal(t, porcupine.Illegal, check(enq(1, 0, 1), deq(1, 2, 3), deq(1, 4, 5)))
	d := spec.Channel{From: "P2", To: "P1"}
	other := porcupine.Operation{Input: Input{Chan: d, Kind: Enqueue, Value: 1}, Call: 0, Return: 1}
	assert.Equal(t, porcupine.Illegal, check(other, deq(1, 2, 3)))
}
