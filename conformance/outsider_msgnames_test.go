package conformance

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// TestOutsiderNamesMessagesByID: the bundled rejected outsider run (N2
// delivers N1's t2 before t1) diverges naming both messages by the
// implementation's ids, in the action, the model's side and the
// reported one; the derived seqs (30#1, 20#2) appear nowhere.
func TestOutsiderNamesMessagesByID(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "traces", "outsider", "rejects", "Message-delivered-out-of-order", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	run, err := ReadOutsiderFiles(files)
	require.NoError(t, err)
	rep, err := AuditOutsider(run, Options{})
	require.NoError(t, err)
	assert.Equal(t, spec.CheckMessage, rep.Property(), "the folder's name says Message")
	d := rep.Divergence
	require.NotNil(t, d)
	assert.Equal(t, `RecvApp(N1, N2) 20 (id "t2")`, d.Action)
	assert.Equal(t, `30 (id "t1")`, d.Expected)
	assert.Equal(t, `20 (id "t2")`, d.Reported)
	assert.NotContains(t, rep.String(), "#")
}

// A violation's detail names the messages by id too, each on the channel
// its text gives (before it, or after it in "on C"), and a log without
// ids keeps amount#seq: the orphan trace, converted to the outsider
// format with ids m1, m2, ... and without.
func TestOutsiderViolationsNameMessagesByID(t *testing.T) {
	tr, _, err := ReadTraceFile(filepath.Join("..", "traces", "rejects", "ConsistentCut-orphan.jsonl"))
	require.NoError(t, err)
	l := ToOutsider(tr, false)
	for i, e := range l.Events {
		if e.ID != nil {
			id := spec.ObsID("m" + string(*e.ID))
			l.Events[i].ID = &id
		}
	}
	rep := auditLog(t, l)
	out := rep.String()
	assert.Contains(t, out, `P2 received 30 (id "m1") on P1->P2 before recording, but P1 sent it after recording: an orphan`)
	assert.Contains(t, out, `pre-recording step RecvApp(P1, P2) 30 (id "m1") of P2 (its step 1) is not enabled: P1->P2 is empty: 30 (id "m1") was not sent yet`)
	assert.Contains(t, out, `model:    P1->P2 = <<Marker(1), 30 (id "m1")>>`)
	assert.NotContains(t, out, "30#1")

	stripped := auditLog(t, ToOutsider(tr, true)).String()
	assert.Contains(t, stripped, "P2 received 30#1 on P1->P2 before recording", "no ids given: amount#seq")
	assert.NotContains(t, stripped, "(id ")
}

// auditLog audits one outsider log, written and read back.
func auditLog(t *testing.T, l spec.OutsiderLog) OutsiderReport {
	t.Helper()
	rep, err := auditOutsiderLog(l)
	require.NoError(t, err)
	return rep
}

// A log built in memory (no line numbers) is audited, not a panic.
func TestOutsiderRunWithoutLines(t *testing.T) {
	tr, _, err := ReadTraceFile(filepath.Join("..", "traces", "conforms", "token-ring.jsonl"))
	require.NoError(t, err)
	run, err := NewOutsiderRun([]spec.OutsiderLog{ToOutsider(tr, false)}, []string{"mem"})
	require.NoError(t, err)
	rep, err := AuditOutsider(run, Options{})
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.String())
}

// msgNamer's forms: SendApp's "amount) #seq", a channel's "C #seq", a
// message on the channel after it, before it, or the default one; an
// id it does not know is left as it was.
func TestMsgNamerForms(t *testing.T) {
	a, b := spec.Channel{From: "N1", To: "N2"}, spec.Channel{From: "N2", To: "N1"}
	m := msgNamer{names: map[spec.Channel]map[uint64]spec.ObsID{a: {1: "x", 2: "7"}, b: {1: "y"}}, dflt: a}
	for in, want := range map[string]string{
		"SendApp(N1, N2, 30) #2":                    `SendApp(N1, N2, 30) (id 7)`,
		"message N2->N1 #1 received":                `message N2->N1 (id "y") received`,
		"5#1 on N2->N1, then 30#1":                  `5 (id "y") on N2->N1, then 30 (id "x")`,
		"the head of N2->N1 is 5#1, not 6#2":        `the head of N2->N1 is 5 (id "y"), not 6#2`,
		"RecvApp(N2, N1) 5#1 before 30#1 on N1->N2": `RecvApp(N2, N1) 5 (id "y") before 30 (id "x") on N1->N2`,
		"30#3": "30#3",
	} {
		assert.Equal(t, want, m.name(in), in)
	}
	assert.Equal(t, "30#1", msgNamer{}.name("30#1"), "no ids: as it was")
	assert.False(t, strings.Contains(m.name("event 12"), "id"))
}

// TestOutsiderUnsentMessages: a message no send of the log gives is one
// mistake whether the log names it by id or not, a violation the replay
// judges (not bad input), and the report names it as the log does (its
// id or amount, its line), never by the model's zero amount or seq.
func TestOutsiderUnsentMessages(t *testing.T) {
	const head = `{"node":"N1","ev":"record","snap":1,"state":{"bal":100}}`
	rest := []string{
		`{"node":"N1","ev":"marker_send","to":"N2","snap":1}`,
		`{"node":"N2","ev":"marker_recv","from":"N1","snap":1}`,
		`{"node":"N2","ev":"record","snap":1,"state":{"bal":%d}}`,
		`{"node":"N2","ev":"marker_send","to":"N3","snap":1}`,
		`{"node":"N3","ev":"marker_recv","from":"N2","snap":1}`,
		`{"node":"N3","ev":"record","snap":1,"state":{"bal":20}}`,
		`{"node":"N3","ev":"marker_send","to":"N1","snap":1}`,
		`{"node":"N1","ev":"marker_recv","from":"N3","snap":1}`,
	}
	run := func(recv, report string, bal int) []string {
		lines := []string{ring(`,"drained":true`)}
		if recv != "" {
			lines = append(lines, recv)
		}
		lines = append(lines, head)
		for _, l := range rest {
			if strings.Contains(l, "%d") {
				l = fmt.Sprintf(l, bal)
			}
			lines = append(lines, l)
		}
		if report != "" {
			lines = append(lines, report)
		}
		return lines
	}
	cases := []struct {
		name  string
		lines []string
		check spec.Property // the divergence's
		want  []string
	}{
		{"received by id", run(`{"node":"N2","ev":"recv","from":"N1","id":"zz","amount":10}`, "", 60), spec.CheckEnabled,
			[]string{`RecvApp(N1, N2) 10 (id "zz", never sent: run.jsonl: trace line 2)`, `N2 received message "zz" on N1->N2 at its step 1 (run.jsonl: trace line 2), but N1 never sent a message with that id on it`}},
		{"received with an amount", run(`{"node":"N2","ev":"recv","from":"N1","amount":10}`, "", 60), spec.CheckEnabled,
			[]string{`RecvApp(N1, N2) 10 (never sent: run.jsonl: trace line 2)`}},
		{"received bare", run(`{"node":"N2","ev":"recv","from":"N1"}`, "", 50), spec.CheckEnabled,
			[]string{`RecvApp(N1, N2) a message (never sent: run.jsonl: trace line 2)`, `RecvApp("N1","N2") is not enabled: N1 never sent on N1->N2 the message N2 received`}},
		{"recorded by id", run("", `{"snapshot":{"snap":1,"procs":{"N1":{"bal":100},"N2":{"bal":50},"N3":{"bal":20}},"chans":{"N3->N1":{"ids":["c9"]}}}}`, 50), spec.CheckRecordedState,
			[]string{`N3->N1 = <<message "c9" (never sent: run.jsonl: trace line 11)>>`}},
		{"recorded by amount", run("", `{"snapshot":{"snap":1,"procs":{"N1":{"bal":100},"N2":{"bal":50},"N3":{"bal":20}},"chans":{"N3->N1":{"amounts":[6]}}}}`, 50), spec.CheckRecordedState,
			[]string{`N3->N1 = <<6 (matching no message sent: run.jsonl: trace line 11)>>`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := AuditOutsider(outsiderRun(t, c.lines...), Options{})
			if err != nil {
				t.Fatalf("bad input, want a violation: %v", err)
			}
			out := rep.String()
			if rep.OK() || rep.Divergence == nil || rep.Divergence.Property != c.check {
				t.Fatalf("want a divergence (%s):\n%s", c.check, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the report lacks %q:\n%s", w, out)
				}
			}
			if m := regexp.MustCompile(`\b-?\d+#\d+\b|<<0#0>>`).FindString(out); m != "" {
				t.Errorf("the report names a message by the model's amount#seq %q:\n%s", m, out)
			}
		})
	}
}
