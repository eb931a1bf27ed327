package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const outsiderDir = "../../traces/outsider/conforms/two-accounts"

// TestAuditOutsiderDir: a directory of node logs and the snapshots the
// implementation reported, beside them, is one run.
func TestAuditOutsiderDir(t *testing.T) {
	code, out, errs := audit(outsiderDir)
	assert.Equal(t, 0, code, errs)
	assert.Contains(t, out, "(3 outsider logs merged): conforms: 5 steps, 1 snapshot, all properties hold")
	assert.Contains(t, out, "checked on the implementation's own values: ")
	assert.Contains(t, out, "recorded local states, 2 of 2")

	code, out, errs = audit("--json", outsiderDir)
	assert.Equal(t, 0, code, errs)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, true, v["ok"])
	assert.Equal(t, "markerwave-outsider/1", v["format"])
	assert.NotEmpty(t, v["provenance"])
}

// copyDir copies the outsider example into a temp directory, with edit
// applied to each file's text.
func copyDir(t *testing.T, edit func(name, text string) string) string {
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(outsiderDir, "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(edit(filepath.Base(f), string(b))), 0o644))
	}
	return dir
}

// TestAuditOutsiderReportedSnapshotWrong: a reporting bug (the reported
// snapshot lost the message in flight) is caught from the file of
// reported snapshots beside the node logs.
func TestAuditOutsiderReportedSnapshotWrong(t *testing.T) {
	dir := copyDir(t, func(name, s string) string {
		return strings.Replace(s, `"chans":{"N1->N2":{"ids":["t1"]}}`, `"chans":{}`, 1)
	})
	code, out, _ := audit(dir)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "property: ExactChannelState")
	assert.Contains(t, out, "snapshot 0")
}

// TestAuditOutsiderMixedRuns: logs of two runs in one directory are
// named as such, exit 2.
func TestAuditOutsiderMixedRuns(t *testing.T) {
	dir := copyDir(t, func(name, s string) string {
		if name == "N2.jsonl" {
			return strings.Replace(s, `"run":"two-accounts"`, `"run":"another"`, 1)
		}
		return s
	})
	code, _, errs := audit(dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `logs of two different runs: `)
	assert.Contains(t, errs, `N2.jsonl of run "another"`)
}

// TestAuditOutsiderMalformed: a malformed outsider log exits 2 naming
// the file, the line and the field.
func TestAuditOutsiderMalformed(t *testing.T) {
	cases := map[string]struct{ from, to, want string }{
		"missing amount":   {`"id":"t1","amount":30}`, `"id":"t1"}`, `N1.jsonl: trace line 2: field "amount": missing: a send needs the amount it transfers`},
		"missing init_bal": {`,"init_bal":{"N1":100,"N2":50}`, ``, `N1.jsonl: trace line 1: header: field "init_bal": missing`},
		"bad snapshot id":  {`"snap":0}`, `"snap":{}}`, `N1.jsonl: trace line 3: field "snap": want a string or a number, got object`},
		"unknown peer":     {`"to":"N2","id"`, `"to":"N9","id"`, `N1.jsonl: trace line 2: field "to": no channel N1->N9 in the topology`},
		"duplicate id":     {`{"ev":"marker_recv"`, `{"ev":"send","to":"N2","id":"t1","amount":1}` + "\n" + `{"ev":"marker_recv"`, `field "id": "t1" sent twice on N1->N2`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := copyDir(t, func(n, s string) string {
				if n == "N1.jsonl" {
					return strings.Replace(s, c.from, c.to, 1)
				}
				return s
			})
			code, _, errs := audit(dir)
			assert.Equal(t, 2, code, errs)
			assert.Contains(t, errs, c.want)
		})
	}
}

// TestAuditOldFormatNamesFields: the bullets for the trace
// format (markerwave-trace/3): a missing header field is named, and
// snapshot id 0 is explained.
func TestAuditOldFormatNamesFields(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../traces/conforms/two-account-transfer.jsonl")
	require.NoError(t, err)
	noInit := strings.Replace(string(b), `"init_bal":{"P1":100,"P2":50},`, ``, 1)
	p := filepath.Join(dir, "t.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(noInit), 0o644))
	code, _, errs := audit(p)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `field "init_bal": missing`)

	zero := strings.ReplaceAll(string(b), `"snap":1,`, `"snap":0,`)
	require.NoError(t, os.WriteFile(p, []byte(zero), 0o644))
	code, _, errs = audit(p)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `field "snap" missing or 0: markerwave-trace/3 numbers snapshots from 1; the outsider format, markerwave-outsider/1, takes any id, 0 too`)
}

// TestAuditOutsiderPartsInNodeLogs: each node reports its own part of
// the snapshot in its own log; the parts are checked together against
// the merged run, and a wrong part is caught.
func TestAuditOutsiderPartsInNodeLogs(t *testing.T) {
	parts := map[string]string{
		"N1.jsonl": `{"snapshot":{"snap":0,"procs":{"N1":{"bal":70}}}}`,
		"N2.jsonl": `{"snapshot":{"snap":0,"initiator":"N2","procs":{"N2":{"bal":50}},"chans":{"N1->N2":{"ids":["t1"]}}}}`,
	}
	for _, bad := range []bool{false, true} {
		dir := copyDir(t, func(name, s string) string {
			p := parts[name]
			if bad && name == "N1.jsonl" {
				p = strings.Replace(p, `"bal":70`, `"bal":100`, 1)
			}
			return s + p + "\n"
		})
		require.NoError(t, os.Remove(filepath.Join(dir, "snapshots.jsonl")))
		code, out, errs := audit(dir)
		if !bad {
			assert.Equal(t, 0, code, out+errs)
			assert.Contains(t, out, "(2 outsider logs merged): conforms: 5 steps, 1 snapshot")
			continue
		}
		assert.Equal(t, 1, code, out+errs)
		assert.Contains(t, out, "check:    RecordedState")
		assert.Contains(t, out, "proc N1: [bal=70 sent=1 rcvd=0] vs [bal=100 sent=1 rcvd=0]")
	}
}

// TestAuditOutsiderNamesMessagesByID: the bundled rejected run
// diverges naming its messages by the implementation's ids, in the text
// and in --json.
func TestAuditOutsiderNamesMessagesByID(t *testing.T) {
	const dir = "../../traces/outsider/rejects/Message-delivered-out-of-order"
	code, out, errs := audit(dir)
	assert.Equal(t, 1, code, errs)
	assert.Contains(t, out, `diverges at step 3 (`+filepath.Join(dir, "N2.jsonl")+`: trace line 2): RecvApp(N1, N2) 20 (id "t2")`)
	assert.Contains(t, out, "  model:    30 (id \"t1\")\n  reported: 20 (id \"t2\")\n")

	code, out, errs = audit("--json", dir)
	assert.Equal(t, 1, code, errs)
	var v struct {
		Property   string
		Divergence struct{ Action, Expected, Reported string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, "Message", v.Property)
	assert.Equal(t, `RecvApp(N1, N2) 20 (id "t2")`, v.Divergence.Action)
	assert.Equal(t, `30 (id "t1")`, v.Divergence.Expected)
	assert.Equal(t, `20 (id "t2")`, v.Divergence.Reported)
}

const ring3Dir = "../../traces/outsider/conforms/ring3"

// ring3 copies the three-node example (A->B->C->A) into a temp
// directory, each file's lines replaced by edits[file] where given (nil:
// the file left out).
func ring3(t *testing.T, edits map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(ring3Dir, "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		lines, edited := edits[filepath.Base(f)]
		if edited && lines == nil {
			continue
		}
		if edited {
			header, _, _ := strings.Cut(string(b), "\n")
			b = []byte(strings.Join(append([]string{header}, lines...), "\n") + "\n")
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644))
	}
	return dir
}

// TestAuditOutsiderOneNodeLog: one node's own log alone (its header
// names its node) is refused, exit 2, naming the nodes whose logs are
// missing; it was a false Enabled violation (N1.jsonl) or a receive
// "never sent" (N2.jsonl).
func TestAuditOutsiderOneNodeLog(t *testing.T) {
	cases := map[string]string{
		filepath.Join(outsiderDir, "N1.jsonl"): `the node logs given are only N1's (` + filepath.Join(outsiderDir, "N1.jsonl") + `), and N2 of the topology has none`,
		filepath.Join(outsiderDir, "N2.jsonl"): `the node logs given are only N2's (` + filepath.Join(outsiderDir, "N2.jsonl") + `), and N1 of the topology has none`,
		filepath.Join(ring3Dir, "C.jsonl"):     `and A and B of the topology have none`,
	}
	for f, want := range cases {
		code, out, errs := audit(f)
		assert.Equal(t, 2, code, f+": "+out+errs)
		assert.Contains(t, errs, want, f)
		assert.Contains(t, errs, "give the directory of the run's node logs", f)
	}
	dir := ring3(t, map[string][]string{"B.jsonl": nil})
	code, _, errs := audit(dir)
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "and B of the topology has none")
}

// TestAuditOutsiderRecordLineVsReport: a record line's state that
// disagrees with the snapshot report is the node's own evidence of what
// it recorded: wrong, it is a RecordedState violation (exit 1) as it is
// without the report, and the note names the fields that differ.
func TestAuditOutsiderRecordLineVsReport(t *testing.T) {
	cases := map[string]struct {
		record string
		want   []string
	}{
		"balance": {`{"ev":"record","snap":"s1","state":{"bal":64}}`, []string{
			`note: C logged its recorded state of snapshot "s1" as bal=64 (`, `C.jsonl: trace line 4), but reported bal=65 (`, `snapshots.jsonl: trace line 2)`}},
		"counter": {`{"ev":"record","snap":"s1","state":{"bal":65,"sent":3}}`, []string{
			`note: C logged its recorded state of snapshot "s1" as bal=65 sent=3 (`, `but reported bal=65 (sent not given) (`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := ring3(t, map[string][]string{"C.jsonl": {
				`{"ev":"send","to":"A","id":"c1","amount":5}`,
				`{"ev":"marker_recv","from":"B","snap":"s1"}`,
				c.record,
				`{"ev":"marker_send","to":"A","snap":"s1"}`}})
			code, out, errs := audit(dir)
			assert.Equal(t, 1, code, out+errs)
			assert.Contains(t, out, "check:    RecordedState")
			for _, w := range c.want {
				assert.Contains(t, out, w)
			}
		})
	}
}

// TestAuditOutsiderInitiatorNamedTwice: a snapshot reported over
// several lines that name two initiators is bad input, exit 2, naming
// both lines that name one (not the report's first line, which names
// none).
func TestAuditOutsiderInitiatorNamedTwice(t *testing.T) {
	dir := ring3(t, map[string][]string{"snapshots.jsonl": {
		`{"snapshot":{"snap":"s1","procs":{"A":{"bal":90}},"chans":{"C->A":{"ids":["c1"]}}}}`,
		`{"snapshot":{"snap":"s1","initiator":"A","procs":{"B":{"bal":60}}}}`,
		`{"snapshot":{"snap":"s1","initiator":"B","procs":{"C":{"bal":65}}}}`}})
	code, out, errs := audit(dir)
	assert.Equal(t, 2, code, out+errs)
	assert.Contains(t, errs, `snapshots.jsonl: trace line 4: field "snapshot.initiator": B, but `)
	assert.Contains(t, errs, `snapshots.jsonl: trace line 3 says A`)
}

// TestAuditOutsiderForgottenMarkerSend: a marker whose receipt is logged
// and whose marker_send line is missing (in a run that logs them) is
// bad input, exit 2, naming the sender's line and the receiver's; it was
// a false SnapshotsComplete violation. A node that logs no marker event
// at all is partial (its markers derived), not a marker never sent.
func TestAuditOutsiderForgottenMarkerSend(t *testing.T) {
	dir := ring3(t, map[string][]string{"B.jsonl": {
		`{"ev":"recv","from":"A","id":"m1","amount":10}`,
		`{"ev":"marker_recv","from":"A","snap":"s1"}`,
		`{"ev":"record","snap":"s1","state":{"bal":60}}`}})
	code, out, errs := audit(dir)
	assert.Equal(t, 2, code, out+errs)
	assert.Contains(t, errs, `B.jsonl: trace line 3: B logs no marker_send of snapshot "s1" on B->C after recording it here (its step 2), but C logs receiving that marker (`)
	assert.Contains(t, errs, `C.jsonl: trace line 3): the log lacks the marker_send line`)

	dir = ring3(t, map[string][]string{"B.jsonl": {
		`{"ev":"recv","from":"A","id":"m1","amount":10}`,
		`{"ev":"record","snap":"s1","state":{"bal":60}}`}})
	code, out, errs = audit(dir)
	assert.Equal(t, 0, code, out+errs)
	assert.Contains(t, out, "marker sends, 2 of 3, the rest derived")
}

// TestAuditOutsiderMergedNamesFile: a divergence and a note of a run
// merged from a directory name the node's log and the line there, in
// the text and in --json ("file"); they named a bare "trace line 2",
// which three of the four files have.
func TestAuditOutsiderMergedNamesFile(t *testing.T) {
	dir := ring3(t, map[string][]string{"B.jsonl": {
		`{"ev":"marker_recv","from":"A","snap":"s1"}`,
		`{"ev":"recv","from":"A","id":"m1","amount":10}`,
		`{"ev":"record","snap":"s1","state":{"bal":60}}`,
		`{"ev":"marker_send","to":"C","snap":"s1"}`}})
	b := filepath.Join(dir, "B.jsonl")
	code, out, errs := audit(dir)
	assert.Equal(t, 1, code, out+errs)
	assert.Contains(t, out, `diverges at step 3 (`+b+`: trace line 2): RecvMarker(A, B) [snap "s1"]`)
	assert.Contains(t, out, `note: B recorded snapshot "s1" at its step 3 (`+b+`: trace line 4), after its first marker of it (step 1, `+b+`: trace line 2)`)

	code, out, errs = audit("--json", dir)
	assert.Equal(t, 1, code, errs)
	var v struct {
		Divergence struct {
			Step, Line int
			File       string
		}
		Notes []string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, 3, v.Divergence.Step)
	assert.Equal(t, 2, v.Divergence.Line)
	assert.Equal(t, b, v.Divergence.File)
	require.Len(t, v.Notes, 1)
	assert.Contains(t, v.Notes[0], b+": trace line 4")

	// A divergence the derivation finds (a marker sent before recording).
	dir = ring3(t, map[string][]string{"A.jsonl": {
		`{"ev":"send","to":"B","id":"m1","amount":10}`,
		`{"ev":"marker_send","to":"B","snap":"s1"}`,
		`{"ev":"record","snap":"s1","state":{"bal":90}}`,
		`{"ev":"recv","from":"C","id":"c1","amount":5}`,
		`{"ev":"marker_recv","from":"C","snap":"s1"}`}})
	code, out, errs = audit("--json", dir)
	assert.Equal(t, 1, code, errs)
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, 3, v.Divergence.Line)
	assert.Equal(t, filepath.Join(dir, "A.jsonl"), v.Divergence.File)
}

// TestAuditOutsiderStrayFormat: a file without the outsider header (no
// format, or another) beside a directory's outsider logs is refused
// once, exit 2, naming it and its header; it was audited as a run of
// its own, and the logs without it reported incomplete: two unrelated
// errors.
func TestAuditOutsiderStrayFormat(t *testing.T) {
	for name, to := range map[string]string{"none": ``, "another": `"format":"markerwave-trace/3",`} {
		t.Run(name, func(t *testing.T) {
			dir := ring3(t, nil)
			b := filepath.Join(dir, "B.jsonl")
			text, err := os.ReadFile(b)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(b, []byte(strings.Replace(string(text), `"format":"markerwave-outsider/1",`, to, 1)), 0o644))
			for _, args := range [][]string{{dir}, {"--json", dir}} {
				code, out, errs := audit(args...)
				assert.Equal(t, 2, code, out+errs)
				assert.Equal(t, 1, strings.Count(errs, "markerwave audit: "), errs)
				assert.Contains(t, errs, b+` beside its outsider logs (`)
				assert.Contains(t, errs, `has no "format":"markerwave-outsider/1" header, so the run is not audited: `+b+`: trace line 1: header: field "format": `)
				assert.NotContains(t, errs, "incomplete run")
			}
		})
	}
}

// TestAuditOutsiderGivenClocks: a given vector clock is checked against
// the derivation's count of the logged steps and the clocks it depends
// on, and one that fails is bad input, exit 2, naming the file, the line
// and the entry. A receive's clock below its send's was a note only, exit
// 0, and not even that when the sender gave no clock; a wild first clock
// passed.
func TestAuditOutsiderGivenClocks(t *testing.T) {
	a := []string{
		`{"ev":"send","to":"B","id":"m1","amount":10,"vc":[1,0,0]}`,
		`{"ev":"record","snap":"s1","state":{"bal":90}}`,
		`{"ev":"marker_send","to":"B","snap":"s1"}`,
		`{"ev":"recv","from":"C","id":"c1","amount":5}`,
		`{"ev":"marker_recv","from":"C","snap":"s1"}`}
	b := func(vc string) []string {
		return []string{
			`{"ev":"recv","from":"A","id":"m1","amount":10,"vc":` + vc + `}`,
			`{"ev":"marker_recv","from":"A","snap":"s1"}`,
			`{"ev":"record","snap":"s1","state":{"bal":60}}`,
			`{"ev":"marker_send","to":"C","snap":"s1"}`}
	}
	cases := map[string]struct {
		edits map[string][]string
		want  string
	}{
		"receive below its send": {map[string][]string{"A.jsonl": a, "B.jsonl": b("[0,1,0]")},
			`B.jsonl: trace line 2: field "vc": [0 1 0]: entry A is 0, but it must cover [1 0 0], the clock of the step it receives from (`},
		"receive below an unclocked send": {map[string][]string{"B.jsonl": b("[0,1,0]")},
			`B.jsonl: trace line 2: field "vc": [0 1 0]: entry A is 0, but it must cover [1 0 0], the clock of the step it receives from (`},
		"wild first clock": {map[string][]string{"A.jsonl": append([]string{`{"ev":"send","to":"B","id":"m1","amount":10,"vc":[7,9,9]}`}, a[1:]...)},
			`A.jsonl: trace line 2: field "vc": [7 9 9]: entry A (its own) is 7, but this is A's step 1 of the incarnation`},
		"another's entry past its steps": {map[string][]string{"A.jsonl": append([]string{`{"ev":"send","to":"B","id":"m1","amount":10,"vc":[1,9,0]}`}, a[1:]...)},
			`A.jsonl: trace line 2: field "vc": [1 9 0]: entry B is 9, but B takes 2 steps in the incarnation`},
		"a clock going back": {map[string][]string{"B.jsonl": append(b("[1,1,0]")[:3], `{"ev":"marker_send","to":"C","snap":"s1","vc":[0,2,0]}`)},
			`B.jsonl: trace line 5: field "vc": [0 2 0]: entry A is 0, below the 1 of B's clock before (`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := ring3(t, c.edits)
			code, out, errs := audit(dir)
			assert.Equal(t, 2, code, out+errs)
			assert.Contains(t, errs, c.want)
		})
	}
	// Clocks that count as the derivation does conform.
	dir := ring3(t, map[string][]string{"A.jsonl": a, "B.jsonl": append(b("[1,1,0]")[:3], `{"ev":"marker_send","to":"C","snap":"s1","vc":[2,2,0]}`)})
	code, out, errs := audit(dir)
	assert.Equal(t, 0, code, out+errs)
}
