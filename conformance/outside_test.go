package conformance

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// outsideScript is the worked example of auditing an implementation that
// is not this project's: the article's two accounts run by a small
// Chandy-Lamport implementation in Python, which prints its run as a
// trace (examples/outside-python/README.md).
const outsideScript = "../examples/outside-python/twoaccounts.py"

// TestOutsideImplementation runs the Python implementation, correct and
// broken, and audits each trace as markerwave audit does (AuditFile):
// the correct run conforms with its snapshot of $150; a run that records
// no channel state, and one whose channel lets P1's marker overtake the
// $30, are rejected with ExactChannelState (the $30 in flight is missing
// from the snapshot, which holds $120), each at the step the model
// refuses. Every trace is also valid under traces/trace.schema.json.
func TestOutsideImplementation(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 not found (%v): CI must have it to run the outside-implementation example %s", err, outsideScript)
		}
		t.Skipf("SKIPPED: python3 not found (%v), so the outside-implementation example %s is not audited; install python3 to run it", err, outsideScript)
	}
	s := compileTraceSchema(t)
	cases := []struct {
		name     string
		args     []string
		property spec.Property // "" for a conforming run
		check    spec.Property // the model replay's divergence, for a broken run
		step     int           // the event the model refuses
		total    int64         // the snapshot's total, as reported
	}{
		{name: "correct", total: 150},
		{name: "no-channel-recording", args: []string{"--break", "no-channel-recording"},
			property: spec.PropExactChannelState, check: spec.CheckRecordedState, step: 5, total: 120},
		{name: "non-fifo", args: []string{"--break", "non-fifo"},
			property: spec.PropExactChannelState, check: spec.CheckEnabled, step: 4, total: 120},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, python, append([]string{outsideScript}, c.args...)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "%s %v: %s", outsideScript, c.args, stderr.String())
			path := filepath.Join(t.TempDir(), c.name+".jsonl")
			require.NoError(t, os.WriteFile(path, stdout.Bytes(), 0o644))

			requireBothAccept(t, s, path, stdout.Bytes())
			tr, _, err := ReadTraceFile(path)
			require.NoError(t, err)
			require.Len(t, tr.Recorded, 1)
			assert.Equal(t, c.total, tr.Recorded[0].State().Total(), "the reported snapshot's total")

			r, err := AuditFile(path, Options{})
			require.NoError(t, err)
			require.NoError(t, r.Err)
			if c.property == "" {
				require.True(t, r.OK(), "the correct run must conform:\n%s", r)
				assert.Equal(t, 5, r.Steps)
				assert.Equal(t, 1, r.Snapshots)
				return
			}
			require.False(t, r.OK(), "the broken run must be rejected")
			assert.Equal(t, c.property, r.Property(), "%s", r)
			require.NotNil(t, r.Divergence, "%s", r)
			assert.Equal(t, c.check, r.Divergence.Property, "%s", r)
			assert.Equal(t, c.step, r.Divergence.Step, "%s", r)
			var props []spec.Property
			for _, v := range r.Violations {
				props = append(props, v.Property)
			}
			assert.Contains(t, props, spec.PropConservation, "the snapshot holds $120 of $150")
			t.Logf("%s", r)
		})
	}
}
