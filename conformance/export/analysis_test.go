package export

import (
	"os"
	"path/filepath"
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

func readTraceFile(t *testing.T, path string) spec.Trace {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", path))
	require.NoError(t, err)
	defer f.Close()
	tr, err := spec.ReadTrace(f)
	require.NoError(t, err)
	return tr
}

func TestAnalyzeUsesReportedSnapshot(t *testing.T) {
	// The implementation reported the two-account snapshot without the
	// $30 the events show in flight and received before P1->P2's marker.
	tr := readTraceFile(t, "traces/rejects/ExactChannelState-missing-message.jsonl")
	require.Len(t, tr.Recorded, 1)
	a, err := Analyze(tr)
	require.NoError(t, err)
	c := a.Cuts[0]
	require.NotNil(t, c.Reported)
	assert.EqualValues(t, 120, c.Total(), "the reported total")
	assert.EqualValues(t, 150, c.Recorded.Total(), "what the events imply")
	st, s := a.Messages[0].Worst()
	assert.Equal(t, Missing, st, "in flight across the cut, not reported")
	assert.EqualValues(t, 1, s)
	assert.Equal(t, 1, a.Count(1, Missing))
	assert.Zero(t, a.Count(1, Orphan))
	assert.Empty(t, c.Spurious)
	assert.Equal(t, "snapshot 1 (initiator P2): complete, reported total 120, the events imply 150", c.Summary())

	// Without the recorded line the events decide, as before.
	tr.Recorded = nil
	a, err = Analyze(tr)
	require.NoError(t, err)
	st, _ = a.Messages[0].Worst()
	assert.Equal(t, Recorded, st)
	assert.Nil(t, a.Cuts[0].Reported)
	assert.Equal(t, "snapshot 1 (initiator P2): complete, recorded total 150", a.Cuts[0].Summary())

	// A report that agrees with the events changes nothing but the words.
	tr = readTraceFile(t, "traces/conforms/two-account-transfer.jsonl")
	a, err = Analyze(tr)
	require.NoError(t, err)
	st, _ = a.Messages[0].Worst()
	assert.Equal(t, Recorded, st)
	assert.Equal(t, "snapshot 1 (initiator P2): complete, reported total 150", a.Cuts[0].Summary())
	assert.Empty(t, a.Cuts[0].Spurious)
	assert.Empty(t, a.Problems)
}

func TestAnalyzeSpuriousReportedMessages(t *testing.T) {
	// twoBank: P2's $20 is in flight at the cut and recorded. Report it,
	// plus P1's $30 (received before P2's cut, so already in P2's
	// balance) and a message the events never send.
	tr := twoBank(t)
	a, err := Analyze(tr)
	require.NoError(t, err)
	g := a.Cuts[0].Recorded.Clone()
	p1p2 := spec.Channel{From: "P1", To: "P2"}
	g.Chans[p1p2] = []spec.AppMsg{{Amt: 30, Seq: 1}, {Amt: 5, Seq: 9}}
	tr.Recorded = []spec.RecordedSnapshot{spec.NewRecordedSnapshot(1, "P1", g, nil)}
	a, err = Analyze(tr)
	require.NoError(t, err)
	c := a.Cuts[0]
	assert.EqualValues(t, 185, c.Total())
	assert.Equal(t, "snapshot 1 (initiator P1): complete, reported total 185, the events imply 150", c.Summary())
	assert.Equal(t, []ChanMsg{{Chan: p1p2, Msg: spec.AppMsg{Amt: 30, Seq: 1}}, {Chan: p1p2, Msg: spec.AppMsg{Amt: 5, Seq: 9}}}, c.Spurious)
	assert.Equal(t, 2, a.Count(1, Spurious))
	for _, m := range a.Messages {
		st, _ := m.Worst()
		if m.Chan == p1p2 {
			assert.Equal(t, Spurious, st, "reported, not in flight")
		} else {
			assert.Equal(t, Recorded, st, "reported and in flight")
		}
	}
	require.Len(t, a.Problems, 1)
	assert.Contains(t, a.Problems[0], "#9 (5), which the events never send")

	els := parse(t, render(t, tr, SVG))
	sp := withClass(els, "spurious")
	require.Len(t, sp, 1)
	assert.Equal(t, red, sp[0].attrs["stroke"])
	assert.Equal(t, spuriousDash, sp[0].attrs["stroke-dasharray"])
	parse(t, render(t, tr, HTML))

	// The same total from another state is not passed off as agreement.
	g = a.Cuts[0].Recorded.Clone()
	l := g.Procs["P1"]
	l.Bal += 20
	g.Procs["P1"] = l
	g.Chans[spec.Channel{From: "P2", To: "P1"}] = nil
	tr.Recorded = []spec.RecordedSnapshot{spec.NewRecordedSnapshot(1, "P1", g, nil)}
	a, err = Analyze(tr)
	require.NoError(t, err)
	assert.Equal(t, "snapshot 1 (initiator P1): complete, reported total 150, the events imply the same total from another state", a.Cuts[0].Summary())
	assert.Equal(t, 1, a.Count(1, Missing))
}

func TestAnalyzeSpuriousInTheEventsOwnRecording(t *testing.T) {
	// P2 initiates; P1 records at P2's marker, then sends $30, which
	// overtakes P1's marker: P2, recording P1->P2, receives it. It was not
	// in flight at the cut (sent after P1 recorded), so the recording the
	// events imply holds a spurious message, as the audit verdict says.
	tr := newBuilder(t, spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50}).
		initiate("P2", 1).
		recvMarker("P2", "P1").
		send("P1", "P2", 30).
		recvAt("P1", "P2", 1).
		recvMarker("P1", "P2").
		trace()
	a, err := Analyze(tr)
	require.NoError(t, err)
	c := a.Cuts[0]
	require.True(t, c.Complete)
	assert.Nil(t, c.Reported)
	p1p2 := spec.Channel{From: "P1", To: "P2"}
	assert.Equal(t, []spec.AppMsg{{Amt: 30, Seq: 1}}, c.Recorded.Chans[p1p2], "what the events recorded")
	assert.Equal(t, []ChanMsg{{Chan: p1p2, Msg: spec.AppMsg{Amt: 30, Seq: 1}}}, c.Spurious)
	st, s := a.Messages[0].Worst()
	assert.Equal(t, Spurious, st)
	assert.EqualValues(t, 1, s)
	assert.Equal(t, 1, a.Count(1, Spurious))
	assert.Empty(t, a.Problems)
	assert.Contains(t, string(render(t, tr, SVG)), "SPURIOUS, in the recorded channel state but not in flight at the cut")
}

// An aborted snapshot's cut names the nodes that aborted it and why.
func TestAnalyzeAbortedSnapshot(t *testing.T) {
	a, err := Analyze(readTraceFile(t, "traces/conforms/crash-abort.jsonl"))
	require.NoError(t, err)
	require.Len(t, a.Cuts, 1)
	c := a.Cuts[0]
	assert.False(t, c.Complete)
	require.Len(t, c.Aborted, 2)
	assert.Equal(t, "snapshot 1 (initiator P1): incomplete; aborted by P3 (P2 suspected), P1 (P2 suspected)", c.Summary())
}
