package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A small demo over TCP: every protocol restores exactly once, exit 0,
// the table on stdout, progress on stderr.
func TestFlowDemo(t *testing.T) {
	var out, errb bytes.Buffer
	code := runFlow([]string{"--par", "2", "--records", "300", "--slow", "20us", "--every", "2ms", "--fail-after", "100"}, &out, &errb)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	for _, p := range []string{"aligned", "unaligned", "chandy-lamport", "adaptive"} {
		assert.Regexp(t, `(?m)^`+p+` .*snapshot \d+ +committed \[\d*\], aborted \[\d*\] +600 rows, each once +exactly once \(600 records\)$`, out.String())
	}
	assert.Regexp(t, `(?m)^aligned +\d+ +\S+ +\S+ +0 records `, out.String(), "ABS on a DAG records no channel state")
	assert.Contains(t, errb.String(), "markerwave flow: aligned: running")
	assert.Regexp(t, `(?m)^adaptive, aligned timeout 1ms: `, out.String())
}

// With an aligned timeout of 0 the adaptive protocol switches at the
// first barrier that blocks: the demo names the operators that switched,
// and restores exactly once. agg0 is the slow stage (--slow throttles
// node 2*par): the barriers that block are those behind it, at agg1 (its
// inputs, the maps, are held up by agg0's full buffers) or at the sink
// (agg0's barrier in, agg1's not yet); which of the two blocks in a given
// snapshot is the scheduler's choice, so the check is that one of them
// switched, never agg0, which feeds the force-aligned agg0->sink.
func TestFlowDemoAdaptiveSwitches(t *testing.T) {
	var out, errb bytes.Buffer
	code := runFlow([]string{"--par", "2", "--records", "300", "--slow", "50us", "--every", "2ms", "--fail-after", "100",
		"--runtime", "memory", "--aligned-timeout", "0s", "--force-aligned", "agg0->sink"}, &out, &errb)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	switched := regexp.MustCompile(`(?m)^adaptive, aligned timeout 0s: switched to unaligned: (.*); blocked up to .* bytes$`).FindStringSubmatch(out.String())
	require.NotNil(t, switched, "an aligned timeout of 0 behind the slow agg0 switches: stdout:\n%s", out.String())
	assert.Regexp(t, `(^|, )(agg1|sink) \(\d+ of \d+ snapshots\)`, switched[1], "a switch behind the slow stage")
	assert.NotContains(t, switched[1], "agg0 (", "agg0 feeds the force-aligned agg0->sink: it never switches")
	assert.Regexp(t, `(?m)^restored from snapshot \d+, in which .* exactly once: true$`, out.String())
}

// A run that ends before its failure is a failed demo (exit 1), saying
// what to change.
func TestFlowDemoWithoutFailure(t *testing.T) {
	var out, errb bytes.Buffer
	code := runFlow([]string{"--par", "1", "--records", "50", "--slow", "0s", "--fail-after", "1000000", "--runtime", "memory"}, &out, &errb)
	assert.Equal(t, exitFail, code)
	assert.Empty(t, out.String())
	assert.Contains(t, errb.String(), "markerwave flow: aligned: the run ended before its failure")
}

// The output check names what went wrong.
func TestFlowExactlyOnceNamesTheFault(t *testing.T) {
	ok, why := exactlyOnce(map[dataflow.Key]int{{Src: 0, I: 1}: 1}, 2, nil, nil)
	assert.False(t, ok)
	assert.Equal(t, "1 record lost", why)
	ok, why = exactlyOnce(map[dataflow.Key]int{{Src: 0, I: 1}: 1, {Src: 1, I: 2}: 2, {Src: 0, I: 3}: 3}, 3, nil, nil)
	assert.False(t, ok)
	assert.Equal(t, "2 records counted more than once (the first: source 0's record 3)", why)
	ok, why = exactlyOnce(map[dataflow.Key]int{{Src: 0, I: 1}: 1}, 1, map[int64]int64{1: 2}, map[int64]int64{1: 3})
	assert.False(t, ok)
	assert.Contains(t, why, "differs")
}

func TestFlowUsage(t *testing.T) {
	for _, args := range [][]string{{"--par", "0"}, {"--runtime", "udp"}, {"--every", "0s"}, {"extra"}, {"--records", "x"},
		{"--aligned-timeout", "-1ms"}, {"--force-aligned", "map0->nowhere"}, {"--force-aligned", "map0"}, {"--pace", "-1us"}} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitUsage, runFlow(args, &out, &errb), "%v", args)
		assert.True(t, strings.HasPrefix(errb.String(), "markerwave flow: "), errb.String())
		assert.Empty(t, out.String())
	}
	var out0, err0 bytes.Buffer
	runFlow([]string{"--aligned-timeout", "-1ms"}, &out0, &err0)
	assert.Contains(t, err0.String(), "--aligned-timeout -1ms must not be negative")
	out0.Reset()
	err0.Reset()
	runFlow([]string{"--force-aligned", "map0->nowhere"}, &out0, &err0)
	assert.Contains(t, err0.String(), "the graph has no edge map0->nowhere to force-align")
	var out, errb bytes.Buffer
	assert.Equal(t, exitOK, runFlow([]string{"--help"}, &out, &errb))
	assert.Contains(t, out.String(), "usage: markerwave flow [flags]")
	assert.Contains(t, out.String(), "-fail-after")
}

// flow follows the commands' conventions (TestConventions); it reads no
// input file.
func init() {
	commandConventions["flow"] = conventions{flags: []string{"par", "records", "cap", "slow", "every", "fail-after", "runtime", "timeout", "out", "kill-sink", "sink-url",
		"aligned-timeout", "force-aligned", "measure", "pace"}}
}
