package conformance

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/conformance/export"
	"github.com/markerwave/markerwave/spec"
)

// The verdict (Replay's run checks, what markerwave audit prints) and the
// space-time diagram (export.Analyze, what markerwave export draws) must
// say the same thing about every message: on every snapshot the verdict
// judges, the messages the diagram marks orphan, missing, spurious and
// recorded are exactly the orphans the ConsistentCut violation lists, the
// missing and spurious messages the ExactChannelState violation lists, and
// the rest of the recorded state the verdict judged; and a run the audit
// accepts has no message marked orphan, missing or spurious anywhere.

// TestCutViewsAgreeOnTraces checks every trace in traces/.
func TestCutViewsAgreeOnTraces(t *testing.T) {
	var paths []string
	require.NoError(t, filepath.WalkDir(tracesDir, func(path string, d fs.DirEntry, err error) error {
		if skipOutsiderDir(d) || skipSinkDir(d) {
			return filepath.SkipDir
		}
		// A barrier trace (traces/barrier/) has no Chandy-Lamport cut
		// views: export.BarrierDiagram draws it.
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") && !IsBarrierTraceFile(path) {
			paths = append(paths, path)
		}
		return err
	}))
	require.NotEmpty(t, paths)
	st := viewStats{}
	for _, path := range paths {
		t.Run(strings.TrimPrefix(path, tracesDir+"/"), func(t *testing.T) {
			tr, _, err := ReadTraceFile(path)
			require.NoError(t, err)
			st.add(checkViewsAgree(t, tr))
			tr.Recorded = nil // the events' own recording decides
			st.add(checkViewsAgree(t, tr))
		})
	}
	t.Logf("%s", st)
	for _, s := range []spec.MsgStatus{spec.MsgOrphan, spec.MsgMissing, spec.MsgRecorded} {
		require.Positive(t, st[s], "the traces exercise %s messages", s)
	}
}

// TestCutViewsAgreeOnRandomRuns checks random runs of real nodes on the
// lockstep harness's random topologies and applications (drawLockstep),
// delivered in FIFO order or not (a marker that overtakes messages makes
// missing ones and orphans), with the snapshots the nodes report, a
// report changed (a message dropped or added), or no report.
func TestCutViewsAgreeOnRandomRuns(t *testing.T) {
	st := viewStats{}
	kinds := []spec.MsgStatus{spec.MsgOrphan, spec.MsgMissing, spec.MsgSpurious, spec.MsgRecorded, spec.MsgPending}
	covered := func() bool {
		for _, s := range kinds {
			if st[s] == 0 {
				return false
			}
		}
		return true
	}
	// -short runs fewer checks per rapid.Check; repeat (a few rounds at
	// most) until every kind of message has been judged by both views.
	for round := 0; round < 10 && !covered(); round++ {
		cutViewsRound(t, st)
	}
	t.Logf("%s", st)
	for _, s := range kinds {
		require.Positive(t, st[s], "the random runs exercise %s messages", s)
	}
}

// cutViewsRound is one rapid.Check of TestCutViewsAgreeOnRandomRuns,
// adding what it judged to st.
func cutViewsRound(t *testing.T, st viewStats) {
	rapid.Check(t, func(rt *rapid.T) {
		l := drawLockstep(rt, "cutviews")
		fifo := rapid.Bool().Draw(rt, "fifo")
		for range rapid.IntRange(0, 150).Draw(rt, "steps") {
			randomStep(rt, l, fifo)
		}
		l.net.Take()
		tr := l.net.Trace("")
		switch rapid.IntRange(0, 2).Draw(rt, "report") {
		case 1:
			changeReport(rt, &tr)
		case 2:
			tr.Recorded = nil
		}
		st.add(checkViewsAgree(rt, tr))
	})
}

// randomStep has l's nodes take one random step directly on its Net (no
// model: the runs may break FIFO): a send, an initiation, a delivery (of
// the head, or with fifo false of any frame; a refused one stays queued),
// or taking the completed local snapshots.
func randomStep(rt *rapid.T, l *lockstep, fifo bool) {
	n := l.net
	switch rapid.IntRange(0, 5).Draw(rt, "action") {
	case 0, 1:
		c := rapid.SampledFrom(n.Topo.Chans).Draw(rt, "send on")
		_, _ = n.SendAmount(c.From, c.To, rapid.SampledFrom(l.amounts).Draw(rt, "amount"))
	case 4:
		si := rapid.IntRange(0, len(l.cfg.Snap)-1).Draw(rt, "snap")
		_, _ = n.Initiate(l.cfg.Topo.Procs[l.cfg.Initiator[si]], l.cfg.Snap[si])
	case 2, 3:
		var busy []spec.Channel
		for _, c := range n.Topo.Chans {
			if len(n.Queues[c]) > 0 {
				busy = append(busy, c)
			}
		}
		if len(busy) == 0 {
			return
		}
		c, i := rapid.SampledFrom(busy).Draw(rt, "deliver on"), 0
		if !fifo {
			i = rapid.IntRange(0, len(n.Queues[c])-1).Draw(rt, "position")
		}
		_, _ = n.DeliverAt(c, i)
	default:
		n.Take()
	}
}

// changeReport drops a recorded message from, or adds a message to, one
// channel of one reported snapshot.
func changeReport(rt *rapid.T, tr *spec.Trace) {
	if len(tr.Recorded) == 0 {
		return
	}
	r := &tr.Recorded[rapid.IntRange(0, len(tr.Recorded)-1).Draw(rt, "changed snapshot")]
	c := rapid.SampledFrom(tr.Header.Topology.Chans).Draw(rt, "changed channel")
	chans := make(map[spec.Channel][]spec.AppMsg, len(r.Chans))
	for k, ms := range r.Chans {
		chans[k] = slices.Clone(ms)
	}
	if ms := chans[c]; len(ms) > 0 && rapid.Bool().Draw(rt, "drop") {
		i := rapid.IntRange(0, len(ms)-1).Draw(rt, "dropped")
		chans[c] = slices.Delete(ms, i, i+1)
	} else {
		chans[c] = append(ms, spec.AppMsg{Amt: rapid.Int64Range(1, 30).Draw(rt, "added amount"), Seq: rapid.Uint64Range(1, 8).Draw(rt, "added seq")})
	}
	r.Chans = chans
}

// viewStats counts the statuses the diagram showed.
type viewStats map[spec.MsgStatus]int

func (v viewStats) add(w viewStats) {
	for s, n := range w {
		v[s] += n
	}
}

func (v viewStats) String() string {
	return fmt.Sprintf("%d orphan, %d missing, %d spurious, %d recorded, %d pending messages",
		v[spec.MsgOrphan], v[spec.MsgMissing], v[spec.MsgSpurious], v[spec.MsgRecorded], v[spec.MsgPending])
}

// fataler is what checkViewsAgree needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkViewsAgree audits tr (Replay) and analyses it for the diagram
// (export.Analyze) and fails unless they agree message by message. It
// returns the statuses the diagram showed.
func checkViewsAgree(t fataler, tr spec.Trace) viewStats {
	t.Helper()
	r := Replay(tr, Options{})
	if r.Err != nil {
		t.Fatalf("audit: %v", r.Err)
	}
	a, err := export.Analyze(tr)
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	st := viewStats{}
	aborted := map[spec.SnapID]bool{}
	for _, e := range tr.Events {
		if e.Action == spec.Abort {
			aborted[e.Snap] = true
		}
	}
	for _, c := range a.Cuts {
		shown := diagramView(a, c)
		for s, ms := range shown {
			st[s] += len(ms)
		}
		if judged, ok := verdictJudged(tr, c); ok {
			if d := diffViews(shown, verdictView(t, r, c.Snap, judged)); d != "" {
				t.Fatalf("snapshot %d: the diagram and the verdict disagree:\n%s\naudit:\n%s", c.Snap, d, r)
			}
			continue
		}
		if aborted[c.Snap] {
			// An aborted snapshot never completes and no view judges
			// it: the diagram marks its messages against the partial
			// cut (a process that dropped its marker never recorded).
			continue
		}
		if faulty := len(shown[spec.MsgOrphan]) + len(shown[spec.MsgMissing]) + len(shown[spec.MsgSpurious]); faulty > 0 && r.OK() {
			t.Fatalf("snapshot %d: the diagram marks %d messages orphan, missing or spurious (%v), but the audit accepts the run", c.Snap, faulty, shown)
		}
	}
	return st
}

// verdictJudged is the recorded state the verdict judges for snapshot c
// (the trace's report, or without reports the events' own), if it judges
// c: the events complete it and the implementation claims so.
func verdictJudged(tr spec.Trace, c export.Cut) (spec.GlobalState, bool) {
	if !c.Complete {
		return spec.GlobalState{}, false
	}
	if rec := tr.RecordedStates(); rec != nil {
		g, ok := rec[c.Snap]
		return g, ok
	}
	return spec.NewCutIndex(tr.Header.Topology, tr.Events).Cut(c.Snap).Implied(), true
}

// msgKey renders a message for comparison.
func msgKey(c spec.Channel, m spec.AppMsg) string { return fmt.Sprintf("%s #%d (%d)", c, m.Seq, m.Amt) }

// diagramView is what the diagram shows of snapshot c: its messages by
// status, and the spurious ones of its recorded state.
func diagramView(a *export.Analysis, c export.Cut) map[spec.MsgStatus][]string {
	out := map[spec.MsgStatus][]string{}
	for _, m := range a.Messages {
		if st := m.Status[c.Snap]; st != "" && st != spec.MsgSpurious {
			out[st] = append(out[st], msgKey(m.Chan, spec.AppMsg{Amt: m.Amount, Seq: m.Seq}))
		}
	}
	for _, m := range c.Spurious {
		out[spec.MsgSpurious] = append(out[spec.MsgSpurious], msgKey(m.Chan, m.Msg))
	}
	return out
}

// verdictView is what the verdict says of snapshot s, whose recorded state
// judged it judged: the messages its ConsistentCut violation lists as
// orphans, those its ExactChannelState violation lists as missing or
// spurious, and the rest of judged's messages, recorded.
func verdictView(t fataler, r Report, s spec.SnapID, judged spec.GlobalState) map[spec.MsgStatus][]string {
	t.Helper()
	out := map[spec.MsgStatus][]string{}
	spurious := map[string]int{}
	for _, v := range r.Violations {
		if v.Snap != s {
			continue
		}
		if v.Property == spec.CheckCompleteClaim {
			t.Fatalf("snapshot %d is complete and claimed, yet the verdict says %s", s, v)
		}
		for _, f := range v.Msgs {
			if want := map[spec.Property][]spec.MsgStatus{spec.PropConsistentCut: {spec.MsgOrphan}, spec.PropExactChannelState: {spec.MsgMissing, spec.MsgSpurious}}[v.Property]; !slices.Contains(want, f.Status) {
				t.Fatalf("%s lists a %s message: %v", v.Property, f.Status, f)
			}
			k := msgKey(f.Chan, f.Msg)
			out[f.Status] = append(out[f.Status], k)
			if f.Status == spec.MsgSpurious {
				spurious[k]++
			}
		}
	}
	for c, ms := range judged.Chans {
		for _, m := range ms {
			if k := msgKey(c, m); spurious[k] > 0 {
				spurious[k]--
			} else {
				out[spec.MsgRecorded] = append(out[spec.MsgRecorded], k)
			}
		}
	}
	return out
}

// diffViews describes how two views differ, "" if they do not (orphans,
// which a message received twice may repeat, as sets).
func diffViews(diagram, verdict map[spec.MsgStatus][]string) string {
	var b strings.Builder
	for _, s := range []spec.MsgStatus{spec.MsgOrphan, spec.MsgMissing, spec.MsgSpurious, spec.MsgRecorded, spec.MsgPending} {
		d, v := slices.Sorted(slices.Values(diagram[s])), slices.Sorted(slices.Values(verdict[s]))
		if s == spec.MsgOrphan {
			d, v = slices.Compact(d), slices.Compact(v)
		}
		if !slices.Equal(d, v) {
			fmt.Fprintf(&b, "  %s: diagram %v, verdict %v\n", s, d, v)
		}
	}
	return b.String()
}
