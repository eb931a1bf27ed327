package export

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

func writeTrace(t *testing.T, tr spec.Trace) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	f, err := os.Create(p)
	require.NoError(t, err)
	require.NoError(t, spec.WriteTrace(f, tr))
	require.NoError(t, f.Close())
	return p
}

func cli(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Command(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCommandWritesEveryExport(t *testing.T) {
	trace := writeTrace(t, twoBank(t))
	if d := os.Getenv("MARKERWAVE_EXPORT_OUT"); d != "" {
		b, err := os.ReadFile(trace)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d, "twobank.jsonl"), b, 0o644))
	}
	dir := t.TempDir()
	svg, html, log, tlc := filepath.Join(dir, "d.svg"), filepath.Join(dir, "d.html"), filepath.Join(dir, "s.log"), filepath.Join(dir, "tlc")
	code, out, errs := cli("--diagram", svg, trace, "--shiviz", log, "--tlc", tlc)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "snapshot 1 (initiator P1): complete, recorded total 150")
	code, _, errs = cli("--diagram", html, trace)
	require.Equal(t, 0, code, errs)
	for _, f := range []string{svg, html, log, filepath.Join(tlc, "MCTrace.tla"), filepath.Join(tlc, "MCTrace.cfg"), filepath.Join(tlc, "ChandyLamport.tla")} {
		_, err := os.Stat(f)
		assert.NoError(t, err, f)
	}
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	parse(t, b)
	b, err = os.ReadFile(log)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), ShiVizRegex+"\n"))
}

func TestCommandDiagramReportsTotalsAndCounts(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "d.svg")
	code, out, errs := cli("--diagram", svg, filepath.Join("..", "..", "traces", "rejects", "ExactChannelState-missing-message.jsonl"))
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "snapshot 1 (initiator P2): complete, reported total 120, the events imply 150; 0 orphan, 1 missing\n")
	assert.Contains(t, out, "1 missing message(s), drawn in red dashed")
	code, out, errs = cli("--diagram", svg, filepath.Join("..", "..", "traces", "rejects", "ConsistentCut-orphan.jsonl"))
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "snapshot 1 (initiator P1): complete, reported total 180; 1 orphan, 0 missing\n")
}

func TestCommandErrors(t *testing.T) {
	good := writeTrace(t, twoBank(t))
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	var buf bytes.Buffer
	require.NoError(t, spec.WriteTrace(&buf, twoBank(t)))
	lines := strings.Split(buf.String(), "\n")
	lines[2] = `{"proc":"P2","seq":1,"action":"Teleport"}`
	require.NoError(t, os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644))

	code, _, errs := cli("--diagram", filepath.Join(t.TempDir(), "x.svg"), bad)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "trace line 3", "the error names the line")
	for _, args := range [][]string{
		{good},                                         // nothing to do
		{"--diagram", "x.png", good},                   // unknown format
		{"--diagram", "x.svg"},                         // no trace
		{"--diagram", "x.svg", good, good},             // two traces
		{"--run-tlc", "/x.jar", "--shiviz", "x", good}, // --run-tlc without --tlc
		{"--bogus", good},
		{"--shiviz", "x.log", filepath.Join(t.TempDir(), "missing.jsonl")},
		{"--shiviz", filepath.Join(t.TempDir(), "no", "such", "dir", "x.log"), good},
	} {
		code, _, errs := cli(args...)
		assert.Equal(t, 2, code, "%v: %s", args, errs)
		assert.NotEmpty(t, errs)
	}
	code, out, _ := cli("-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: markerwave export")
}

func TestCommandRunsTLC(t *testing.T) {
	jar := tlcJar(t)
	code, out, errs := cli("--tlc", filepath.Join(t.TempDir(), "tlc"), "--run-tlc", jar, writeTrace(t, tokenRing(t)))
	assert.Equal(t, 0, code, out+errs)
	assert.Contains(t, out, "TLC: ACCEPTED: all 8 events")

	tampered := twoBank(t)
	tampered.Events[4].After.Bal = 61
	code, out, errs = cli("--tlc", filepath.Join(t.TempDir(), "tlc"), "--run-tlc", jar, writeTrace(t, tampered))
	assert.Equal(t, 1, code, out+errs)
	assert.Contains(t, out, "TLC: REJECTED")
	assert.Contains(t, out, "Error: Invariant TraceMatched is violated.")
	assert.Contains(t, out, "the first that does not match is event 5: RecvApp(P1, P2) 30#1")
	t.Log(out)
}
