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

func benchNode(b *testing.B, topo *spec.Topology, p spec.ProcID, bal int64) *core.Node {
	bank, err := app.NewBank(bal)
	require.NoError(b, err)
	return mustNode(b, topo, p, bank)
}

// BenchmarkSendApp: one SendApp step (bank debit, one frame, one event).
func BenchmarkSendApp(b *testing.B) {
	nd := benchNode(b, spec.Complete(3), "P1", math.MaxInt64)
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

func benchDeliverApp(b *testing.B, recording bool) {
	topo := spec.Complete(3)
	nd := benchNode(b, topo, "P2", 0)
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

// BenchmarkDeliverApp: one RecvApp step with no snapshot in flight.
func BenchmarkDeliverApp(b *testing.B) { benchDeliverApp(b, false) }

// BenchmarkDeliverAppRecording: one RecvApp step while the channel is
// recorded (adds the payload copy and the append).
func BenchmarkDeliverAppRecording(b *testing.B) { benchDeliverApp(b, true) }

// BenchmarkDeliverMarker: a first marker (case 1: capture, markers on two
// outgoing channels), then the second (case 2, completing), then release.
func BenchmarkDeliverMarker(b *testing.B) {
	nd := benchNode(b, spec.Complete(3), "P2", 100)
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
	nd := benchNode(b, spec.Complete(3), "P1", 100)
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
	nd := benchNode(b, spec.Complete(3), "P1", math.MaxInt64)
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
// sink or to a JSON-lines sink writing to io.Discard.
func BenchmarkSendAppTraceOff(b *testing.B) { benchSendTraced(b, trace.Off) }

func BenchmarkSendAppTraceOn(b *testing.B) {
	sink, err := trace.NewSink(io.Discard, spec.Header{Topology: spec.Complete(3)})
	require.NoError(b, err)
	benchSendTraced(b, sink)
	require.NoError(b, sink.Close())
}
