package trace_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/spec"
)

// TestFlushEach: with FlushEach every event is in the writer as soon as
// Emit returns, without Flush; without it, events wait in the buffer.
func TestFlushEach(t *testing.T) {
	ev := spec.Event{Proc: "P1", Seq: 1, Action: spec.Initiate, Snap: 1}
	for _, each := range []bool{false, true} {
		var b bytes.Buffer
		s, err := trace.NewSink(&b, spec.Header{Topology: spec.Ring(2)})
		require.NoError(t, err)
		if each {
			s.FlushEach()
		}
		require.NoError(t, s.Emit(ev))
		lines := strings.Count(b.String(), "\n")
		if each {
			assert.Equal(t, 2, lines, "the header and the event are written")
		} else {
			assert.Equal(t, 0, lines, "buffered until Flush")
		}
		require.NoError(t, s.Close())
		assert.Equal(t, 2, strings.Count(b.String(), "\n"))
	}
	var off *trace.Sink
	off.FlushEach() // a disabled sink: nothing to do
}
