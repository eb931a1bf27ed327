package transport

import (
	"testing"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// benchChannel pushes b.N frames with a 32-byte payload through one
// channel and reports frames/s, from the first Send to the last receive.
func benchChannel(b *testing.B, tr Transport) {
	ch := spec.Channel{From: "P1", To: "P2"}
	in, err := tr.Inbox("P2")
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 32)
	done := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	go func() {
		defer close(done)
		for i := 0; i < b.N; i++ {
			<-in
		}
	}()
	for i := 1; i <= b.N; i++ {
		if err := tr.Send(wire.Envelope{Chan: ch, Frame: wire.Frame{Kind: wire.KindApp, Seq: uint64(i), Payload: payload, VC: []uint64{uint64(i), 3}}}); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatal("frames not delivered within a minute")
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "frames/s")
	if err := tr.Close(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkMemory(b *testing.B) {
	benchChannel(b, NewMemory(spec.Ring(2), MemoryConfig{}))
}

func BenchmarkMemoryDelayed(b *testing.B) {
	benchChannel(b, NewMemory(spec.Ring(2), MemoryConfig{MaxDelay: 10 * time.Microsecond, Seed: 1}))
}

func BenchmarkTCP(b *testing.B) {
	top := spec.Ring(2)
	tr, err := NewTCP(top, TCPConfig{Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": "127.0.0.1:0"}})
	if err != nil {
		b.Fatal(err)
	}
	benchChannel(b, tr)
}
