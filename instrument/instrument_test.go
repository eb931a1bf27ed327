package instrument_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/instrument"
	"github.com/markerwave/markerwave/spec"
)

var twoAccounts = instrument.Config{Run: "two-accounts", Procs: []string{"N1", "N2"},
	InitBal: map[string]int64{"N1": 100, "N2": 50}, Drained: true}

// TestNodeLogsAudit: the two accounts written as one log a node
// (NewNode), with integer message ids and snapshot id 0, read back by
// the format's strict reader and audited as one run: it conforms, and
// the recorded channel state and the marker sends are checked on the
// implementation's own values.
func TestNodeLogsAudit(t *testing.T) {
	var b1, b2 bytes.Buffer
	n1, err := instrument.NewNode(&b1, twoAccounts, "N1")
	require.NoError(t, err)
	n2, err := instrument.NewNode(&b2, twoAccounts, "N2")
	require.NoError(t, err)
	n1.Send("N2", 1, 30)
	n2.RecordState(0, 50)
	n2.MarkerSent("N1", 0)
	n1.MarkerReceived("N2", 0)
	n1.RecordState(0, 70)
	n1.MarkerSent("N2", 0)
	n1.Report(0)
	n2.Recv("N1", uint8(1), 30) // any integer type: the id is its text
	n2.RecordChannelMessage(0, "N1", 1, 30)
	n2.MarkerReceived("N1", 0)
	n2.Report(0)
	require.NoError(t, n1.Close())
	require.NoError(t, n2.Close())

	var logs []spec.OutsiderLog
	for _, b := range []*bytes.Buffer{&b1, &b2} {
		l, err := spec.ReadOutsider(bytes.NewReader(b.Bytes()))
		require.NoError(t, err, b.String())
		logs = append(logs, l)
	}
	run, err := conformance.NewOutsiderRun(logs, []string{"N1.jsonl", "N2.jsonl"})
	require.NoError(t, err)
	rep, err := conformance.AuditOutsider(run, conformance.Options{})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Equal(t, 1, rep.Snapshots)
	assert.Contains(t, rep.String(), "checked on the implementation's own values: message ids")
	assert.Contains(t, rep.String(), "recorded channel states, 2 of 2")
	assert.Contains(t, rep.String(), "marker sends, 2 of 2")
}

// TestErrors: a misuse is a clear error naming the node, the call and
// what was wrong; it sticks (later calls write nothing) and never
// panics.
func TestErrors(t *testing.T) {
	cases := []struct {
		name string
		use  func(r *instrument.Recorder)
		want string
	}{
		{"no channel", func(r *instrument.Recorder) { r.Send("N3", 1, 5) }, `instrument: N1 send: field "to": no channel N1->N3 in the topology`},
		{"bad amount", func(r *instrument.Recorder) { r.Send("N2", 1, 0) }, `field "amount": 0, want a positive amount`},
		{"bad id", func(r *instrument.Recorder) { r.Send("N2", 1.5, 5) }, "instrument: N1 send: message id of type float64: want a string or an integer"},
		{"no snap", func(r *instrument.Recorder) { r.MarkerSent("N2", nil) }, "instrument: N1 marker_send: no snapshot id"},
		{"twice", func(r *instrument.Recorder) { r.RecordState(7, 1); r.RecordState("7", 1) }, "N1 recorded its state for snapshot 7 twice"},
		{"channel not in", func(r *instrument.Recorder) { r.RecordState(1, 5); r.RecordChannelMessage(1, "N1", 1, 5) }, "no channel N1->N1 in the topology"},
		{"report unknown", func(r *instrument.Recorder) { r.Report(3) }, "N1 Report: snapshot 3: the node has recorded nothing of it"},
		{"ids and amounts", func(r *instrument.Recorder) {
			r.RecordState(1, 5)
			r.RecordChannelMessage(1, "N2", 1, 5)
			r.RecordChannelMessage(1, "N2", nil, 5)
			r.Report(1)
		}, `field "snapshot.chans.N2->N1": both ids and amounts`},
		{"reported twice", func(r *instrument.Recorder) { r.RecordState(1, 5); r.Report(1); r.Report(1) }, "N1 Report: snapshot 1: the node has recorded nothing of it (RecordState, RecordChannelMessage), or has reported it"},
		{"for on a node log", func(r *instrument.Recorder) { r.For("N2") }, `instrument: For("N2") on N1's own log`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			r, err := instrument.NewNode(&b, twoAccounts, "N1")
			require.NoError(t, err)
			header := b.Len()
			c.use(r)
			r.Send("N2", 2, 5) // after an error, nothing more is written
			require.Error(t, r.Err())
			assert.Contains(t, r.Err().Error(), c.want)
			assert.Equal(t, r.Err(), r.Close())
			if !slices.Contains([]string{"ids and amounts", "twice", "channel not in", "reported twice"}, c.name) {
				assert.Equal(t, header, b.Len(), "nothing written after the header:\n%s", b.String())
			}
		})
	}
}

// TestConfigErrors: a bad config is refused when the log starts.
func TestConfigErrors(t *testing.T) {
	var b bytes.Buffer
	_, err := instrument.NewNode(&b, instrument.Config{Procs: []string{"N1", "N2"}, InitBal: map[string]int64{"N1": 1}}, "N1")
	assert.EqualError(t, err, `instrument: header: field "init_bal.N2": missing: every process of the topology needs its initial balance`)
	_, err = instrument.NewNode(&b, twoAccounts, "N9")
	assert.EqualError(t, err, `instrument: header: field "node": "N9" is no process of the topology`)
	_, err = instrument.NewNode(&b, twoAccounts, "")
	assert.ErrorContains(t, err, "NewNode: no node")
	_, err = instrument.New(&b, instrument.Config{Procs: []string{"N1", "N2"}, Channels: [][2]string{{"N1", "N2"}}, InitBal: map[string]int64{"N1": 1, "N2": 1}})
	assert.ErrorContains(t, err, "instrument: topology:")
	assert.Empty(t, b.String(), "a refused config writes nothing")
	r, err := instrument.New(&b, twoAccounts)
	require.NoError(t, err)
	r.For("N7")
	assert.EqualError(t, r.Err(), `instrument: For("N7"): no node of the topology`)
}

// failWriter fails every write after the first.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n++; w.n > 1 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// TestWriteError: a failed write is kept and returned, not lost.
func TestWriteError(t *testing.T) {
	r, err := instrument.NewNode(&failWriter{}, twoAccounts, "N1")
	require.NoError(t, err)
	r.Send("N2", 1, 5)
	assert.EqualError(t, r.Close(), "instrument: write: disk full")
}

// TestNilRecorder: every method of a nil Recorder returns at once.
func TestNilRecorder(t *testing.T) {
	var r *instrument.Recorder
	r.Send("N2", 1, 5)
	r.Recv("N2", 1, 5)
	r.MarkerSent("N2", 1)
	r.MarkerReceived("N2", 1)
	r.RecordState(1, 5)
	r.RecordChannelMessage(1, "N2", 1, 5)
	r.Report(1)
	assert.Nil(t, r.For("N1"))
	assert.NoError(t, r.Err())
	assert.NoError(t, r.Close())
}

// TestConcurrent: nodes writing one file from their goroutines at once
// (run with -race) each get their lines whole, in their own order.
func TestConcurrent(t *testing.T) {
	procs := []string{"N1", "N2", "N3", "N4"}
	bal := map[string]int64{}
	for _, p := range procs {
		bal[p] = 1000
	}
	var b bytes.Buffer
	rec, err := instrument.New(&b, instrument.Config{Procs: procs, InitBal: bal})
	require.NoError(t, err)
	const each = 200
	var wg sync.WaitGroup
	for i, p := range procs {
		n := rec.For(p)
		to := procs[(i+1)%len(procs)]
		wg.Go(func() {
			for k := range each {
				n.Send(to, fmt.Sprintf("%s-%d", p, k), 1)
			}
		})
	}
	wg.Wait()
	require.NoError(t, rec.Close())
	l, err := spec.ReadOutsider(strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Len(t, l.Events, each*len(procs))
	next := map[spec.ProcID]int{}
	for _, e := range l.Events {
		assert.Equal(t, fmt.Sprintf("%s-%d", e.Node, next[e.Node]), string(*e.ID))
		next[e.Node]++
	}
}

// closeCounter counts its Close calls.
type closeCounter struct {
	bytes.Buffer
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestClose: Close closes the writer once, on the Recorder New made; the
// nodes' Recorders (For) leave it open.
func TestClose(t *testing.T) {
	var w closeCounter
	rec, err := instrument.New(&w, twoAccounts)
	require.NoError(t, err)
	n1 := rec.For("N1")
	n1.Send("N2", 1, 5)
	require.NoError(t, n1.Close())
	assert.Equal(t, 0, w.closed, "a node's Recorder leaves the shared writer open")
	require.NoError(t, rec.Close())
	assert.Equal(t, 1, w.closed)
}
