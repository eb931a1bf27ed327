package conformance

import (
	"path/filepath"
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
