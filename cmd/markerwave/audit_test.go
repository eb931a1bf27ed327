package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func audit(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(append([]string{"audit"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestAuditConforms(t *testing.T) {
	code, out, errs := audit("../../traces/conforms/token-ring.jsonl")
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, "conforms: 6 steps, 1 snapshots, all properties hold\n", out)
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
		"no arguments":   {nil, "usage: markerwave audit"},
		"bad flag":       {[]string{"-nope", "x"}, "flag provided but not defined"},
		"bad event":      {[]string{write("e.jsonl", header+"{\"proc\":\"P1\",\"seq\":1,\"action\":\"Fly\",\"vc\":[1,0]}\n")}, "trace line 2: unknown action"},
		"bad json":       {[]string{write("j.jsonl", header+"{\n")}, "trace line 2"},
		"bad header":     {[]string{write("h.jsonl", `{"format":"other"}`+"\n")}, "trace line 1"},
		"bad constants":  {[]string{write("c.jsonl", strings.Replace(header, `,"P2":0`, ``, 1))}, "InitBal"},
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
		})
	}
}
