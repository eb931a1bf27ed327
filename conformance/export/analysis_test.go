package export

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

func TestAnalyzeTwoBank(t *testing.T) {
	a, err := Analyze(twoBank(t))
	require.NoError(t, err)
	c := a.Cuts[0]
	assert.Equal(t, spec.ProcID("P1"), c.Initiator)
	assert.Equal(t, map[spec.ProcID]int{"P1": 2, "P2": 5}, c.Rec)
	assert.EqualValues(t, 150, c.Recorded.Total(), "the article's $150")
	assert.Equal(t, spec.LocalState{Bal: 70, Sent: 1}, c.Recorded.Procs["P1"])
	assert.Equal(t, spec.LocalState{Bal: 60, Sent: 1, Rcvd: 1}, c.Recorded.Procs["P2"])
	assert.Equal(t, []spec.AppMsg{{Amt: 20, Seq: 1}}, c.Recorded.Chans[spec.Channel{From: "P2", To: "P1"}])
	assert.Empty(t, a.Orphans())
	require.Len(t, a.Messages, 2)
	require.Len(t, a.Markers, 2)
	for _, m := range a.Markers {
		assert.GreaterOrEqual(t, m.Send, 0)
		assert.Greater(t, m.Recv, m.Send)
	}
	assert.Equal(t, "snapshot 1 (initiator P1): complete, recorded total 150", c.Summary())
}

func TestAnalyzeTokenRing(t *testing.T) {
	a, err := Analyze(tokenRing(t))
	require.NoError(t, err)
	c := a.Cuts[0]
	assert.EqualValues(t, 1, c.Recorded.Total(), "exactly one token")
	assert.Equal(t, []spec.AppMsg{{Amt: 1, Seq: 1}}, c.Recorded.Chans[spec.Channel{From: "P3", To: "P1"}], "the token, in flight")
	st, s := a.Messages[0].Worst()
	assert.Equal(t, Recorded, st)
	assert.EqualValues(t, 1, s)
	assert.Empty(t, a.Orphans())
}

func TestAnalyzeOrphanAndMissing(t *testing.T) {
	a, err := Analyze(nonFIFO(t))
	require.NoError(t, err)
	require.Len(t, a.Orphans(), 1)
	assert.EqualValues(t, 180, a.Cuts[0].Recorded.Total(), "the article's $180")

	// A message in flight at the cut that arrives after its channel's
	// marker is missing ($120): P1 sends $30 then initiates, and the
	// marker overtakes the $30.
	tr := newBuilder(t, spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50}).
		send("P1", "P2", 30).
		initiate("P1", 1).
		recvMarkerAt("P1", "P2", 1).
		recv("P1", "P2").
		recvMarker("P2", "P1").
		trace()
	a, err = Analyze(tr)
	require.NoError(t, err)
	st, _ := a.Messages[0].Worst()
	assert.Equal(t, Missing, st)
	assert.EqualValues(t, 120, a.Cuts[0].Recorded.Total(), "the article's $120")

	// Broken traces are reported, not trusted.
	tr = twoBank(t)
	tr.Events = tr.Events[2:] // receives without sends, markers without Initiate
	a, err = Analyze(tr)
	require.NoError(t, err)
	assert.NotEmpty(t, a.Problems)
	_, err = Analyze(spec.Trace{})
	assert.Error(t, err)
}

// recvMarkerAt takes the marker at position i of p->q (breaking FIFO).
func (b *builder) recvMarkerAt(p, q spec.ProcID, i int) *builder {
	c := spec.Channel{From: p, To: q}
	m := b.chans[c][i]
	require.True(b.t, m.marker)
	rest := append([]inFlight{m}, b.chans[c][:i]...)
	b.chans[c] = append(rest, b.chans[c][i+1:]...)
	return b.recvMarker(p, q)
}
