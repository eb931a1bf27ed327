package core_test

import (
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

var benchStep core.Step

// benchNode is a bank node; clocks says whether it keeps vector clocks
// (a traced run) or not (core.Config.NoClocks, an untraced run).
func benchNode(b *testing.B, topo *spec.Topology, p spec.ProcID, bal int64, clocks bool) *core.Node {
	bank, err := app.NewBank(bal)
	require.NoError(b, err)
	nd, err := core.New(core.Config{Topology: topo, Self: p, App: bank, NoClocks: !clocks})
	require.NoError(b, err)
	return nd
}

// BenchmarkSendApp: one SendApp step (bank debit, one frame, one event)
// without clocks: it allocates nothing.
func BenchmarkSendApp(b *testing.B) { benchSendApp(b, false) }

// BenchmarkSendAppClocks: the same with vector clocks (a fresh clock per
// step, shared by the frame and the event).
func BenchmarkSendAppClocks(b *testing.B) { benchSendApp(b, true) }

func benchSendApp(b *testing.B, clocks bool) {
	nd := benchNode(b, spec.Complete(3), "P1", math.MaxInt64, clocks)
	payload := app.Transfer(1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		st, err := nd.SendApp("P2", payload)
		if err != nil {
			b.Fatal(err)
		}
		benchStep = st
	}
}

func benchDeliverApp(b *testing.B, recording, clocks bool) {
	topo := spec.Complete(3)
	nd := benchNode(b, topo, "P2", 0, clocks)
	if recording {
		_, err := nd.Initiate(1) // never completes: P1->P2 records every message
		require.NoError(b, err)
	}
	env := wire.Envelope{Chan: ch("P1", "P2"), Frame: wire.Frame{Kind: wire.KindApp, Payload: app.Transfer(1), VC: []uint64{5, 0, 0}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		env.Frame.Seq = uint64(i + 1)
		st, err := nd.Deliver(env)
		if err != nil {
			b.Fatal(err)
		}
		benchStep = st
	}
}

// BenchmarkDeliverApp: one RecvApp step with no snapshot in flight,
// without clocks: it allocates nothing.
func BenchmarkDeliverApp(b *testing.B) { benchDeliverApp(b, false, false) }

// BenchmarkDeliverAppRecording: one RecvApp step while the channel is
// recorded (adds the payload copy and the append), without clocks. The
// copies are carved from the node's arena and the recording grows by
// doubling, so in steady state no step allocates.
func BenchmarkDeliverAppRecording(b *testing.B) { benchDeliverApp(b, true, false) }

// BenchmarkDeliverAppClocks / RecordingClocks: the same with vector
// clocks (a fresh merged clock per step).
func BenchmarkDeliverAppClocks(b *testing.B) { benchDeliverApp(b, false, true) }

func BenchmarkDeliverAppRecordingClocks(b *testing.B) { benchDeliverApp(b, true, true) }

// BenchmarkDeliverMarker: a first marker (case 1: capture, markers on two
// outgoing channels), then the second (case 2, completing), then release.
func BenchmarkDeliverMarker(b *testing.B) {
	nd := benchNode(b, spec.Complete(3), "P2", 100, true)
	m1 := wire.Envelope{Chan: ch("P1", "P2"), Frame: wire.Frame{Kind: wire.KindMarker}}
	m3 := wire.Envelope{Chan: ch("P3", "P2"), Frame: wire.Frame{Kind: wire.KindMarker}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m1.Frame.Snap = spec.SnapID(i + 1)
		m3.Frame.Snap = spec.SnapID(i + 1)
		if _, err := nd.Deliver(m1); err != nil {
			b.Fatal(err)
		}
		st, err := nd.Deliver(m3)
		if err != nil || st.Completed == 0 {
			b.Fatal(err)
		}
		if len(nd.TakeCompleted()) != 1 {
			b.Fatal("no snapshot")
		}
	}
}

// BenchmarkInitiate: Initiator Rule on a node of Complete(3).
func BenchmarkInitiate(b *testing.B) {
	nd := benchNode(b, spec.Complete(3), "P1", 100, true)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		st, err := nd.Initiate(spec.SnapID(i + 1))
		if err != nil {
			b.Fatal(err)
		}
		benchStep = st
	}
}

func benchSendTraced(b *testing.B, sink *trace.Sink) {
	nd := benchNode(b, spec.Complete(3), "P1", math.MaxInt64, sink.Enabled())
	payload := app.Transfer(1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		st, err := nd.SendApp("P2", payload)
		if err != nil {
			b.Fatal(err)
		}
		if err := sink.Emit(st.Event); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendAppTraceOff / On: a SendApp step followed by Emit to a nil
// sink (the node without clocks, as impl/runtime runs it) or to a
// JSON-lines sink writing to io.Discard (with clocks).
func BenchmarkSendAppTraceOff(b *testing.B) { benchSendTraced(b, trace.Off) }

func BenchmarkSendAppTraceOn(b *testing.B) {
	sink, err := trace.NewSink(io.Discard, spec.Header{Topology: spec.Complete(3)})
	require.NoError(b, err)
	benchSendTraced(b, sink)
	require.NoError(b, sink.Close())
}
