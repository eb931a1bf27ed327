package trace_test

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/spec"
)

func header() spec.Header {
	return spec.Header{
		Topology: spec.Ring(2),
		InitBal:  map[spec.ProcID]int64{"P1": 100, "P2": 50},
		Snaps:    map[spec.SnapID]spec.ProcID{1: "P1"},
		Source:   "trace test",
	}
}

func events() []spec.Event {
	return []spec.Event{
		{Proc: "P1", Seq: 1, Action: spec.SendApp, From: "P1", To: "P2", Amount: 30, Msg: 1, Payload: []byte("30"), After: spec.LocalState{Bal: 70, Sent: 1}, VC: []uint64{1, 0}},
		{Proc: "P1", Seq: 2, Action: spec.Initiate, Snap: 1, After: spec.LocalState{Bal: 70, Sent: 1}, VC: []uint64{2, 0}},
		{Proc: "P2", Seq: 1, Action: spec.RecvApp, From: "P1", To: "P2", Amount: 30, Msg: 1, After: spec.LocalState{Bal: 80, Rcvd: 1}, VC: []uint64{1, 1}},
		{Proc: "P2", Seq: 2, Action: spec.RecvMarker, From: "P1", To: "P2", Snap: 1, First: true, After: spec.LocalState{Bal: 80, Rcvd: 1}, VC: []uint64{2, 2}},
	}
}

func TestSinkMatchesWriteTrace(t *testing.T) {
	var got, want bytes.Buffer
	s, err := trace.NewSink(&got, header())
	require.NoError(t, err)
	assert.True(t, s.Enabled())
	for _, e := range events() {
		require.NoError(t, s.Emit(e))
	}
	assert.Equal(t, 4, s.Count())
	require.NoError(t, s.Close())
	require.NoError(t, spec.WriteTrace(&want, spec.Trace{Header: header(), Events: events()}))
	assert.Equal(t, want.String(), got.String())

	tr, err := spec.ReadTrace(&got)
	require.NoError(t, err)
	assert.Equal(t, spec.TraceFormat, tr.Header.Format)
	assert.Equal(t, events(), tr.Events)

	require.ErrorContains(t, s.Emit(events()[0]), "emit after close")
	require.NoError(t, s.Close())
}

func TestSinkHeaderOnlyIsReadable(t *testing.T) {
	var buf bytes.Buffer
	s, err := trace.NewSink(&buf, header())
	require.NoError(t, err)
	require.NoError(t, s.Flush())
	tr, err := spec.ReadTrace(&buf)
	require.NoError(t, err)
	assert.Empty(t, tr.Events)
}

func TestSinkBadInput(t *testing.T) {
	_, err := trace.NewSink(nil, header())
	require.ErrorContains(t, err, "nil writer")
	_, err = trace.NewSink(io.Discard, spec.Header{})
	require.ErrorContains(t, err, "no topology")

	s, err := trace.NewSink(io.Discard, header())
	require.NoError(t, err)
	bad := events()[0]
	bad.Payload = []byte("{not json")
	require.ErrorContains(t, s.Emit(bad), "trace: event 1 (SendApp(P1, P2, 30) #1)")
	require.Error(t, s.Emit(events()[1]), "errors stick")
}

type failWriter struct{ closed bool }

func (f *failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
func (f *failWriter) Close() error              { f.closed = true; return nil }

func TestSinkWriteErrorSticks(t *testing.T) {
	fw := &failWriter{}
	s, err := trace.NewSink(fw, header())
	require.NoError(t, err) // buffered
	require.NoError(t, s.Emit(events()[0]))
	require.ErrorContains(t, s.Flush(), "disk full")
	require.ErrorContains(t, s.Emit(events()[1]), "disk full")
	require.ErrorContains(t, s.Close(), "disk full")
	assert.True(t, fw.closed)
}

func TestNilSinkIsOff(t *testing.T) {
	var s *trace.Sink = trace.Off
	assert.False(t, s.Enabled())
	require.NoError(t, s.Emit(events()[0]))
	require.NoError(t, s.Flush())
	require.NoError(t, s.Close())
	assert.Equal(t, 0, s.Count())
	e := events()[0]
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = s.Emit(e) }))
}

func TestSinkConcurrentEmit(t *testing.T) {
	var buf bytes.Buffer
	s, err := trace.NewSink(&buf, header())
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				_ = s.Emit(events()[i%4])
			}
		}()
	}
	wg.Wait()
	require.NoError(t, s.Close())
	tr, err := spec.ReadTrace(&buf)
	require.NoError(t, err)
	assert.Len(t, tr.Events, 800)
}

var sinkErr error

func BenchmarkEmitOff(b *testing.B) {
	e := events()[0]
	var s *trace.Sink
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sinkErr = s.Emit(e)
	}
}

func BenchmarkEmitOn(b *testing.B) {
	e := events()[0]
	s, err := trace.NewSink(io.Discard, header())
	require.NoError(b, err)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sinkErr = s.Emit(e)
	}
	require.NoError(b, s.Close())
}
