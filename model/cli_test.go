package model

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCheck(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := RunCheck(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunCheckPositive(t *testing.T) {
	code, out, errs := runCheck("check", "--model", "../tla/MCRing.cfg", "--workers", "2")
	require.Equal(t, ExitOK, code, out+errs)
	assert.Contains(t, out, "Model checking completed. No error has been found.\n")
	assert.Contains(t, out, "124 states generated, 89 distinct states found, 0 states left on queue.\n")
	assert.Contains(t, out, "The depth of the complete state graph search is 13.\n")
	assert.Contains(t, out, "distinct states/s")
	assert.Empty(t, errs, "no progress lines unless asked or on a terminal")
}

func TestRunCheckNegative(t *testing.T) {
	code, out, _ := runCheck("--model", "../tla/MCNonFIFO.cfg")
	assert.Equal(t, ExitViolation, code)
	assert.Contains(t, out, "Error: Invariant ConsistentCut is violated.\n")
	assert.Contains(t, out, "State 1: <Initial predicate>\n")
	assert.Contains(t, out, `State 5: <RecvMarkerAt("P1","P2",1)>`)

	code, out, _ = runCheck("--model", "../tla/MCNoForward.cfg")
	assert.Equal(t, ExitViolation, code)
	assert.Contains(t, out, "Error: Temporal property SnapshotsComplete was violated.\n")
	assert.Contains(t, out, "Stuttering")
	assert.Contains(t, out, "60 states generated, 48 distinct states found, 0 states left on queue.\n")
}

func TestRunCheckBadInput(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--model"},
		{"--model", "../tla/NoSuch.cfg"},
		{"--model", "../tla/MCRing.cfg", "--workers", "0"},
		{"--model", "../tla/MCRing.cfg", "extra"},
		{"--bogus"},
		{"--model", "../tla/MCRing.tla"}, // a module is not a cfg
	} {
		code, _, errs := runCheck(args...)
		assert.Equal(t, ExitBadInput, code, "%v", args)
		assert.NotEmpty(t, errs, "%v", args)
	}
	code, _, _ := runCheck("--help")
	assert.Equal(t, ExitOK, code)
}

func TestRunCheckSimulate(t *testing.T) {
	code, out, errs := runCheck("--model", "../tla/MCConcurrent.cfg", "--simulate", "--seed", "7", "--traces", "200", "--depth", "30")
	require.Equal(t, ExitOK, code, out+errs)
	assert.Contains(t, out, "seed 7")
	assert.Contains(t, out, "No error has been found in 200 behaviours.")
	_, out2, _ := runCheck("--model", "../tla/MCConcurrent.cfg", "--simulate", "--seed", "7", "--traces", "200", "--depth", "30")
	strip := func(s string) string { return s[:strings.LastIndex(s, "Finished in")] }
	assert.Equal(t, strip(out), strip(out2), "same seed, same run")

	// Simulation finds the negative models' violations too.
	for model, prop := range map[string]string{"MCNonFIFO": "Invariant ConsistentCut", "MCNoRecord": "Invariant Conservation", "MCNoForward": "Temporal property SnapshotsComplete"} {
		code, out, _ := runCheck("--model", "../tla/"+model+".cfg", "--simulate", "--seed", "1", "--traces", "5000")
		assert.Equal(t, ExitViolation, code, model)
		assert.Contains(t, out, "Error: "+prop, model)
	}
}

func TestProgressLines(t *testing.T) {
	cfg := loadTLA(t, "MCConcurrent")
	var buf syncBuffer
	_, err := Explore(cfg, Options{Progress: &buf, ProgressEvery: 20 * time.Millisecond, Workers: runtime.GOMAXPROCS(0)})
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "Progress: ")
	assert.Contains(t, buf.String(), "distinct states/s")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
