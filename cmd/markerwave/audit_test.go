package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

func audit(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(append([]string{"audit"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestAuditConforms(t *testing.T) {
	code, out, errs := audit("../../traces/conforms/token-ring.jsonl")
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, "conforms: 6 steps, 1 snapshot, all properties hold\n", out)
}

func TestAuditDiverges(t *testing.T) {
	code, out, _ := audit("../../traces/rejects/ConsistentCut-orphan.jsonl")
	assert.Equal(t, 1, code)
	for _, want := range []string{
		"diverges at step 3 (trace line 4): RecvApp(P1, P2) 30#1",
		"check:    Enabled",
		"model:    P1->P2 = <<Marker(1), 30#1>>",
		"violates ConsistentCut (snapshot 1): P2 received 30#1 on P1->P2 before recording, but P1 sent it after recording: an orphan",
		"property: ConsistentCut",
	} {
		assert.Contains(t, out, want)
	}
	code, out, _ = audit("../../traces/rejects/ExactChannelState-missing-message.jsonl")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "chan P1->P2: <<30#1>> vs <<>>")
	assert.Contains(t, out, "property: ExactChannelState")
}

// The recorded snapshots are the trace's own: the missing-message run
// with its recorded line taken from the conforming run conforms.
func TestAuditRecordedLines(t *testing.T) {
	good, err := os.ReadFile("../../traces/conforms/two-account-transfer.jsonl")
	require.NoError(t, err)
	bad, err := os.ReadFile("../../traces/rejects/ExactChannelState-missing-message.jsonl")
	require.NoError(t, err)
	last := func(b []byte) string {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		return lines[len(lines)-1]
	}
	require.True(t, strings.HasPrefix(last(good), `{"recorded":`))
	p := filepath.Join(t.TempDir(), "t.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(bad), last(bad), last(good), 1)), 0o644))
	code, out, errs := audit(p)
	assert.Equal(t, 0, code, out+errs)
}

// -drained demands complete snapshots of a trace that does not claim it.
func TestAuditDrainedFlag(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../traces/rejects/SnapshotsComplete-lost-marker.jsonl")
	require.NoError(t, err)
	p := filepath.Join(dir, "t.jsonl")
	require.NoError(t, os.WriteFile(p, bytes.ReplaceAll(b, []byte(`"drained":true,`), nil), 0o644))
	code, _, _ := audit(p)
	assert.Equal(t, 0, code)
	code, out, _ := audit("-drained", p)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "property: SnapshotsComplete")
}

func TestAuditMalformed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	header := `{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]},"init_bal":{"P1":1,"P2":0}}` + "\n"
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"missing file":   {[]string{filepath.Join(dir, "none.jsonl")}, "no such file"},
		"no arguments":   {nil, "markerwave audit: want at least one TRACE\nrun 'markerwave audit --help' for usage\n"},
		"empty dir":      {[]string{t.TempDir()}, "no .jsonl files in this directory"},
		"bad flag":       {[]string{"-nope", "x"}, "flag provided but not defined"},
		"bad event":      {[]string{write("e.jsonl", header+"{\"proc\":\"P1\",\"seq\":1,\"action\":\"Fly\",\"vc\":[1,0]}\n")}, "trace line 2: unknown action"},
		"bad json":       {[]string{write("j.jsonl", header+"{\n")}, "trace line 2"},
		"bad header":     {[]string{write("h.jsonl", `{"format":"other"}`+"\n")}, "trace line 1"},
		"bad constants":  {[]string{write("c.jsonl", strings.Replace(header, `,"P2":0`, ``, 1))}, `field "init_bal.P2": missing`},
		"bad recorded":   {[]string{write("r.jsonl", header+`{"recorded":{"snap":1,"initiator":"P1","procs":{"P1":{"bal":1},"P2":{"bal":0}},"chans":{"P1->P3":{"msgs":[],"sent":0,"got":0}}}}`+"\n")}, "r.jsonl: trace line 2: recorded snapshot: snapshot 1: unknown channel P1->P3"},
		"twice recorded": {[]string{write("d.jsonl", header+strings.Repeat(`{"recorded":{"snap":1,"initiator":"P1","procs":{"P1":{"bal":1},"P2":{"bal":0}},"chans":{"P1->P2":{"msgs":[],"sent":0,"got":0},"P2->P1":{"msgs":[],"sent":0,"got":0}}}}`+"\n", 2))}, "trace line 3: snapshot 1 recorded twice (also line 2)"},
		"no cut seqs":    {[]string{write("k.jsonl", header+`{"recorded":{"snap":1,"initiator":"P1","procs":{"P1":{"bal":1},"P2":{"bal":0}},"chans":{"P1->P2":{"msgs":[],"sent":0},"P2->P1":{"msgs":[],"sent":0,"got":0}}}}`+"\n")}, `k.jsonl: trace line 2: recorded snapshot: channel P1->P2: want its cut seqs "sent" and "got"`},
		"negative seq":   {[]string{write("n.jsonl", header+`{"recorded":{"snap":1,"initiator":"P1","procs":{"P1":{"bal":1},"P2":{"bal":0}},"chans":{"P1->P2":{"msgs":[],"sent":-1,"got":0},"P2->P1":{"msgs":[],"sent":0,"got":0}}}}`+"\n")}, "n.jsonl: trace line 2: recorded snapshot: channel P1->P2: negative cut seq (sent -1, got 0)"},
		"snapshots flag": {[]string{"-snapshots", "x.json", "../../traces/conforms/puzzle.jsonl"}, "flag provided but not defined: -snapshots"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := audit(tc.args...)
			assert.Equal(t, 2, code, out+errs)
			assert.Contains(t, errs, tc.want)
			assert.True(t, strings.HasPrefix(errs, "markerwave audit: "), errs)
			assert.Empty(t, out)
		})
	}
}

// auditJSONLines runs audit --json and decodes its stdout, one verdict a
// line, strictly: the shape is the documented one.
func auditJSONLines(t *testing.T, args ...string) (int, []auditJSON, string) {
	t.Helper()
	code, out, errs := audit(append([]string{"--json"}, args...)...)
	var vs []auditJSON
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var v auditJSON
		require.NoError(t, spec.DecodeStrict([]byte(l), &v), l)
		vs = append(vs, v)
	}
	return code, vs, errs
}

func TestAuditJSON(t *testing.T) {
	code, vs, errs := auditJSONLines(t, "../../traces/conforms/token-ring.jsonl")
	assert.Equal(t, 0, code, errs)
	assert.Empty(t, errs)
	assert.Equal(t, []auditJSON{{Trace: "../../traces/conforms/token-ring.jsonl", OK: true, Steps: 6, Snapshots: 1, Violations: []violationJSON{}, Incomplete: []incompleteJSON{}}}, vs)

	code, vs, errs = auditJSONLines(t, "../../traces/rejects/ConsistentCut-orphan.jsonl")
	assert.Equal(t, 1, code, errs)
	require.Len(t, vs, 1)
	v := vs[0]
	assert.False(t, v.OK)
	assert.Equal(t, spec.PropConsistentCut, v.Property)
	assert.Equal(t, 2, v.Steps)
	require.NotNil(t, v.Divergence)
	assert.Equal(t, divergenceJSON{Step: 3, Line: 4, Action: "RecvApp(P1, P2) 30#1", Check: spec.CheckEnabled,
		Detail:   `RecvApp("P1","P2") is not enabled: the head of P1->P2 is Marker(1), not an application message (chan[<<p, q>>][i].kind = "app", ChandyLamport.tla line 193)`,
		Expected: "P1->P2 = <<Marker(1), 30#1>>", Reported: "P2 received 30#1"}, *v.Divergence)
	require.NotEmpty(t, v.Violations)
	assert.Equal(t, spec.PropConsistentCut, v.Violations[0].Property)
	assert.Equal(t, float64(1), v.Violations[0].Snapshot) // decoded from JSON
	assert.Contains(t, v.Violations[0].Detail, "an orphan")

	// The raw keys, as documented in the help.
	_, out, _ := audit("--json", "../../traces/rejects/ExactChannelState-missing-message.jsonl")
	for _, key := range []string{`"trace":`, `"ok":false`, `"property":"ExactChannelState"`, `"steps":4`, `"snapshots":0`, `"divergence":{"step":5,"line":6,"action":`, `"check":"RecordedState"`, `"detail":`, `"expected":`, `"reported":`, `"diff":"chan P1->P2: <<30#1>> vs <<>>"`, `"violations":[{"property":"ExactChannelState","snapshot":1,"detail":`} {
		assert.Contains(t, out, key)
	}

	// An unreadable trace is a verdict too, with the error; exit 2.
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	code, vs, errs = auditJSONLines(t, missing)
	assert.Equal(t, 2, code)
	assert.Equal(t, []auditJSON{{Trace: missing, Error: "open " + missing + ": no such file or directory", Violations: []violationJSON{}, Incomplete: []incompleteJSON{}}}, vs)
	assert.Equal(t, "markerwave audit: open "+missing+": no such file or directory\n", errs)
}

// Several runs: one verdict each, prefixed by its path; the exit status is
// the worst: 1 if one diverges, 2 if one is unreadable.
func TestAuditSeveralRuns(t *testing.T) {
	ok, bad := "../../traces/conforms/token-ring.jsonl", "../../traces/rejects/ConsistentCut-orphan.jsonl"
	code, out, errs := audit(ok, "../../traces/conforms/puzzle.jsonl")
	assert.Equal(t, 0, code, errs)
	assert.Empty(t, errs)
	assert.Equal(t, ok+": conforms: 6 steps, 1 snapshot, all properties hold\n../../traces/conforms/puzzle.jsonl: conforms: 5 steps, 1 snapshot, all properties hold\n", out)

	code, out, errs = audit(ok, bad)
	assert.Equal(t, 1, code, errs)
	assert.Empty(t, errs)
	assert.True(t, strings.HasPrefix(out, ok+": conforms: "), out)
	assert.Contains(t, out, "\n"+bad+": diverges at step 3 (trace line 4): RecvApp(P1, P2) 30#1\n")

	missing := filepath.Join(t.TempDir(), "none.jsonl")
	code, out, errs = audit(ok, missing, bad)
	assert.Equal(t, 2, code)
	assert.Equal(t, "markerwave audit: open "+missing+": no such file or directory\n", errs)
	assert.Contains(t, out, ok+": conforms: ")
	assert.Contains(t, out, bad+": diverges at step 3")

	// A demo run's folder stands for its trace.jsonl (not its nodes/).
	dir := t.TempDir()
	b, err := os.ReadFile(ok)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace.jsonl"), b, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "nodes"), 0o755))
	code, out, errs = audit(dir)
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, "conforms: 6 steps, 1 snapshot, all properties hold\n", out)
}

// splitLogs writes trace tr as the runtime's per-node logs: dir/P.jsonl
// for each process p, with the header and p's events only.
func splitLogs(t *testing.T, tr spec.Trace) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range tr.Header.Topology.Procs {
		h := tr.Header
		h.Drained, h.Snaps, h.Source = false, nil, "markerwave runtime, node "+string(p)
		log := spec.Trace{Header: h}
		for _, e := range tr.Events {
			if e.Proc == p {
				log.Events = append(log.Events, e)
			}
		}
		require.NoError(t, spec.WriteTraceFile(filepath.Join(dir, string(p)+".jsonl"), log))
	}
	return dir
}

// Per-node logs are merged in causal order; one alone is incomplete.
func TestAuditNodeLogs(t *testing.T) {
	tr := readTrace(t, "conforms", "concurrent-snapshots")
	dir := splitLogs(t, tr)
	want := dir + " (3 node logs merged): conforms: 20 steps, 2 snapshots, all properties hold\n"
	code, out, errs := audit(dir)
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, want, out)
	code, out, errs = audit(filepath.Join(dir, "P3.jsonl"), filepath.Join(dir, "P1.jsonl"), filepath.Join(dir, "P2.jsonl"))
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, want, out)
	code, vs, errs := auditJSONLines(t, dir)
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, []auditJSON{{Trace: dir, Files: []string{filepath.Join(dir, "P1.jsonl"), filepath.Join(dir, "P2.jsonl"), filepath.Join(dir, "P3.jsonl")},
		OK: true, Steps: 20, Snapshots: 2, Violations: []violationJSON{}, Incomplete: []incompleteJSON{}}}, vs)

	// One node's log alone lacks the sends of what it receives: not a
	// divergence, an incomplete run.
	p1 := filepath.Join(dir, "P1.jsonl")
	code, out, errs = audit(p1)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Regexp(t, `^markerwave audit: `+regexp.QuoteMeta(p1)+`: incomplete: event \d+, .* at P1, follows step \d+ of P\d, but the trace holds 0 events of P\d \(it lacks steps of P2 and P3\); the trace holds only P1's events, as one node's own log does, the other nodes' being in their own logs: give the directory of the run's node logs to merge them\n$`, errs)

	code, vs, _ = auditJSONLines(t, p1)
	assert.Equal(t, 2, code)
	require.Len(t, vs, 1)
	assert.False(t, vs[0].OK)
	assert.True(t, strings.HasPrefix(vs[0].Error, p1+": incomplete: event "), vs[0].Error)
	assert.Nil(t, vs[0].Divergence, "incomplete, not diverging")

	// Without P3's log, the others cannot be merged.
	require.NoError(t, os.Remove(filepath.Join(dir, "P3.jsonl")))
	code, out, errs = audit(dir)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Regexp(t, `^markerwave audit: `+regexp.QuoteMeta(dir)+`: cannot merge its 2 node logs: merge: P\d step \d+ \(.*\) waits for events no log holds \(clock \[.*\]\)\n$`, errs)
}

// The demo's per-node logs audit like its merged trace.
func TestAuditDemoNodeLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo over loopback TCP")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"demo", "--nodes", "3", "--transfers", "150", "--seed", "3", "--out", dir}, &out, &errb), out.String()+errb.String())
	nodes := filepath.Join(dir, "nodes")
	code, aout, aerr := audit(nodes)
	assert.Equal(t, 0, code, aout+aerr)
	assert.True(t, strings.HasPrefix(aout, nodes+" (3 node logs merged): conforms: "), aout)
	code, aout, aerr = audit(filepath.Join(nodes, "P2.jsonl"))
	assert.Equal(t, 2, code, aout+aerr)
	assert.Contains(t, aerr, "incomplete")
}

// Progress goes to stderr, the verdict alone to stdout.
func TestAuditProgress(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 0
	code, out, errs := audit("--progress", "../../traces/conforms/token-ring.jsonl")
	assert.Equal(t, 0, code)
	assert.Equal(t, "conforms: 6 steps, 1 snapshot, all properties hold\n", out)
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	require.Len(t, lines, 7, errs)
	assert.Regexp(t, `^markerwave audit: \.\./\.\./traces/conforms/token-ring\.jsonl: replayed 1 of 6 events \(16%\) in 0s$`, lines[0])
	assert.Equal(t, "markerwave audit: ../../traces/conforms/token-ring.jsonl: replayed all 6 events in 0s; checking the snapshots", lines[5])
	assert.Equal(t, "markerwave audit: ../../traces/conforms/token-ring.jsonl: checked 1 of 1 snapshot in 0s", lines[6], "the second phase reports too")
	progressEvery = time.Hour
	code, _, errs = audit("--progress", "../../traces/conforms/token-ring.jsonl")
	assert.Equal(t, 0, code)
	assert.Empty(t, errs, "a short replay says nothing")
	progressEvery = 0
	_, _, errs = audit("../../traces/conforms/token-ring.jsonl")
	assert.Empty(t, errs, "no progress unless asked or stderr is a terminal")
}

// TestAuditReadProgress: reading a long trace file reports on stderr,
// every readProgressEvery events once progressEvery has passed, with
// --progress; stdout holds the verdict alone, as without it. A generated
// bank run of 2,000 events, a report forced every 500.
func TestAuditReadProgress(t *testing.T) {
	defer func(d time.Duration, n int) { progressEvery, readProgressEvery = d, n }(progressEvery, readProgressEvery)
	path := filepath.Join(t.TempDir(), "bank.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(bankTransfers(1000)), 0o644))
	progressEvery, readProgressEvery = 0, 500
	code, quiet, errs := audit(path)
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, "conforms: 2000 steps, 0 snapshots, all properties hold\n", quiet)
	assert.Empty(t, errs, "no progress unless asked or stderr is a terminal")

	code, out, errs := audit("--progress", path)
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, quiet, out, "the verdict is unchanged")
	var read []string
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, ": read ") {
			read = append(read, l)
		}
	}
	require.Len(t, read, 4, errs)
	for i, l := range read {
		assert.Regexp(t, `^markerwave audit: .*bank\.jsonl: read `+strconv.Itoa(500*(i+1))+` events in \d+s$`, l)
	}

	progressEvery = time.Hour
	_, _, errs = audit("--progress", path)
	assert.NotContains(t, errs, ": read ", "a quick read says nothing")
}

// bankTransfers is a drained two-account run of n transfers of 1 from P1
// to P2, each received before the next: 2n events.
func bankTransfers(n int) string {
	var b strings.Builder
	b.WriteString(`{"format":"markerwave-trace/3","topology":{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]},"init_bal":{"P1":1000000,"P2":0},"drained":true}` + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"proc":"P1","seq":%d,"action":"SendApp","from":"P1","to":"P2","amount":1,"msg":%d,"after":{"bal":%d,"sent":%d,"rcvd":0}}`+"\n", i, i, 1000000-i, i)
		fmt.Fprintf(&b, `{"proc":"P2","seq":%d,"action":"RecvApp","from":"P1","to":"P2","amount":1,"msg":%d,"after":{"bal":%d,"sent":0,"rcvd":%d}}`+"\n", i, i, i, i)
	}
	return b.String()
}

// TestAuditNamesStaleLogs: a node log left in the directory by an earlier
// run (restored from a snapshot no log of this run took) breaks the
// merge, and the error names the stale file (issue #20: it did not).
func TestAuditNamesStaleLogs(t *testing.T) {
	tr := readTrace(t, "conforms", "concurrent-snapshots")
	dir := splitLogs(t, tr)
	old := tr.Header
	old.Drained, old.Snaps, old.Source, old.RestoredFrom = false, nil, "markerwave runtime, node P2", 987654
	stale := filepath.Join(dir, "P2-restored-987654.jsonl")
	require.NoError(t, spec.WriteTraceFile(stale, spec.Trace{Header: old}))
	code, out, errs := audit(dir)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, dir+": cannot merge its 4 node logs: ")
	assert.Contains(t, errs, "stale logs of an earlier run (restored from a snapshot no log of this run took): "+stale+" (restored from snapshot 987654); move them out of the directory")
	require.NoError(t, os.Remove(stale))
	code, _, errs = audit(dir)
	assert.Equal(t, 0, code, errs)
}

// TestAuditTraceGivenClocks: a markerwave-trace/3 event's clock that its
// events do not bear out is bad input (exit 2), named by file, line,
// process and entry; the trace's verdict is not given.
func TestAuditTraceGivenClocks(t *testing.T) {
	b, err := os.ReadFile("../../traces/conforms/token-ring.jsonl")
	require.NoError(t, err)
	// P3's receipt of the token, whose send P2's clock [0,1,0] counts.
	bad := bytes.Replace(b, []byte(`"vc":[0,1,1]`), []byte(`"vc":[0,0,1]`), 1)
	require.NotEqual(t, b, bad)
	p := filepath.Join(t.TempDir(), "t.jsonl")
	require.NoError(t, os.WriteFile(p, bad, 0o644))
	code, out, errs := audit(p)
	assert.Equal(t, 2, code, out+errs)
	assert.Empty(t, out)
	assert.Contains(t, errs, p+`: trace line 5, P3's RecvApp: field "vc": [0 0 1]: entry P2 is 0, but it must cover [0 1 0], the clock of the step it receives from (trace line 3, P2's SendApp), as that line gives it: want at least 1`)
}
