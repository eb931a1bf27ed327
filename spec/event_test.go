package spec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoBankTrace is the article's transfer: P1 sends $30, initiates, P2
// receives the marker then the transfer... in per-process logs with clocks.
func twoBankLogs() (*Topology, map[ProcID][]Event) {
	top := Complete(2)
	p1 := []Event{
		{Proc: "P1", Seq: 1, Action: SendApp, From: "P1", To: "P2", Amount: 30, Msg: 1, After: LocalState{Bal: 70, Sent: 1}, VC: []uint64{1, 0}},
		{Proc: "P1", Seq: 2, Action: Initiate, Snap: 1, After: LocalState{Bal: 70, Sent: 1}, VC: []uint64{2, 0}},
	}
	p2 := []Event{
		{Proc: "P2", Seq: 1, Action: RecvApp, From: "P1", To: "P2", Amount: 30, Msg: 1, After: LocalState{Bal: 80, Rcvd: 1}, VC: []uint64{1, 1}},
		{Proc: "P2", Seq: 2, Action: RecvMarker, From: "P1", To: "P2", Snap: 1, First: true, After: LocalState{Bal: 80, Rcvd: 1}, VC: []uint64{2, 2}},
	}
	return top, map[ProcID][]Event{"P1": p1, "P2": p2}
}

func TestMergeCausalPutsSendsBeforeReceives(t *testing.T) {
	top, logs := twoBankLogs()
	merged, err := MergeCausal(top, logs)
	require.NoError(t, err)
	var got []string
	for _, e := range merged {
		got = append(got, e.String())
	}
	assert.Equal(t, []string{
		"SendApp(P1, P2, 30) #1",
		"Initiate(1) at P1",
		"RecvApp(P1, P2) 30#1",
		"RecvMarker(P1, P2) [snap 1]",
	}, got)
}

func TestMergeCausalRejectsBadClocks(t *testing.T) {
	top, logs := twoBankLogs()
	logs["P2"][0].VC = []uint64{5, 1} // depends on P1 events that do not exist
	_, err := MergeCausal(top, logs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "waits for events no log holds")

	top, logs = twoBankLogs()
	logs["P1"][1].VC = []uint64{3, 0}
	_, err = MergeCausal(top, logs)
	assert.ErrorContains(t, err, "does not count it")

	_, err = MergeCausal(top, map[ProcID][]Event{"P9": nil})
	assert.ErrorContains(t, err, `unknown process "P9"`)
}

func TestTraceRoundTrip(t *testing.T) {
	top, logs := twoBankLogs()
	merged, err := MergeCausal(top, logs)
	require.NoError(t, err)
	rec := NewRecordedSnapshot(1, "P1", GlobalState{
		Procs: map[ProcID]LocalState{"P1": {Bal: 70, Sent: 1}, "P2": {Bal: 50}},
		Chans: map[Channel][]AppMsg{{"P1", "P2"}: {{Amt: 30, Seq: 1}}, {"P2", "P1"}: nil},
	}, map[Channel]ChanCut{{"P1", "P2"}: {Sent: 1, Got: 0}, {"P2", "P1"}: {}})
	tr := Trace{Header: Header{Topology: top, InitBal: map[ProcID]int64{"P1": 100, "P2": 50}, Snaps: map[SnapID]ProcID{1: "P1"}, Drained: true},
		Events: merged, Recorded: []RecordedSnapshot{rec}}
	var buf bytes.Buffer
	require.NoError(t, WriteTrace(&buf, tr))
	text := buf.String()
	assert.Contains(t, text, `"drained":true`)
	assert.Contains(t, text, `{"recorded":{"snap":1,"initiator":"P1","procs":{"P1":{"bal":70,"sent":1,"rcvd":0},"P2":{"bal":50,"sent":0,"rcvd":0}},"chans":{"P1->P2":{"msgs":[{"amt":30,"seq":1}],"sent":1,"got":0},"P2->P1":{"msgs":[],"sent":0,"got":0}}}}`)
	back, lines, err := ReadTraceLines(&buf)
	require.NoError(t, err)
	assert.Equal(t, TraceFormat, back.Header.Format)
	assert.True(t, back.Header.Drained)
	assert.Equal(t, tr.Header.InitBal, back.Header.InitBal)
	assert.Equal(t, top.Chans, back.Header.Topology.Chans)
	assert.Equal(t, merged, back.Events)
	assert.Equal(t, []int{2, 3, 4, 5}, lines.Events)
	assert.Equal(t, []int{6}, lines.Recorded)
	require.Len(t, back.Recorded, 1)
	assert.Empty(t, rec.State().Diff(back.Recorded[0].State()))
	assert.Equal(t, "P1", string(back.Recorded[0].Initiator))
	assert.Equal(t, rec.Cut, back.Recorded[0].Cut)
	assert.Equal(t, map[SnapID]GlobalState{1: back.Recorded[0].State()}, back.RecordedStates())
	assert.Nil(t, Trace{}.RecordedStates(), "no recorded lines: nil, derive them")
}

// Recorded snapshots may come anywhere after the header; they are told
// from events strictly and validated against the topology.
func TestReadTraceRecorded(t *testing.T) {
	header := `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]},"init_bal":{"P1":100,"P2":50},"snaps":{"1":"P1"}}`
	ev := `{"proc":"P1","seq":1,"action":"SendApp","from":"P1","to":"P2","amount":30,"msg":1,"after":{"bal":70,"sent":1,"rcvd":0},"vc":[1,0]}`
	rec := `{"recorded":{"snap":1,"initiator":"P1","procs":{"P1":{"bal":70,"sent":1,"rcvd":0},"P2":{"bal":50,"sent":0,"rcvd":0}},"chans":{"P1->P2":{"msgs":[{"amt":30,"seq":1}],"sent":1,"got":0},"P2->P1":{"msgs":[],"sent":0,"got":0}}}}`
	tr, lines, err := ReadTraceLines(strings.NewReader(header + "\n" + rec + "\n\n" + ev + "\n"))
	require.NoError(t, err)
	assert.Len(t, tr.Events, 1)
	assert.Equal(t, []int{4}, lines.Events)
	assert.Equal(t, []int{2}, lines.Recorded)
	assert.Equal(t, []AppMsg{{Amt: 30, Seq: 1}}, tr.Recorded[0].Chans[Channel{"P1", "P2"}])
	_, err = ReadTrace(strings.NewReader(header + "\n" + strings.Replace(rec, `{"recorded":`, ` { "recorded" :`, 1)))
	assert.NoError(t, err, "space before the key")

	cases := map[string]string{
		rec + "\n" + rec: "trace line 3: snapshot 1 recorded twice (also line 2)",
		strings.Replace(rec, `"P1->P2"`, `"P1->P3"`, 1):                                                   "trace line 2: recorded snapshot: snapshot 1: unknown channel P1->P3",
		strings.Replace(rec, `"P1->P2"`, `"P1P2"`, 1):                                                     `trace line 2: recorded snapshot: channel key "P1P2"`,
		strings.Replace(rec, `"P2":{"bal":50`, `"P9":{"bal":50`, 1):                                       `trace line 2: recorded snapshot: snapshot 1: unknown process "P9"`,
		strings.Replace(rec, `,"P2":{"bal":50,"sent":0,"rcvd":0}`, ``, 1):                                 "trace line 2: recorded snapshot: snapshot 1: no recorded state for P2",
		strings.Replace(rec, `"initiator":"P1"`, `"initiator":"P7"`, 1):                                   `trace line 2: recorded snapshot: snapshot 1: unknown initiator "P7"`,
		strings.Replace(rec, `"initiator":"P1"`, `"initiator":"P2"`, 1):                                   "trace line 2: snapshot 1 recorded with initiator P2, the header's snaps say P1",
		strings.Replace(rec, `"snap":1`, `"snap":0`, 1):                                                   "trace line 2: recorded snapshot: snapshot id 0",
		strings.Replace(rec, `"snap":1`, `"snap":1,"bogus":2`, 1):                                         `trace line 2: recorded snapshot: unknown field "bogus"`,
		strings.Replace(rec, `}}}}`, `}}},"proc":"P1"}`, 1):                                               `trace line 2: recorded snapshot: unknown field "proc"`,
		strings.Replace(rec, `"sent":1,"got":0`, `"sent":1,"got":-1`, 1):                                  "trace line 2: recorded snapshot: channel P1->P2: negative cut seq (sent 1, got -1)",
		strings.Replace(rec, `,"sent":1,"got":0`, `,"sent":1`, 1):                                         `trace line 2: recorded snapshot: channel P1->P2: want its cut seqs "sent" and "got"`,
		strings.Replace(rec, `,"P2->P1":{"msgs":[],"sent":0,"got":0}`, ``, 1):                             "trace line 2: recorded snapshot: snapshot 1: channel P2->P1 has no cut seqs (sent, got)",
		strings.Replace(rec, `[{"amt":30,"seq":1}]`, `[{"amt":30,"seq":1}],"lost":1`, 1):                  `trace line 2: recorded snapshot: unknown field "lost"`,
		strings.Replace(rec, `{"msgs":[{"amt":30,"seq":1}],"sent":1,"got":0}`, `[{"amt":30,"seq":1}]`, 1): `trace line 2: recorded snapshot: field "chans": want an object, got array`,
		`{"recorded":null}`: "trace line 2: recorded snapshot is null",
		strings.Replace(ev, `"vc":[1,0]`, `"vc":[1,0],"recorded":{}`, 1): `trace line 2: unknown field "recorded"`,
		ev + " {}": "trace line 2: trailing data",
	}
	for in, want := range cases {
		_, err := ReadTrace(strings.NewReader(header + "\n" + in + "\n"))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
}

// CutProblems: the recorded messages must be exactly Got+1 .. Sent; a
// receiver that got more than its sender sent is an orphan.
func TestRecordedCutProblems(t *testing.T) {
	top, _ := twoBankLogs()
	c12, c21 := Channel{"P1", "P2"}, Channel{"P2", "P1"}
	mk := func(ms []AppMsg, k12 ChanCut) RecordedSnapshot {
		return NewRecordedSnapshot(1, "P1", GlobalState{Procs: map[ProcID]LocalState{"P1": {}, "P2": {}}, Chans: map[Channel][]AppMsg{c12: ms}},
			map[Channel]ChanCut{c12: k12, c21: {}})
	}
	o, x := mk([]AppMsg{{30, 2}, {10, 3}}, ChanCut{Sent: 3, Got: 1}).CutProblems(top)
	assert.Empty(t, o)
	assert.Empty(t, x)
	_, x = mk(nil, ChanCut{Sent: 1, Got: 0}).CutProblems(top)
	assert.Equal(t, []string{"P1->P2 recorded <<>> (cut: sent 1, got 0): 0 messages recorded, but 1 were in flight across the cut (seq 1)"}, x)
	_, x = mk([]AppMsg{{30, 1}}, ChanCut{Sent: 2, Got: 0}).CutProblems(top)
	assert.Len(t, x, 1, "a cut seq too late")
	_, x = mk([]AppMsg{{30, 2}}, ChanCut{Sent: 2, Got: 0}).CutProblems(top)
	assert.Len(t, x, 1, "wrong seqs")
	o, x = mk(nil, ChanCut{Sent: 0, Got: 1}).CutProblems(top)
	assert.Equal(t, []string{"P1->P2 (cut: sent 0, got 1): orphan messages: P2 received up to seq 1 when it recorded, but P1 had sent only up to seq 0 when it recorded"}, o)
	assert.Empty(t, x)
	require.NoError(t, mk(nil, ChanCut{}).Validate(top))
	r := mk(nil, ChanCut{})
	delete(r.Cut, c21)
	assert.EqualError(t, r.Validate(top), "snapshot 1: channel P2->P1 has no cut seqs (sent, got)")
}

func TestReadTraceErrorsNameTheLine(t *testing.T) {
	header := `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]},"init_bal":{"P1":100,"P2":50}}`
	ok := `{"proc":"P1","seq":1,"action":"SendApp","from":"P1","to":"P2","amount":30,"msg":1,"after":{"bal":70,"sent":1,"rcvd":0},"vc":[1,0]}`
	cases := map[string]string{
		"":                                 "empty, no header",
		"{not json":                        "trace line 1: header",
		`{"format":"other","topology":{}}`: "trace line 1",
		header + "\n" + ok + "\n" + `{"proc":"P1"`:                                                     "trace line 3",
		header + "\n" + strings.Replace(ok, `"SendApp"`, `"Teleport"`, 1):                              `trace line 2: unknown action "Teleport"`,
		header + "\n" + strings.Replace(ok, `"to":"P2"`, `"to":"P3"`, 1):                               "trace line 2: SendApp on unknown channel P1->P3",
		header + "\n" + strings.Replace(ok, `"proc":"P1"`, `"proc":"P2"`, 1):                           "taken by P2, want P1",
		header + "\n" + strings.Replace(ok, `[1,0]`, `[1]`, 1):                                         "vector clock has 1 entries, want 2",
		header + "\n" + strings.Replace(ok, `"seq":1`, `"seq":0`, 1):                                   "seq must be >= 1",
		header + "\n" + strings.Replace(ok, `"amount":30`, `"amount":30,"bogus":1`, 1):                 `unknown field "bogus"`,
		header + "\n" + `{"proc":"P1","seq":1,"action":"Initiate","after":{"bal":1},"vc":[1,0]}`:       "Initiate without a snapshot id",
		header + "\n" + `{"proc":"P2","seq":1,"action":"RecvMarker","from":"P1","to":"P2","vc":[0,1]}`: "RecvMarker without a snapshot id",
	}
	for in, want := range cases {
		_, err := ReadTrace(strings.NewReader(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
	_, err := ReadTrace(strings.NewReader(header + "\n\n" + ok + "\n"))
	assert.NoError(t, err)
}

func TestGlobalStateDiffAndTotal(t *testing.T) {
	c := Channel{"P1", "P2"}
	g := GlobalState{Procs: map[ProcID]LocalState{"P1": {Bal: 70, Sent: 1}, "P2": {Bal: 50}}, Chans: map[Channel][]AppMsg{c: {{Amt: 30, Seq: 1}}}}
	assert.EqualValues(t, 150, g.Total())
	h := g.Clone()
	assert.True(t, g.Equal(h))
	h.Chans[c] = nil
	h.Procs["P2"] = LocalState{Bal: 80, Rcvd: 1}
	assert.Equal(t, "proc P2: [bal=50 sent=0 rcvd=0] vs [bal=80 sent=0 rcvd=1]\nchan P1->P2: <<30#1>> vs <<>>", g.Diff(h))
	assert.EqualValues(t, 150, g.Total(), "Clone is deep")
}

func TestStableCatalogue(t *testing.T) {
	cat := StableCatalogue([]ProcID{"P1", "P2"}, 2, 10)
	require.Len(t, cat, 6)
	assert.Equal(t, "Terminated", cat[0].String())
	assert.Equal(t, "Conserved", cat[1].String())
	assert.Equal(t, "RcvdAtLeast(P2, 2)", cat[5].String())
	budget := map[ProcID]int{"P1": 1, "P2": 0}
	g := GlobalState{Procs: map[ProcID]LocalState{"P1": {Sent: 1}, "P2": {Rcvd: 1}}}
	assert.True(t, cat[0].Holds(g, budget))
	g.Chans = map[Channel][]AppMsg{{"P1", "P2"}: {{Amt: 1, Seq: 1}}}
	assert.False(t, cat[0].Holds(g, budget), "a message in flight")
	assert.True(t, StablePredicate{Name: "RcvdAtLeast", Proc: "P2", K: 1}.Holds(g, budget))
	assert.True(t, StablePredicate{Name: "Conserved", Total: 1}.Holds(g, budget))
	assert.False(t, StablePredicate{Name: "Conserved", Total: 2}.Holds(g, budget))
	assert.False(t, StablePredicate{Name: "RcvdAtLeast", Proc: "P2", K: 2}.Holds(g, budget))
}

func TestVectorClock(t *testing.T) {
	a := VectorClock{1, 0, 0}
	b := a.Tick(0)
	assert.Equal(t, VectorClock{1, 0, 0}, a, "Tick copies")
	assert.Equal(t, VectorClock{2, 0, 0}, b)
	assert.Equal(t, VectorClock{2, 4, 1}, VectorClock{0, 3, 1}.Merge(VectorClock{2, 1, 0}, 1))
}

// The fault actions the implementation traces: well formed when they
// name another process of the topology (and, for Abort and DropMarker, a
// snapshot), and rendered as their TLA+ actions.
func TestFaultEventsValidate(t *testing.T) {
	top := Complete(3)
	ok := []Event{
		{Proc: "P1", Seq: 1, Action: Suspect, Peer: "P3"},
		{Proc: "P1", Seq: 2, Action: Unsuspect, Peer: "P3"},
		{Proc: "P1", Seq: 3, Action: Abort, Snap: 4, Peer: "P3"},
		{Proc: "P2", Seq: 1, Action: DropMarker, From: "P3", To: "P2", Snap: 4},
	}
	for _, e := range ok {
		if err := e.Validate(top); err != nil {
			t.Errorf("%s: %v", e, err)
		}
		if !e.Action.Valid() || !e.Action.Fault() {
			t.Errorf("%s is not a valid fault action", e.Action)
		}
	}
	if got := ok[2].String(); got != "Abort(4, P3) at P1" {
		t.Errorf("String = %q", got)
	}
	bad := map[string]Event{
		"suspects itself":    {Proc: "P1", Seq: 1, Action: Suspect, Peer: "P1"},
		"unknown peer":       {Proc: "P1", Seq: 1, Action: Abort, Snap: 1, Peer: "P9"},
		"abort without snap": {Proc: "P1", Seq: 1, Action: Abort, Peer: "P2"},
		"drop without snap":  {Proc: "P2", Seq: 1, Action: DropMarker, From: "P3", To: "P2"},
		"drop by the sender": {Proc: "P3", Seq: 1, Action: DropMarker, From: "P3", To: "P2", Snap: 1},
		"unsuspect no one":   {Proc: "P1", Seq: 1, Action: Unsuspect},
	}
	for name, e := range bad {
		if err := e.Validate(top); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, a := range []Action{SendApp, RecvApp, Initiate, RecvMarker} {
		if a.Fault() {
			t.Errorf("%s is an action of the algorithm, not of the failure handling", a)
		}
	}
}
