package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/markerwave/markerwave/internal/testenv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// outsideScript is the worked example of auditing an implementation that
// is not this project's: the article's two accounts run by a small
// Chandy-Lamport implementation in Python, which logs what its processes
// observe in the outsider format (examples/outside-python/README.md).
const outsideScript = "../examples/outside-python/twoaccounts.py"

// TestOutsideImplementation runs the Python implementation, correct and
// broken, and audits each log as markerwave audit does (an outsider
// log: ReadOutsiderFiles, AuditOutsider): the correct run conforms with
// its snapshot of $150; a run that records no channel state, and one
// whose channel lets P1's marker overtake the $30, are rejected with
// ExactChannelState (the $30 in flight is missing from the snapshot,
// which holds $120), each at the step the model refuses. The log holds
// only what the script observes (no seqs, clocks, after states, first
// flags or cut counts), the recorded channel state is checked on the
// script's own ids, and every line is valid under
// traces/outsider.schema.json.
func TestOutsideImplementation(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("python3 not found (%v), so the outside-implementation example %s is not audited", err, outsideScript), "install python3 to run it")
	}
	header, later := compileOutsiderSchema(t)
	cases := []struct {
		name     string
		args     []string
		property spec.Property // "" for a conforming run
		check    spec.Property // the model replay's divergence, for a broken run
		step     int           // the event the model refuses
		total    int64         // the reported snapshot's balances and recorded messages
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

			require.NoError(t, validateOutsider(header, later, stdout.Bytes()), "%s", stdout.String())
			l, err := spec.ReadOutsider(bytes.NewReader(stdout.Bytes()))
			require.NoError(t, err)
			requireObservedOnly(t, l)
			require.Len(t, l.Snapshots, 1)
			assert.Equal(t, c.total, reportedTotal(l, l.Snapshots[0]), "the reported snapshot's total")

			run, err := ReadOutsiderFiles([]string{path})
			require.NoError(t, err)
			r, err := AuditOutsider(run, Options{})
			require.NoError(t, err)
			require.NoError(t, r.Err)
			assert.Contains(t, r.String(), "recorded channel states, 2 of 2 (RecordedState, ExactChannelState)", "checked on the script's own values")
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

// requireObservedOnly fails if l holds a field the format can derive:
// an outside implementation that has no step numbers, seqs, clocks,
// after states, first flags or cut counts logs none.
func requireObservedOnly(t *testing.T, l spec.OutsiderLog) {
	t.Helper()
	for i, e := range l.Events {
		require.True(t, e.Step == 0 && e.Seq == 0 && e.VC == nil && e.After == nil && e.First == nil,
			"line %d logs a derivable field: %+v", l.EventLines[i], e)
	}
	for i, s := range l.Snapshots {
		for k, c := range s.Chans {
			require.True(t, c.Sent == nil && c.Got == nil, "line %d: %s has cut counts", l.SnapshotLines[i], k)
		}
	}
}

// reportedTotal is the money in a reported snapshot: its recorded
// balances and the amounts of the messages it recorded, by the amounts
// their sends carried.
func reportedTotal(l spec.OutsiderLog, s spec.OutsiderSnapshot) int64 {
	amount := map[spec.ObsID]int64{}
	for _, e := range l.Events {
		if e.Ev == spec.ObsSend && e.ID != nil {
			amount[*e.ID] = *e.Amount
		}
	}
	var total int64
	for _, st := range s.Procs {
		total += *st.Bal
	}
	for _, c := range s.Chans {
		for _, id := range c.IDs {
			total += amount[id]
		}
		for _, a := range c.Amounts {
			total += a
		}
	}
	return total
}
