package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func check(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(append([]string{"check"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckPositive(t *testing.T) {
	code, out, errs := check("--model", "../../tla/MCRing.cfg", "--workers", "2")
	require.Equal(t, exitOK, code, out+errs)
	assert.Contains(t, out, "Model MCRing (../../tla/MCRing.cfg): Spec, 3 processes, 3 channels, 1 snapshot.\n")
	assert.Contains(t, out, "Running breadth-first search with 2 workers.\n")
	assert.Contains(t, out, "Model checking completed. No error has been found.\n")
	assert.Contains(t, out, "124 states generated, 89 distinct states found, 0 states left on queue.\n")
	assert.Contains(t, out, "The depth of the complete state graph search is 13.\n")
	assert.Contains(t, out, "distinct states/s")
	assert.Empty(t, errs, "no progress lines unless asked or on a terminal")
}

func TestCheckNegative(t *testing.T) {
	code, out, errs := check("--model", "../../tla/MCNonFIFO.cfg")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, out, "Error: Invariant ConsistentCut is violated.\n")
	assert.Contains(t, out, "State 1: <Initial predicate>\n")
	assert.Contains(t, out, `State 5: <RecvMarkerAt("P1","P2",1)>`)
	assert.Empty(t, errs)

	code, out, _ = check("--model", "../../tla/MCNoForward.cfg")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, out, "Error: Temporal property SnapshotsComplete was violated.\n")
	assert.Contains(t, out, "Stuttering")
	assert.Contains(t, out, "60 states generated, 48 distinct states found, 0 states left on queue.\n")
}

func TestCheckUsageAndBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--model is required"},
		{[]string{"--model"}, "flag needs an argument: -model"},
		{[]string{"--model", "../../tla/MCRing.cfg", "--workers", "0"}, "--workers, --traces and --depth must be at least 1"},
		{[]string{"--model", "../../tla/MCRing.cfg", "extra"}, `unexpected argument "extra"`},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--model", "../../tla/MCRing.cfg", "--max-states", "-1"}, "--max-states must not be negative"},
		{[]string{"--model", "../../tla/MCRing.cfg", "--max-memory", "lots"}, `want a size such as 1000000, 512MiB or 4GiB, got "lots"`},
		{[]string{"--model", "../../tla/MCRing.cfg", "--simulate", "--max-states", "10"}, "--max-states, --max-memory and --fingerprint are for the exhaustive search, not --simulate"},
		{[]string{"--model", "../../tla/MCRing.cfg", "--simulate", "--fingerprint"}, "--max-states, --max-memory and --fingerprint are for the exhaustive search, not --simulate"},
		{[]string{"--model", "../../tla/MCRing.cfg", "--frontier-memory", "1MiB"}, "--frontier-memory and --tmpdir need --fingerprint"},
		{[]string{"--model", "../../tla/MCRing.cfg", "--fingerprint", "--tmpdir", "/no/such/dir"}, "/no/such/dir"},
		{[]string{"--model", "../../tla/NoSuch.cfg"}, "NoSuch.cfg"},
		{[]string{"--model", "../../tla/MCRing.tla"}, "MCRing.tla"}, // a module is not a cfg
	} {
		code, out, errs := check(c.args...)
		assert.Equal(t, exitUsage, code, "%v", c.args)
		assert.Empty(t, out, "%v", c.args)
		assert.True(t, strings.HasPrefix(errs, "markerwave check: "), "%v: %q", c.args, errs)
		assert.Contains(t, errs, c.want, "%v", c.args)
	}
	code, out, errs := check("--help")
	assert.Equal(t, exitOK, code)
	assert.Empty(t, errs)
	for _, want := range []string{"usage: markerwave check --model FILE.cfg", "-max-states N", "-max-memory SIZE", "-json", "130 interrupted"} {
		assert.Contains(t, out, want)
	}
}

// Balances that sum past int64 are refused with exit 2, naming the
// constant and its line, instead of a spurious TypeOK violation.
func TestCheckOverflow(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../tla/MCTwoBank.tla")
	require.NoError(t, err)
	cfg, err := os.ReadFile("../../tla/MCTwoBank.cfg")
	require.NoError(t, err)
	tla := strings.Replace(string(src), "P1 |-> 100", "P1 |-> 9223372036854775800", 1)
	require.NotEqual(t, string(src), tla, "MCTwoBank's InitBal changed; update the test")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MCTwoBank.tla"), []byte(tla), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MCTwoBank.cfg"), cfg, 0o644))
	code, out, errs := check("--model", filepath.Join(dir, "MCTwoBank.cfg"))
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Regexp(t, `^markerwave check: .*MCTwoBank.tla:\d+: model: InitBal sums past 9223372036854775807`, errs)
}

func TestCheckSimulate(t *testing.T) {
	args := []string{"--model", "../../tla/MCConcurrent.cfg", "--simulate", "--seed", "7", "--traces", "200", "--depth", "30"}
	code, out, errs := check(args...)
	require.Equal(t, exitOK, code, out+errs)
	assert.Contains(t, out, "seed 7")
	assert.Contains(t, out, "No error has been found in 200 behaviours.")
	_, out2, _ := check(args...)
	strip := func(s string) string { return s[:strings.LastIndex(s, "Finished in")] }
	assert.Equal(t, strip(out), strip(out2), "same seed, same run")

	// Simulation finds the negative models' violations too.
	for m, prop := range map[string]string{"MCNonFIFO": "Invariant ConsistentCut", "MCNoRecord": "Invariant Conservation", "MCNoForward": "Temporal property SnapshotsComplete"} {
		code, out, _ := check("--model", "../../tla/"+m+".cfg", "--simulate", "--seed", "1", "--traces", "5000")
		assert.Equal(t, exitFail, code, m)
		assert.Contains(t, out, "Error: "+prop, m)
	}
}

// verdict decodes --json output strictly.
func verdict(t *testing.T, out string) checkVerdict {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var raw struct {
		checkVerdict
		Counts json.RawMessage `json:"counts"`
	}
	require.NoError(t, dec.Decode(&raw), out)
	v := raw.checkVerdict
	v.Counts = string(raw.Counts)
	return v
}

func TestCheckJSON(t *testing.T) {
	code, out, errs := check("--model", "../../tla/MCRing.cfg", "--json")
	require.Equal(t, exitOK, code, errs)
	assert.Empty(t, errs)
	v := verdict(t, out)
	assert.Equal(t, "MCRing", v.Model)
	assert.Equal(t, "Spec", v.Specification)
	assert.Equal(t, "exhaustive", v.Mode)
	assert.Equal(t, "ok", v.Verdict)
	assert.Equal(t, "done", v.Stop)
	assert.Empty(t, v.Counterexample)
	assert.JSONEq(t, `{"generated":124,"distinct":89,"depth":13,"left":0}`, v.Counts.(string))

	code, out, _ = check("--model", "../../tla/MCNonFIFO.cfg", "--json")
	require.Equal(t, exitFail, code)
	v = verdict(t, out)
	assert.Equal(t, "violated", v.Verdict)
	assert.Equal(t, "ConsistentCut", string(v.Property))
	assert.Equal(t, "invariant", v.Kind)
	require.Len(t, v.Counterexample, 5)
	assert.Equal(t, "", v.Counterexample[0].Action)
	assert.Len(t, v.Counterexample[0].Changed, 12, "the initial state has every variable")
	assert.Equal(t, `RecvMarkerAt("P1","P2",1)`, v.Counterexample[4].Action)
	assert.Contains(t, v.Counterexample[4].Changed, "recorded")
	assert.NotContains(t, v.Counterexample[4].Changed, "nSent", "only the variables the step changed")

	code, out, _ = check("--model", "../../tla/MCNoForward.cfg", "--json")
	require.Equal(t, exitFail, code)
	v = verdict(t, out)
	assert.Equal(t, "property", v.Kind)
	assert.True(t, v.Stuttering)

	code, out, _ = check("--model", "../../tla/MCConcurrent.cfg", "--json", "--simulate", "--seed", "3", "--traces", "10")
	require.Equal(t, exitOK, code)
	v = verdict(t, out)
	assert.Equal(t, "simulate", v.Mode)
	assert.Contains(t, v.Counts.(string), `"seed": 3`)
}

// The bounds stop the search with exit 3 and say so on both streams; a
// bounded run is not a pass.
func TestCheckBounds(t *testing.T) {
	code, out, errs := check("--model", "../../tla/MCConcurrent.cfg", "--max-states", "100")
	assert.Equal(t, exitBounded, code)
	assert.Contains(t, out, "Model checking stopped before the end: more than 100 distinct states (--max-states). No error has been found in the states explored, but the search is incomplete.\n")
	assert.Contains(t, out, "The depth of the search so far is")
	assert.NotContains(t, out, "completed")
	assert.Equal(t, "markerwave check: more than 100 distinct states (--max-states); the search is incomplete\n", errs)

	code, out, errs = check("--model", "../../tla/MCConcurrent.cfg", "--max-memory", "10kB", "--json")
	assert.Equal(t, exitBounded, code)
	v := verdict(t, out)
	assert.Equal(t, "incomplete", v.Verdict)
	assert.Equal(t, "max-memory", v.Stop)
	assert.Equal(t, "markerwave check: the stored states take more than 10000B (--max-memory); the search is incomplete\n", errs)

	code, _, _ = check("--model", "../../tla/MCConcurrent.cfg", "--max-states", "1000000", "--max-memory", "1GiB")
	assert.Equal(t, exitOK, code, "bounds that are not reached do not stop the search")
}

// interruptAtOnce makes check see a SIGINT as soon as it listens, for the
// rest of the test.
func interruptAtOnce(t *testing.T) {
	saved := notifyInterrupt
	t.Cleanup(func() { notifyInterrupt = saved })
	notifyInterrupt = func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 1)
		ch <- os.Interrupt
		return ch, func() {}
	}
}

// Ctrl-C stops the search, prints the counts reached and exits 130.
func TestCheckInterrupt(t *testing.T) {
	interruptAtOnce(t)
	code, out, errs := check("--model", "../../tla/MCLarge.cfg")
	assert.Equal(t, exitInterrupted, code)
	assert.Contains(t, out, "Model checking stopped before the end: interrupted.")
	assert.Regexp(t, `\d+ states generated, \d+ distinct states found, \d+ states left on queue.\n`, out)
	assert.Equal(t, "markerwave check: interrupted; the search is incomplete\n", errs)
}

// Ctrl-C stops a simulation too, after the behaviour under way, with the
// counts reached and exit 130.
func TestCheckSimulateInterrupt(t *testing.T) {
	interruptAtOnce(t)
	code, out, errs := check("--model", "../../tla/MCLarge.cfg", "--simulate", "--seed", "7", "--traces", "100000000")
	assert.Equal(t, exitInterrupted, code)
	assert.Contains(t, out, "The simulation was interrupted before 100000000 behaviours.\n")
	assert.Regexp(t, `\d+ states checked in \d+ behaviours? \(longest \d+ states?\), \d+ states generated.\n`, out)
	assert.Regexp(t, `^markerwave check: interrupted after \d+ behaviours?; the simulation is incomplete\n$`, errs)

	code, out, _ = check("--model", "../../tla/MCLarge.cfg", "--simulate", "--seed", "7", "--traces", "100000000", "--json")
	assert.Equal(t, exitInterrupted, code)
	v := verdict(t, out)
	assert.Equal(t, "incomplete", v.Verdict)
	assert.Equal(t, "canceled", v.Stop)
}

// --fingerprint gives TLC's counts and prints TLC's collision estimate;
// a violation's counterexample is rebuilt from the trace file.
func TestCheckFingerprint(t *testing.T) {
	code, out, errs := check("--model", "../../tla/MCTwoBank.cfg", "--fingerprint", "--frontier-memory", "1KiB", "--tmpdir", t.TempDir())
	require.Equal(t, exitOK, code, out+errs)
	assert.Contains(t, out, "Running breadth-first search with")
	assert.Contains(t, out, "storing 64-bit fingerprints.\n")
	// 158 * (285 - 158) / 2^64
	assert.Contains(t, out, "Model checking completed. No error has been found.\n"+
		"  Estimates of the probability that TLC did not check all reachable states\n"+
		"  because two distinct states had the same fingerprint:\n"+
		"  calculated (optimistic):  val = 1.1E-15\n"+
		"285 states generated, 158 distinct states found, 0 states left on queue.\n")

	code, out, _ = check("--model", "../../tla/MCNonFIFO.cfg", "--fingerprint")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, out, `State 5: <RecvMarkerAt("P1","P2",1)>`)

	code, out, _ = check("--model", "../../tla/MCRing.cfg", "--fingerprint", "--json")
	require.Equal(t, exitOK, code)
	var v struct {
		Counts struct {
			Distinct  int64    `json:"distinct"`
			Collision *float64 `json:"collision_probability"`
		} `json:"counts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	assert.Equal(t, int64(89), v.Counts.Distinct)
	require.NotNil(t, v.Counts.Collision)
	assert.InDelta(t, 89.0*(124-89)/(1<<64), *v.Counts.Collision, 1e-25)
}

func TestProbability(t *testing.T) {
	for p, want := range map[float64]string{0: "0.0", 6.04e-8: "6.0E-8", 1.2e-15: "1.2E-15", 5.5e-10: "5.5E-10", 0.012: "0.012", 0.5: "0.5"} {
		assert.Equal(t, want, probability(p), "%g", p)
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1000": 1000, "10kB": 10_000, "512MiB": 512 << 20, "4GiB": 4 << 30, "1.5GB": 1_500_000_000, "2 TiB": 2 << 40, "7B": 7} {
		var b byteSize
		require.NoError(t, b.Set(in), in)
		assert.Equal(t, want, int64(b), in)
	}
	for _, in := range []string{"", "-1", "4XB", "1e30GiB"} {
		var b byteSize
		assert.Error(t, b.Set(in), in)
	}
	assert.Equal(t, "4GiB", byteSize(4<<30).String())
	assert.Equal(t, "10000B", byteSize(10_000).String())
}
