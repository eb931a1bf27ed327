package conformance

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// clocked is a shipped trace with the clocks of some lines replaced
// (a nil clock: the line gives none), replayed with its lines.
func clocked(t *testing.T, name string, vc map[int][]uint64) Report {
	t.Helper()
	tr, lines, err := ReadTraceFile(filepath.Join("..", "traces", name))
	require.NoError(t, err)
	tr = cloneTrace(tr)
	for line, v := range vc {
		i := -1
		for k, l := range lines.Events {
			if l == line {
				i = k
			}
		}
		require.GreaterOrEqual(t, i, 0, "%s has no event at line %d", name, line)
		tr.Events[i].VC = v
	}
	return Replay(tr, Options{Lines: lines.Events, RecordedLines: lines.Recorded, RestoreLines: lines.Restores})
}

// TestReplayGivenClocks: a clock a markerwave-trace/3 event gives is
// checked against the clocks its events imply, as the outsider audit
// checks its logs' (givenClocks.check): each bad clock is bad input
// (Report.Err), named by line, process, entry and what it must be.
func TestReplayGivenClocks(t *testing.T) {
	cases := []struct {
		name, trace string
		vc          map[int][]uint64
		want        string
	}{
		{"own entry past its steps", "conforms/token-ring.jsonl", map[int][]uint64{4: {1, 3, 0}},
			`trace line 4, P2's RecvMarker: field "vc": [1 3 0]: entry P2 (its own) is 3, but this is P2's step 2 of the incarnation (each of its events is one)`},
		{"receive below its send", "conforms/token-ring.jsonl", map[int][]uint64{5: {0, 0, 1}},
			`trace line 5, P3's RecvApp: field "vc": [0 0 1]: entry P2 is 0, but it must cover [0 1 0], the clock of the step it receives from (trace line 3, P2's SendApp), as that line gives it: want at least 1`},
		{"receive below an unclocked send", "conforms/token-ring.jsonl", map[int][]uint64{3: nil, 5: {0, 0, 1}},
			`trace line 5, P3's RecvApp: field "vc": [0 0 1]: entry P2 is 0, but it must cover [0 1 0], the clock of the step it receives from (trace line 3, P2's SendApp), as the audit counts it (that line gives none): want at least 1`},
		// The marker is sent by the recording step, P3's first RecvMarker.
		{"marker receipt below the sender's recording", "conforms/token-ring.jsonl", map[int][]uint64{7: {2, 1, 2}},
			`trace line 7, P1's RecvMarker: field "vc": [2 1 2]: entry P2 is 1, but it must cover [1 2 2], the clock of the step it receives from (trace line 6, P3's RecvMarker), as that line gives it: want at least 2`},
		{"another's entry past its steps", "conforms/token-ring.jsonl", map[int][]uint64{2: {1, 0, 5}},
			`trace line 2, P1's Initiate: field "vc": [1 0 5]: entry P3 is 5, but P3 takes 2 steps in the incarnation`},
		{"a clock going back", "conforms/token-ring.jsonl", map[int][]uint64{3: {0, 1, 1}},
			`trace line 4, P2's RecvMarker: field "vc": [1 2 0]: entry P3 is 0, below the 1 of P2's clock before (trace line 3, P2's SendApp: [0 1 1]): a clock never goes back`},
		// Clocks count from the start of an incarnation.
		{"a clock counting the incarnation before", "conforms/crash-recovery.jsonl", map[int][]uint64{12: {5, 0}},
			`trace line 12, P1's SendApp: field "vc": [5 0]: entry P1 (its own) is 5, but this is P1's step 1 of the incarnation (each of its events is one)`},
		// A marker dropped is received from the sender's recording step.
		{"marker dropped below the sender's recording", "conforms/crash-abort.jsonl", map[int][]uint64{6: {0, 0, 3}},
			`trace line 6, P3's DropMarker: field "vc": [0 0 3]: entry P1 is 0, but it must cover [1 0 0], the clock of the step it receives from (trace line 2, P1's Initiate), as that line gives it: want at least 1`},
		// The scenario's clock before receiveTwice shifted the clocks that
		// heard from the copy (traces/rejects/ExactlyOnce-recorded-message-twice).
		{"the recorded-twice trace's old clock", "rejects/ExactlyOnce-recorded-message-twice.jsonl", map[int][]uint64{17: {3, 3}},
			`trace line 17, P1's RecvMarker: field "vc": [3 3]: entry P2 is 3, but it must cover [2 4], the clock of the step it receives from (trace line 16, P2's RecvMarker), as that line gives it: want at least 4`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := clocked(t, c.trace, c.vc)
			require.Error(t, r.Err, "%s", r)
			assert.Equal(t, c.want, r.Err.Error())
		})
	}

	// A clock is optional on each event: some given, some not, and those
	// given checked against the count of all.
	r := clocked(t, "conforms/token-ring.jsonl", map[int][]uint64{2: nil, 3: nil, 6: nil})
	assert.True(t, r.OK(), "%s", r)
	// The incarnation after a restore counts afresh; a message sent again
	// in it (P1->P2 #2) is received from its own incarnation's send.
	r = clocked(t, "conforms/crash-recovery.jsonl", nil)
	assert.True(t, r.OK(), "%s", r)
	r = clocked(t, "conforms/crash-recovery.jsonl", map[int][]uint64{14: {0, 2}})
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), `trace line 14, P2's RecvApp: field "vc": [0 2]: entry P1 is 0, but it must cover [1 0], the clock of the step it receives from (trace line 12, P1's SendApp)`)
}

// TestReplayGivenClocksWithoutLines: a trace replayed without its file
// lines (a merge of node logs) names the event by its number.
func TestReplayGivenClocksWithoutLines(t *testing.T) {
	tr, _, err := ReadTraceFile(filepath.Join("..", "traces", "conforms", "token-ring.jsonl"))
	require.NoError(t, err)
	tr = cloneTrace(tr)
	tr.Events[3].VC = spec.VectorClock{0, 0, 1}
	r := Replay(tr, Options{})
	require.Error(t, r.Err)
	assert.Equal(t, `event 4, P3's RecvApp: field "vc": [0 0 1]: entry P2 is 0, but it must cover [0 1 0], the clock of the step it receives from (event 2, P2's SendApp), as that line gives it: want at least 1`, r.Err.Error())
}
