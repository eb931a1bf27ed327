package transport

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/markerwave/markerwave/impl/transport/tlstest"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// The transport benchmarks put each transport beside its raw path in the
// same run: one sender goroutine, one receiver goroutine, one channel,
// application frames with a 32-byte payload and a 2-entry vector clock.
// Each benchmark alternates the raw path and the transport in chunks of
// b.N/benchChunks frames (so both see the same background load) and
// reports frames/s of each and their ratio, the figure of merit, and the
// CPU time (user and system, the whole process's) each spent per frame,
// the figure a machine shared with other work changes least:
//
//	go test -run '^$' -bench 'Memory|TCP' -count 5 ./impl/transport/
//
// ns/op is the transport's time per frame (the raw chunks run with the
// timer stopped).

// benchChunks is how many times a benchmark alternates raw and transport.
const benchChunks = 4

var (
	benchChan    = spec.Channel{From: "P1", To: "P2"}
	benchPayload = make([]byte, 32)
)

// benchFrame is the i-th frame of every benchmark (i >= 1), its clock
// written into vc (2 entries). Each path of a benchmark builds its clock
// once and rewrites it for every frame, as a caller reusing its buffers
// does: Send copies env's slices (Transport.Send), and the raw paths'
// receivers never read the clock.
func benchFrame(i int, vc []uint64) wire.Frame {
	vc[0], vc[1] = uint64(i), 3
	return wire.Frame{Kind: wire.KindApp, Seq: uint64(i), Payload: benchPayload, VC: vc}
}

// sideBySide times raw and tr (each moves n frames and returns when the
// last one was received) in alternating chunks and reports frames/s of
// both, the ratio transport/raw, and the CPU ns per frame of both.
func sideBySide(b *testing.B, raw, tr func(n int)) {
	b.Helper()
	var rawT, trT, rawCPU, trCPU time.Duration
	var rawN, trN int
	b.ResetTimer()
	for k := 0; k < benchChunks; k++ {
		n := b.N / benchChunks
		if k == benchChunks-1 {
			n = b.N - (benchChunks-1)*(b.N/benchChunks)
		}
		if n == 0 {
			continue
		}
		b.StopTimer()
		start, cpu := time.Now(), cpuTime()
		raw(n)
		rawT, rawCPU = rawT+time.Since(start), rawCPU+cpuTime()-cpu
		rawN += n
		b.StartTimer()
		start, cpu = time.Now(), cpuTime()
		tr(n)
		trT, trCPU = trT+time.Since(start), trCPU+cpuTime()-cpu
		trN += n
	}
	b.StopTimer()
	rawRate := float64(rawN) / rawT.Seconds()
	trRate := float64(trN) / trT.Seconds()
	b.ReportMetric(rawRate, "raw-frames/s")
	b.ReportMetric(trRate, "frames/s")
	b.ReportMetric(trRate/rawRate, "transport/raw")
	b.ReportMetric(float64(rawCPU.Nanoseconds())/float64(rawN), "raw-cpu-ns/frame")
	b.ReportMetric(float64(trCPU.Nanoseconds())/float64(trN), "cpu-ns/frame")
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sendThrough returns a function that sends n frames through tr on
// benchChan and waits until the receiver took them all. Frames are
// numbered on from one call to the next.
func sendThrough(b *testing.B, tr Transport) func(n int) { return sendBetween(b, tr, tr) }

// sendBetween is sendThrough with the sender served by tr and the
// receiver by rx.
func sendBetween(b *testing.B, tr, rx Transport) func(n int) {
	in, err := rx.Inbox(benchChan.To)
	if err != nil {
		b.Fatal(err)
	}
	seq, vc := 0, make([]uint64, 2)
	return func(n int) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			var batch []wire.Envelope
			for got := 0; got < n; got += len(batch) {
				<-in.Ready()
				batch, _ = in.Take(batch, 0)
			}
		}()
		for i := 0; i < n; i++ {
			seq++
			if err := tr.Send(wire.Envelope{Chan: benchChan, Frame: benchFrame(seq, vc)}); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Fatal("frames not delivered within a minute")
		}
	}
}

// rawChannel returns the raw path of the in-memory transport: a bare Go
// channel of envelopes with capacity c between one sender and one
// receiver.
func rawChannel(c int) func(n int) {
	return func(n int) {
		ch := make(chan wire.Envelope, c)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < n; i++ {
				<-ch
			}
		}()
		vc := make([]uint64, 2)
		for i := 1; i <= n; i++ {
			ch <- wire.Envelope{Chan: benchChan, Frame: benchFrame(i, vc)}
		}
		<-done
	}
}

// rawTCP returns the raw path of the TCP transport: a bare loopback TCP
// stream carrying length-prefixed frames of the size the transport sends
// (the wire encoding of benchFrame), written through a 64 KiB
// bufio.Writer flushed at the end and read through a 64 KiB bufio.Reader
// into one reused buffer: no encoding, decoding, acks or allocation.
func rawTCP(b *testing.B) (run func(n int), stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	frame, err := wire.Encode(benchFrame(1<<20, make([]uint64, 2))) // a typical size: 3-byte seq and clock entry
	if err != nil {
		b.Fatal(err)
	}
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(acc)
			return
		}
		acc <- c
	}()
	out, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	in, ok := <-acc
	if !ok {
		b.Fatal("accept failed")
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	br := bufio.NewReaderSize(in, 64<<10)
	run = func(n int) {
		done := make(chan error, 1)
		go func() {
			var pre [4]byte
			body := make([]byte, 256)
			for i := 0; i < n; i++ {
				if _, err := io.ReadFull(br, pre[:]); err != nil {
					done <- err
					return
				}
				if _, err := io.ReadFull(br, body[:binary.BigEndian.Uint32(pre[:])]); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for i := 0; i < n; i++ {
			if _, err := bw.Write(frame); err != nil {
				b.Fatal(err)
			}
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	stop = func() { out.Close(); in.Close(); ln.Close() }
	return run, stop
}

func closeBench(b *testing.B, tr Transport) {
	if err := tr.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMemory: the in-memory transport beside a bare unbuffered Go
// channel, one hand-off per envelope (an Inbox hands over whatever is
// waiting at each wake-up).
func BenchmarkMemory(b *testing.B) {
	tr := NewMemory(spec.Ring(2), MemoryConfig{})
	defer closeBench(b, tr)
	sideBySide(b, rawChannel(0), sendThrough(b, tr))
}

// BenchmarkMemoryBuffered: the in-memory transport beside a bare Go
// channel with a 256-envelope buffer, the fastest in-process path.
func BenchmarkMemoryBuffered(b *testing.B) {
	tr := NewMemory(spec.Ring(2), MemoryConfig{})
	defer closeBench(b, tr)
	sideBySide(b, rawChannel(256), sendThrough(b, tr))
}

// BenchmarkMemoryDelayed: the in-memory transport with random delays (up
// to 10µs per frame) beside a bare unbuffered Go channel.
func BenchmarkMemoryDelayed(b *testing.B) {
	tr := NewMemory(spec.Ring(2), MemoryConfig{MaxDelay: 10 * time.Microsecond, Seed: 1})
	defer closeBench(b, tr)
	sideBySide(b, rawChannel(0), sendThrough(b, tr))
}

// BenchmarkTCP: the TCP transport (acks, resume state, incarnations)
// beside a bare buffered loopback TCP stream of frames of the same size.
func BenchmarkTCP(b *testing.B) {
	tr, err := NewTCP(spec.Ring(2), TCPConfig{Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": "127.0.0.1:0"}})
	if err != nil {
		b.Fatal(err)
	}
	defer closeBench(b, tr)
	raw, stop := rawTCP(b)
	defer stop()
	sideBySide(b, raw, sendThrough(b, tr))
}

// BenchmarkTCPTLS: the cost of mutual TLS, the TCP transport with TLS
// (TCPConfig.TLS, TLS 1.3, ECDSA P-256 certificates) beside the same
// transport in plain TCP, in one run; each end is a transport of its
// own, as in a cluster of processes. "raw-" metrics are plain TCP's,
// transport/raw is TLS's rate over plain's.
func BenchmarkTCPTLS(b *testing.B) {
	ca, err := tlstest.NewCA("bench")
	if err != nil {
		b.Fatal(err)
	}
	plain := benchPair(b, nil)
	secure := benchPair(b, ca)
	sideBySide(b, sendBetween(b, plain[0], plain[1]), sendBetween(b, secure[0], secure[1]))
}

// benchPair is P1's and P2's transports of spec.Ring(2), with mutual
// TLS from ca (nil: plain TCP), closed when b ends.
func benchPair(b *testing.B, ca *tlstest.CA) [2]*TCP {
	lns := map[spec.ProcID]net.Listener{}
	addrs := map[spec.ProcID]string{}
	for _, p := range []spec.ProcID{"P1", "P2"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lns[p], addrs[p] = ln, ln.Addr().String()
	}
	var pair [2]*TCP
	for i, p := range []spec.ProcID{"P1", "P2"} {
		cfg := TCPConfig{Addrs: addrs, Local: []spec.ProcID{p}, Listeners: map[spec.ProcID]net.Listener{p: lns[p]}}
		if ca != nil {
			cert, err := ca.Cert(string(p), "")
			if err != nil {
				b.Fatal(err)
			}
			cfg.TLS = &TLS{Cert: cert, CAs: ca.Pool(), Cluster: ca.Cluster}
		}
		tr, err := NewTCP(spec.Ring(2), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { closeBench(b, tr) })
		pair[i] = tr
	}
	return pair
}
