package instrument_test

import (
	"io"
	"testing"

	"github.com/markerwave/markerwave/instrument"
)

// account is the work a bank implementation does at a send and a
// receive, for the benchmark to instrument.
type account struct {
	bal    int64
	sent   int
	nextID int
}

// transfer is one send and its receive, instrumented by rec.
//
//go:noinline
func (a *account) transfer(rec *instrument.Recorder, amount int64) {
	a.bal -= amount
	a.sent++
	a.nextID++
	rec.Send("N2", a.nextID, amount)
	a.bal += amount
	rec.Recv("N2", a.nextID, amount)
}

// bare is transfer with no instrumentation call at all.
//
//go:noinline
func (a *account) bare(amount int64) {
	a.bal -= amount
	a.sent++
	a.nextID++
	a.bal += amount
}

// BenchmarkRecorder measures, side by side, a send and a receive of a
// toy bank with no instrumentation call at all ("none"), with the calls
// on a nil Recorder ("off": instrumentation compiled in and switched
// off), and with a Recorder writing to io.Discard ("on"). Off must cost
// nothing: no allocation, and a time per op within noise of none.
func BenchmarkRecorder(b *testing.B) {
	b.Run("none", func(b *testing.B) {
		a := &account{bal: 1 << 40}
		b.ReportAllocs()
		for b.Loop() {
			a.bare(30)
		}
	})
	b.Run("off", func(b *testing.B) {
		a := &account{bal: 1 << 40}
		var rec *instrument.Recorder
		b.ReportAllocs()
		for b.Loop() {
			a.transfer(rec, 30)
		}
	})
	b.Run("on", func(b *testing.B) {
		a := &account{bal: 1 << 40}
		rec, err := instrument.NewNode(io.Discard, instrument.Config{Procs: []string{"N1", "N2"}, InitBal: map[string]int64{"N1": 1 << 40, "N2": 0}}, "N1")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			a.transfer(rec, 30)
		}
		if err := rec.Err(); err != nil {
			b.Fatal(err)
		}
	})
}

// TestOffAllocatesNothing: a call on a nil Recorder, with an integer id
// (boxed into an interface at the call), allocates nothing.
func TestOffAllocatesNothing(t *testing.T) {
	a := &account{bal: 1 << 40}
	var rec *instrument.Recorder
	if n := testing.AllocsPerRun(1000, func() { a.transfer(rec, 30) }); n != 0 {
		t.Fatalf("a send and a receive on a nil Recorder allocate %v times, want 0", n)
	}
}
