package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/conformance/export"
	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/spec"
)

func exportCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(append([]string{"export"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// tracePath is a trace of traces/.
func tracePath(kind, name string) string {
	return filepath.Join("..", "..", "traces", kind, name+".jsonl")
}

// readTrace reads a trace of traces/.
func readTrace(t *testing.T, kind, name string) spec.Trace {
	t.Helper()
	tr, _, err := conformance.ReadTraceFile(tracePath(kind, name))
	require.NoError(t, err)
	return tr
}

// writeTrace writes tr to a fresh file and returns its path.
func writeTrace(t *testing.T, tr spec.Trace) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, spec.WriteTraceFile(p, tr))
	return p
}

// wellFormedXML fails unless doc is well-formed XML.
func wellFormedXML(t *testing.T, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
	}
}

// The article's two accounts, without the implementation's report: the
// recorded state is the one the events imply.
func twoAccounts(t *testing.T) spec.Trace {
	tr := readTrace(t, "conforms", "two-account-transfer")
	tr.Recorded = nil
	return tr
}

func TestExportWritesEveryView(t *testing.T) {
	trace := writeTrace(t, twoAccounts(t))
	dir := t.TempDir()
	svg, html, log, tlc := filepath.Join(dir, "d.svg"), filepath.Join(dir, "d.html"), filepath.Join(dir, "s.log"), filepath.Join(dir, "tlc")
	code, out, errs := exportCmd("--diagram", svg, trace, "--shiviz", log, "--tlc", tlc)
	require.Equal(t, 0, code, errs)
	assert.Empty(t, errs)
	assert.Contains(t, out, "wrote "+svg+": columns 1..3 of 3 (Lamport time), 913x270 px\n  snapshot 1 (initiator P2): complete, recorded total 150; 0 orphan, 0 missing\n")
	assert.Contains(t, out, "wrote "+log+"\n  ShiViz parser regex (first line of the file): "+export.ShiVizRegex+"\n")
	assert.Contains(t, out, "wrote "+tlc+"/MCTrace.tla and MCTrace.cfg (5 events), with ChandyLamport.tla, TraceChandyLamport.tla\n")
	code, _, errs = exportCmd("--diagram", html, trace)
	require.Equal(t, 0, code, errs)
	for _, f := range []string{svg, html, log, filepath.Join(tlc, "MCTrace.tla"), filepath.Join(tlc, "MCTrace.cfg"), filepath.Join(tlc, "ChandyLamport.tla"), filepath.Join(tlc, "TraceChandyLamport.tla")} {
		_, err := os.Stat(f)
		assert.NoError(t, err, f)
	}
	for _, f := range []string{svg, html} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		wellFormedXML(t, b)
	}
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), export.ShiVizRegex+"\n"))
}

// The diagram's notes give each snapshot's total, reported and implied,
// and count the faulty messages, with correct plurals.
func TestExportDiagramNotes(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "d.svg")
	code, out, errs := exportCmd("--diagram", svg, tracePath("rejects", "ExactChannelState-missing-message"))
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "  snapshot 1 (initiator P2): complete, reported total 120, the events imply 150; 0 orphan, 1 missing\n")
	assert.Contains(t, out, "  1 missing message, drawn in red dashed\n")
	code, out, errs = exportCmd("--diagram", svg, tracePath("rejects", "ConsistentCut-orphan"))
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "  snapshot 1 (initiator P1): complete, reported total 180; 1 orphan, 0 missing\n")
	assert.Contains(t, out, "  1 orphan message, drawn in red\n")
}

func TestExportErrors(t *testing.T) {
	good := writeTrace(t, twoAccounts(t))
	var buf bytes.Buffer
	require.NoError(t, spec.WriteTrace(&buf, twoAccounts(t)))
	lines := strings.Split(buf.String(), "\n")
	lines[2] = `{"proc":"P2","seq":1,"action":"Teleport"}`
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644))
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	noDir := filepath.Join(t.TempDir(), "no", "such", "dir", "x.log")
	t.Setenv("TLA2TOOLS", "")

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"malformed trace":         {[]string{"--diagram", filepath.Join(t.TempDir(), "x.svg"), bad}, "markerwave export: " + bad + ": trace line 3: "},
		"missing trace":           {[]string{"--shiviz", "x.log", missing}, "markerwave export: open " + missing + ": no such file or directory"},
		"unwritable output":       {[]string{"--shiviz", noDir, good}, "markerwave export: open " + noDir + ": no such file or directory"},
		"nothing to do":           {[]string{good}, "markerwave export: nothing to do: give --diagram, --shiviz or --tlc"},
		"unknown format":          {[]string{"--diagram", "x.png", good}, "markerwave export: --diagram x.png: diagram file must end in .svg or .html"},
		"no trace":                {[]string{"--diagram", "x.svg"}, "markerwave export: want exactly one TRACE, got 0"},
		"two traces":              {[]string{"--diagram", "x.svg", good, good}, "markerwave export: want exactly one TRACE, got 2"},
		"run-tlc without tlc":     {[]string{"--run-tlc", "/x.jar", "--shiviz", "x", good}, "markerwave export: --run-tlc needs --tlc DIR"},
		"run-tlc without jar":     {[]string{"--run-tlc", "", "--tlc", t.TempDir(), good}, "markerwave export: --run-tlc: no tla2tools.jar given and TLA2TOOLS is unset"},
		"unknown flag":            {[]string{"--bogus", good}, "markerwave export: flag provided but not defined: -bogus"},
		"spec modules not found":  {[]string{"--tlc", t.TempDir(), "--spec-dir", t.TempDir(), good}, "markerwave export: spec module: open "},
		"flag value missing":      {[]string{good, "--diagram"}, "markerwave export: flag needs an argument: -diagram"},
		"positional after --":     {[]string{"--shiviz", filepath.Join(t.TempDir(), "x.log"), "--", good, "--tlc"}, "markerwave export: want exactly one TRACE, got 2"},
		"bad timeout (flag type)": {[]string{"--tlc-timeout", "soon", good}, `markerwave export: invalid value "soon" for flag -tlc-timeout`},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := exportCmd(tc.args...)
			assert.Equal(t, exitUsage, code, errs)
			assert.True(t, strings.HasPrefix(errs, tc.want), "stderr %q, want prefix %q", errs, tc.want)
			assert.NotContains(t, out, "wrote", "nothing is written before the arguments are checked")
		})
	}
}

func TestExportRunsTLC(t *testing.T) {
	jar := os.Getenv("TLA2TOOLS")
	if jar == "" {
		t.Skip("TLA2TOOLS is unset: set it to the path of tla2tools.jar to run TLC trace validation")
	}
	code, out, errs := exportCmd("--tlc", filepath.Join(t.TempDir(), "tlc"), "--run-tlc", jar, tracePath("conforms", "token-ring"))
	assert.Equal(t, 0, code, out+errs)
	assert.Contains(t, out, "TLC: ACCEPTED: all 6 events")

	tampered := twoAccounts(t)
	k := len(tampered.Events) - 3
	tampered.Events[k].After.Bal++
	code, out, errs = exportCmd("--tlc", filepath.Join(t.TempDir(), "tlc"), "--run-tlc", jar, writeTrace(t, tampered))
	assert.Equal(t, 1, code, out+errs)
	assert.Contains(t, out, "TLC: REJECTED")
	assert.Contains(t, out, "Error: Invariant TraceMatched is violated.")
	assert.Contains(t, out, fmt.Sprintf("the first that does not match is event %d: %s", k+1, tampered.Events[k]))
}

// longRun is a seeded run of a 5-account bank with about n events and a
// few snapshots, as a trace file: a transfer for every two deliveries or
// so, as in the demo.
func longRun(t *testing.T, n int) string {
	net, err := coretest.RandomBank(n, 400, 1)
	require.NoError(t, err)
	tr := net.Trace("")
	tr.Header.Drained = true
	tr.Recorded = net.RecordedSnapshots()
	return writeTrace(t, tr)
}

// --snap and --window draw part of a long run; the whole of it comes
// with a hint on stderr.
func TestExportDiagramSnapAndWindow(t *testing.T) {
	trace := longRun(t, 4000)
	dir := t.TempDir()
	svg := filepath.Join(dir, "d.svg")
	code, out, errs := exportCmd("--diagram", svg, trace)
	require.Equal(t, 0, code, errs)
	m := regexp.MustCompile(`wrote .*: columns 1\.\.(\d+) of (\d+) \(Lamport time\), (\d+)x\d+ px\n`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, m[1], m[2])
	assert.Contains(t, errs, "markerwave export: the diagram is "+m[3]+" px wide; --snap N or --window FROM:TO draws a part of the run\n")

	code, out, errs = exportCmd("--diagram", svg, "--snap", "2", trace)
	require.Equal(t, 0, code, errs)
	assert.Empty(t, errs)
	m = regexp.MustCompile(`columns (\d+)\.\.(\d+) of \d+ \(Lamport time\), (\d+)x\d+ px\n`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	w, err := strconv.Atoi(m[3])
	require.NoError(t, err)
	assert.LessOrEqual(t, w, 4*1920, "within four screens")
	assert.Equal(t, 1, strings.Count(out, "  snapshot "), "the notes speak of the snapshot drawn only:\n%s", out)
	assert.Contains(t, out, "  snapshot 2 (")
	doc, err := os.ReadFile(svg)
	require.NoError(t, err)
	wellFormedXML(t, doc)
	assert.Equal(t, 1, strings.Count(string(doc), `class="cut"`))
	assert.Contains(t, string(doc), `class="cut" data-snap="2"`)

	code, out, errs = exportCmd("--diagram", svg, "--window", "100:120", trace)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, ": columns 100..120 of ")
	code, out, errs = exportCmd("--diagram", svg, "--window", ":20", "--snap", "1", trace)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, ": columns 1..20 of ")

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"snap 0":               {[]string{"--snap", "0"}, `markerwave export: invalid value "0" for flag -snap: want a snapshot id, a positive integer`},
		"snap not a number":    {[]string{"--snap", "x"}, `markerwave export: invalid value "x" for flag -snap`},
		"window without colon": {[]string{"--window", "5"}, "markerwave export: --window 5: want FROM:TO, column numbers from 1 with FROM <= TO, either may be empty"},
		"window backwards":     {[]string{"--window", "9:5"}, "markerwave export: --window 9:5: want FROM:TO"},
		"window column 0":      {[]string{"--window", "0:5"}, "markerwave export: --window 0:5: want FROM:TO"},
		"no such snapshot":     {[]string{"--snap", "999"}, "markerwave export: no snapshot 999 in the trace (it names 1, "},
		"window after the end": {[]string{"--window", "99999:"}, "markerwave export: window 99999: starts after the run's last column, "},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x.svg")
			code, stdout, errs := exportCmd(append([]string{"--diagram", out, trace}, tc.args...)...)
			assert.Equal(t, exitUsage, code, errs)
			assert.True(t, strings.HasPrefix(errs, tc.want), "stderr %q, want prefix %q", errs, tc.want)
			assert.NotContains(t, stdout, "wrote")
			assert.NoFileExists(t, out, "nothing written")
		})
	}
	code, _, errs = exportCmd("--shiviz", filepath.Join(dir, "x.log"), "--snap", "1", trace)
	assert.Equal(t, exitUsage, code)
	assert.True(t, strings.HasPrefix(errs, "markerwave export: --snap and --window need --diagram\n"), errs)
}

// The demo's run: every snapshot's neighbourhood is a few screens wide.
func TestExportDiagramOfTheDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo over loopback TCP")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.Equal(t, exitOK, runDemo([]string{"--transfers", "1500", "--seed", "3", "--out", dir}, &out, &errb), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	trace := filepath.Join(dir, "trace.jsonl")
	tr, _, err := conformance.ReadTraceFile(trace)
	require.NoError(t, err)
	a, err := export.Analyze(tr)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(a.Cuts), 5)
	width := regexp.MustCompile(`: columns \d+\.\.\d+ of \d+ \(Lamport time\), (\d+)x\d+ px\n`)
	for _, c := range a.Cuts {
		html := filepath.Join(dir, fmt.Sprintf("snap-%d.html", c.Snap))
		code, stdout, errs := exportCmd("--diagram", html, "--snap", fmt.Sprint(c.Snap), trace)
		require.Equal(t, exitOK, code, errs)
		m := width.FindStringSubmatch(stdout)
		require.NotNil(t, m, stdout)
		w, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		assert.LessOrEqual(t, w, 4*1920, "snapshot %d: %s", c.Snap, m[0])
		doc, err := os.ReadFile(html)
		require.NoError(t, err)
		wellFormedXML(t, doc)
	}
}

// One node's log alone lacks the other nodes' events: export refuses it
// as audit does (conformance.Whole: the same words, naming the nodes
// whose steps are missing and pointing at the directory), exits 2 and
// draws nothing, where a drawing would show its receives without their
// sends. The logs' directory is drawn, merged.
func TestExportNodeLog(t *testing.T) {
	dir := splitLogs(t, readTrace(t, "conforms", "concurrent-snapshots"))
	p1 := filepath.Join(dir, "P1.jsonl")
	_, _, auditErrs := audit(p1)
	for _, flag := range []string{"--diagram", "--shiviz"} {
		target := filepath.Join(t.TempDir(), "p1.svg")
		code, out, errs := exportCmd(flag, target, p1)
		assert.Equal(t, exitUsage, code, errs)
		assert.Empty(t, out)
		assert.Regexp(t, `^markerwave export: `+regexp.QuoteMeta(p1)+`: incomplete: event \d+, .* at P1, follows step \d+ of P\d, but the trace holds 0 events of P\d \(it lacks steps of P2 and P3\); the trace holds only P1's events, as one node's own log does, the other nodes' being in their own logs: give the directory of the run's node logs to merge them\n$`, errs)
		assert.Equal(t, strings.TrimPrefix(auditErrs, "markerwave audit: "), strings.TrimPrefix(errs, "markerwave export: "), "export refuses it in audit's words")
		assert.NoFileExists(t, target, flag)
	}

	svg := filepath.Join(t.TempDir(), "run.svg")
	code, out, errs := exportCmd("--diagram", svg, dir)
	assert.Equal(t, exitOK, code, errs)
	assert.Regexp(t, `^wrote `+regexp.QuoteMeta(svg)+`: `, out)
	assert.Regexp(t, `(?m)^  snapshot 1 \(initiator P\d\): complete, recorded total \d+; 0 orphan, 0 missing$`, out)
	assert.FileExists(t, svg)
}
