package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// This file is a closed-loop application load for the throughput
// benchmarks: every node has one sender that keeps at most window of its
// own transfers undelivered, the way a service with a bounded number of
// outstanding requests would, so no backlog builds up and a snapshot
// records at most a few window's worth of messages. Deliveries are counted
// by wrapping each node's bank in a loadApp (core calls App.Apply when a
// transfer is delivered).

// counter is an atomic counter alone on its cache line: the senders and
// the node goroutines update different counters concurrently.
type counter struct {
	atomic.Uint64
	_ [56]byte
}

// loadConfig configures a closedLoop.
type loadConfig struct {
	Balance   int64 // each bank's initial balance
	MaxAmount int64 // transfers move 1..MaxAmount
	Window    int   // undelivered transfers a sender may have outstanding
	Seed      uint64
	MaxDelay  time.Duration // the memory transport's per-message delay bound
}

// closedLoop runs the load on a cluster of loadApps over a plain
// in-memory transport.
type closedLoop struct {
	cfg   loadConfig
	cl    *mwrt.Cluster
	procs []spec.ProcID
	idx   map[spec.ProcID]int

	sent      []counter       // by node: transfers its bank debited (App.Send)
	delivered []counter       // by sender: its transfers delivered (App.Apply)
	wake      []chan struct{} // by sender: a delivery happened
	refusals  atomic.Uint64   // transfers the bank refused (insufficient funds)
	probe     atomic.Pointer[stwProbe]
	measuring atomic.Int32 // index of the mode being measured, or -1
	// Transfer latency, from the sender's Transfer call to the receiver's
	// Apply: sendTimes[i][j] queues the start times of i's transfers to j
	// not yet applied (channels are FIFO); lat[j][m] is the histogram
	// receiver j keeps for mode m.
	base      time.Time
	sendTimes [][]tsQueue
	lat       [][numModes]latHist

	stop   chan struct{}
	wg     sync.WaitGroup
	errMu  sync.Mutex
	errs   []error
	nErrs  int
	stwIDs atomic.Uint64
}

// loadApp is a bank that counts what the load needs.
type loadApp struct {
	*app.Bank
	l    *closedLoop
	self int
}

func (a *loadApp) Send(to spec.ProcID, p []byte) error {
	if err := a.Bank.Send(to, p); err != nil {
		return err
	}
	a.l.sent[a.self].Add(1)
	return nil
}

func (a *loadApp) Apply(from spec.ProcID, p []byte) error {
	if err := a.Bank.Apply(from, p); err != nil {
		return err
	}
	i := a.l.idx[from]
	t0 := a.l.sendTimes[i][a.self].pop()
	if m := a.l.measuring.Load(); m >= 0 {
		a.l.lat[a.self][m].add(time.Since(a.l.base) - t0)
	}
	a.l.delivered[i].Add(1)
	select {
	case a.l.wake[i] <- struct{}{}:
	default: // a wake-up is already pending
	}
	return nil
}

func (a *loadApp) Capture() ([]byte, error) {
	b, err := a.Bank.Capture()
	if pr := a.l.probe.Load(); pr != nil {
		pr.note(a.l.totalSent(), a.l.totalDelivered())
	}
	return b, err
}

// stwProbe records, at every state capture of one stop-the-world
// snapshot, how many transfers the banks had debited and credited so far,
// and when the first and last captures ran.
type stwProbe struct {
	mu              sync.Mutex
	sent, delivered []uint64
	first, last     time.Time
	expect          int
}

func (p *stwProbe) note(sent, delivered uint64) {
	now := time.Now()
	p.mu.Lock()
	if len(p.sent) == 0 {
		p.first = now
	}
	p.last = now
	p.sent = append(p.sent, sent)
	p.delivered = append(p.delivered, delivered)
	p.mu.Unlock()
}

// check verifies that the sends were held while the states were recorded:
// every capture saw the same number of debits, and by the last capture
// every debited transfer had been credited (the channels were empty).
func (p *stwProbe) check() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sent) != p.expect {
		return fmt.Errorf("%d captures, want %d", len(p.sent), p.expect)
	}
	for i, s := range p.sent {
		if s != p.sent[0] {
			return fmt.Errorf("transfers completed at the senders during the pause: %d debits at capture 1, %d at capture %d", p.sent[0], s, i+1)
		}
	}
	if last := p.delivered[len(p.delivered)-1]; last != p.sent[0] {
		return fmt.Errorf("channels not drained: %d debited, %d credited at the last capture", p.sent[0], last)
	}
	return nil
}

func newClosedLoop(tb testing.TB, topo *spec.Topology, cfg loadConfig) *closedLoop {
	n := len(topo.Procs)
	l := &closedLoop{
		cfg: cfg, procs: topo.Procs, idx: map[spec.ProcID]int{},
		sent: make([]counter, n), delivered: make([]counter, n), wake: make([]chan struct{}, n),
		stop: make(chan struct{}), lat: make([][numModes]latHist, n),
		base: time.Now(), sendTimes: make([][]tsQueue, n),
	}
	for i := range l.sendTimes {
		l.sendTimes[i] = make([]tsQueue, n)
	}
	l.measuring.Store(-1)
	for i, p := range topo.Procs {
		l.idx[p] = i
		l.wake[i] = make(chan struct{}, 1)
	}
	cl, err := mwrt.NewCluster(mwrt.ClusterConfig{
		Topology: topo,
		NewApp: func(p spec.ProcID) (core.App, error) {
			b, err := app.NewBank(cfg.Balance)
			if err != nil {
				return nil, err
			}
			return &loadApp{Bank: b, l: l, self: l.idx[p]}, nil
		},
		Transport: transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: cfg.MaxDelay, Seed: cfg.Seed}),
	})
	if err != nil {
		tb.Fatal(err)
	}
	l.cl = cl
	return l
}

func (l *closedLoop) fail(err error) {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	l.nErrs++
	if len(l.errs) < 10 {
		l.errs = append(l.errs, err)
	}
}

func (l *closedLoop) totalSent() uint64 {
	var s uint64
	for i := range l.sent {
		s += l.sent[i].Load()
	}
	return s
}

func (l *closedLoop) totalDelivered() uint64 {
	var s uint64
	for i := range l.delivered {
		s += l.delivered[i].Load()
	}
	return s
}

// start starts one sender per node.
func (l *closedLoop) start() {
	topo := l.cl.Topology()
	for i, p := range l.procs {
		node, out := l.cl.Node(p), topo.Out(p)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.sender(i, node, out)
		}()
	}
}

func (l *closedLoop) sender(i int, node *mwrt.Node, out []spec.Channel) {
	rng := rand.New(rand.NewPCG(l.cfg.Seed, uint64(i)))
	window := uint64(l.cfg.Window)
	var sent uint64 // transfers sent (accepted by the bank)
	for {
		for sent-l.delivered[i].Load() >= window {
			select {
			case <-l.wake[i]:
			case <-l.stop:
				return
			}
		}
		select {
		case <-l.stop:
			return
		default:
		}
		to := out[rng.IntN(len(out))].To
		q := &l.sendTimes[i][l.idx[to]]
		q.push(time.Since(l.base))
		err := node.SendApp(to, app.Transfer(1+rng.Int64N(l.cfg.MaxAmount)))
		switch {
		case err == nil:
			sent++
		case errors.Is(err, core.ErrApp):
			q.unpush() // no message was sent
			l.refusals.Add(1)
		default:
			q.unpush()
			l.fail(fmt.Errorf("sender %s: %w", string(l.procs[i]), err))
			return
		}
	}
}

// close stops the senders and the cluster and fails tb on any error.
func (l *closedLoop) close(tb testing.TB) {
	close(l.stop)
	l.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.cl.Stop(ctx); err != nil {
		tb.Error(err)
	}
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if l.nErrs > 0 {
		tb.Errorf("%d load errors, first: %v", l.nErrs, l.errs[0])
	}
	if s, d := l.totalSent(), l.totalDelivered(); s != d {
		tb.Errorf("%d transfers sent, %d delivered", s, d)
	}
}

// snapMode is how a phase takes snapshots meanwhile.
type snapMode string

const (
	noSnap snapMode = "none"
	clSnap snapMode = "cl"  // a Chandy-Lamport snapshot every period, collected
	stw    snapMode = "stw" // a stop-the-world snapshot every period
)

// loadModes are the modes by index (latency histograms, results).
var loadModes = [numModes]snapMode{noSnap, clSnap, stw}

const numModes = 3

func modeIndex(m snapMode) int32 {
	for i, x := range loadModes {
		if x == m {
			return int32(i)
		}
	}
	panic("unknown mode " + string(m))
}

// phaseResult is what one measured window of one mode saw.
type phaseResult struct {
	mode      snapMode
	delivered uint64
	elapsed   time.Duration
	snaps     uint64
	recorded  uint64        // CL: messages recorded as channel state
	pause     time.Duration // STW: total time inside StopTheWorld
	maxPause  time.Duration
	// STW: the pause split at the first and last state captures: holding
	// the nodes' sends and draining, capturing, resuming.
	drain, capture, resume time.Duration
	// cpu is the process CPU time (user+system) over the window, if known.
	cpu   time.Duration
	cpuOK bool
}

// add accumulates another window of the same mode.
func (r *phaseResult) add(o phaseResult) {
	first := r.elapsed == 0
	r.mode = o.mode
	r.delivered += o.delivered
	r.elapsed += o.elapsed
	r.snaps += o.snaps
	r.recorded += o.recorded
	r.pause += o.pause
	r.maxPause = max(r.maxPause, o.maxPause)
	r.drain += o.drain
	r.capture += o.capture
	r.resume += o.resume
	r.cpuOK = (first || r.cpuOK) && o.cpuOK
	r.cpu += o.cpu
}

func (r phaseResult) throughput() float64 { return float64(r.delivered) / r.elapsed.Seconds() }
func (r phaseResult) snapRate() float64   { return float64(r.snaps) / r.elapsed.Seconds() }

// snapCounters are a snapshot driver's running totals.
type snapCounters struct {
	snaps, recorded, pauseNs, maxPauseNs atomic.Uint64
	drainNs, captureNs, resumeNs         atomic.Uint64
}

// drive takes a snapshot of kind mode every period until stop is closed,
// waiting for each to complete (a CL snapshot until collected, a STW one
// until StopTheWorld returns, i.e. until sends are resumed).
func (l *closedLoop) drive(mode snapMode, period time.Duration, stop <-chan struct{}, c *snapCounters) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		switch mode {
		case clSnap:
			s, err := l.cl.Snapshot(l.procs[k%len(l.procs)])
			var g snapshot.Global
			if err == nil {
				g, err = l.cl.Collect(ctx, s)
			}
			if err != nil {
				cancel()
				l.fail(fmt.Errorf("CL snapshot: %w", err))
				return
			}
			var rec uint64
			for _, ch := range g.Chans {
				rec += uint64(len(ch.Msgs))
			}
			c.recorded.Add(rec)
		case stw:
			pr := &stwProbe{expect: len(l.procs)}
			l.probe.Store(pr)
			t0 := time.Now()
			_, err := l.cl.StopTheWorld(ctx, spec.SnapID(1<<40+l.stwIDs.Add(1)))
			end := time.Now()
			d := end.Sub(t0)
			l.probe.Store(nil)
			if err == nil {
				err = pr.check()
			}
			if err != nil {
				cancel()
				l.fail(fmt.Errorf("stop-the-world snapshot: %w", err))
				return
			}
			c.pauseNs.Add(uint64(d))
			c.drainNs.Add(uint64(pr.first.Sub(t0)))
			c.captureNs.Add(uint64(pr.last.Sub(pr.first)))
			c.resumeNs.Add(uint64(end.Sub(pr.last)))
			if uint64(d) > c.maxPauseNs.Load() {
				c.maxPauseNs.Store(uint64(d))
			}
		}
		cancel()
		c.snaps.Add(1)
	}
}

// phase runs mode for settle, then measures the delivered transfers over
// window, and stops the snapshot driver (waiting for the snapshot under
// way). The load keeps running across phases.
func (l *closedLoop) phase(mode snapMode, period, settle, window time.Duration) phaseResult {
	var c snapCounters
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if mode != noSnap {
			l.drive(mode, period, stop, &c)
		}
	}()
	time.Sleep(settle)
	read := func() [7]uint64 {
		return [7]uint64{l.totalDelivered(), c.snaps.Load(), c.recorded.Load(), c.pauseNs.Load(),
			c.drainNs.Load(), c.captureNs.Load(), c.resumeNs.Load()}
	}
	c.maxPauseNs.Store(0)
	l.measuring.Store(modeIndex(mode))
	cpu0, ok0 := processCPU()
	v0, t0 := read(), time.Now()
	time.Sleep(window)
	v1, el := read(), time.Since(t0)
	cpu1, ok1 := processCPU()
	l.measuring.Store(-1)
	close(stop)
	<-done
	var d [7]uint64
	for i := range d {
		d[i] = v1[i] - v0[i]
	}
	return phaseResult{mode: mode, delivered: d[0], elapsed: el, snaps: d[1], recorded: d[2],
		pause: time.Duration(d[3]), maxPause: time.Duration(c.maxPauseNs.Load()),
		drain: time.Duration(d[4]), capture: time.Duration(d[5]), resume: time.Duration(d[6]),
		cpu: cpu1 - cpu0, cpuOK: ok0 && ok1}
}

// processCPU is the CPU time (user+system) this process has used, read
// from /proc/self/stat (in clock ticks, taken as 1/100s), where there is
// one. The whole process counts: the test framework is idle meanwhile.
func processCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:])) // from field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * (time.Second / 100), true
}

// perCPU is the transfers delivered per CPU-second of the process, or 0.
func (r phaseResult) perCPU() float64 {
	if !r.cpuOK || r.cpu <= 0 {
		return 0
	}
	return float64(r.delivered) / r.cpu.Seconds()
}

// tsQueue is a FIFO of send times of one channel: its sender pushes, its
// receiver pops.
type tsQueue struct {
	mu   sync.Mutex
	q    []time.Duration
	head int
	_    [16]byte
}

func (q *tsQueue) push(t time.Duration) {
	q.mu.Lock()
	if q.head > 64 && q.head*2 > len(q.q) {
		q.q = q.q[:copy(q.q, q.q[q.head:])]
		q.head = 0
	}
	q.q = append(q.q, t)
	q.mu.Unlock()
}

// unpush drops the newest time (its transfer was not sent).
func (q *tsQueue) unpush() {
	q.mu.Lock()
	q.q = q.q[:len(q.q)-1]
	q.mu.Unlock()
}

func (q *tsQueue) pop() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.q) {
		panic("load: a transfer was applied that was not sent")
	}
	t := q.q[q.head]
	q.head++
	return t
}

// latHist is a histogram of durations with 8 linear buckets per power of
// two (12.5% resolution). It is updated by one sender and read by others.
type latHist [latBuckets]atomic.Uint64

const latBuckets = 8 + 60*8

func latBucket(d time.Duration) int {
	ns := uint64(max(d, 0))
	if ns < 8 {
		return int(ns)
	}
	o := bits.Len64(ns) // >= 4
	return min(8+(o-4)*8+int(ns>>(o-4)&7), latBuckets-1)
}

// latUpper is the upper bound of bucket b.
func latUpper(b int) time.Duration {
	if b < 8 {
		return time.Duration(b + 1)
	}
	o, sub := (b-8)/8+4, uint64((b-8)%8)
	return time.Duration((9 + sub) << (o - 4))
}

func (h *latHist) add(d time.Duration) { h[latBucket(d)].Add(1) }

// latQuantiles merges hs and returns the upper bounds of the buckets
// holding the quantiles qs.
func latQuantiles(hs []*latHist, qs ...float64) []time.Duration {
	var sum [latBuckets]uint64
	var n uint64
	for _, h := range hs {
		for b := range h {
			v := h[b].Load()
			sum[b] += v
			n += v
		}
	}
	out := make([]time.Duration, len(qs))
	for i, q := range qs {
		want := uint64(math.Ceil(q * float64(n)))
		var acc uint64
		for b, v := range sum {
			acc += v
			if acc >= want && acc > 0 {
				out[i] = latUpper(b)
				break
			}
		}
	}
	return out
}

// sendLatency returns the quantiles qs of the transfer latency (Transfer
// call to Apply at the receiver), over all channels, in the measured
// windows of mode.
func (l *closedLoop) sendLatency(mode snapMode, qs ...float64) []time.Duration {
	m := modeIndex(mode)
	hs := make([]*latHist, len(l.lat))
	for i := range l.lat {
		hs[i] = &l.lat[i][m]
	}
	return latQuantiles(hs, qs...)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	switch n := len(s); {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func TestLatHist(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 7, 8, 15, 16, 17, 100, 1000, 12345, time.Millisecond, 3 * time.Second} {
		b := latBucket(d)
		if up := latUpper(b); d >= up || (b > 0 && d < latUpper(b-1)) {
			t.Errorf("%v in bucket %d, bounds [%v, %v)", d, b, latUpper(b-1), up)
		}
	}
	var h latHist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	q := latQuantiles([]*latHist{&h}, 0.5, 0.99, 1)
	for i, want := range []time.Duration{500 * time.Microsecond, 990 * time.Microsecond, time.Millisecond} {
		if q[i] < want || float64(q[i]) > 1.13*float64(want) {
			t.Errorf("quantile %d: %v, want about %v", i, q[i], want)
		}
	}
}
