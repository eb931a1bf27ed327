package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/spec"
)

// audit writes res's node logs to a directory and audits them as
// markerwave audit DIR does: every node's log read by the format's
// strict reader, gathered into one run, derived and replayed.
func audit(t *testing.T, res result) conformance.OutsiderReport {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, res.writeLogs(dir))
	t.Chdir(dir) // the report names each log as it was given: N1.jsonl
	var paths []string
	for _, n := range res.names {
		paths = append(paths, n+".jsonl")
	}
	run, err := conformance.ReadOutsiderFiles(paths)
	require.NoError(t, err)
	rep, err := conformance.AuditOutsider(run, conformance.Options{})
	require.NoError(t, err)
	require.NoError(t, rep.Err)
	return rep
}

// requireOwnObservations fails if a log holds a field the simulator
// does not have: no step numbers, seqs, clocks, after states, first
// flags or cut counts; only its own ids, amounts, balances and the
// channel messages it recorded.
func requireOwnObservations(t *testing.T, res result) {
	t.Helper()
	for _, n := range res.names {
		l, err := spec.ReadOutsider(bytes.NewReader(res.logs[n].Bytes()))
		require.NoError(t, err)
		for _, e := range l.Events {
			require.True(t, e.Step == 0 && e.Seq == 0 && e.VC == nil && e.After == nil && e.First == nil,
				"%s logged a field it does not have: %+v", n, e)
			require.True(t, e.State == nil || e.State.Sent == nil && e.State.Rcvd == nil, "%s logged counters: %+v", n, e)
		}
		for _, s := range l.Snapshots {
			for k, c := range s.Chans {
				require.True(t, c.Sent == nil && c.Got == nil, "%s reported cut counts for %s", n, k)
			}
		}
	}
}

// TestDessimConforms: the simulator's correct runs, at eight seeds
// (two concurrent snapshots each, "0" and "b"), conform; the reported
// snapshots and the marker sends are checked on the implementation's
// own values, not on derived ones. So does a run of five nodes.
func TestDessimConforms(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		res, err := simulate(defaultConfig(seed))
		require.NoError(t, err)
		requireOwnObservations(t, res)
		rep := audit(t, res)
		require.True(t, rep.OK(), "seed %d:\n%s", seed, rep)
		assert.Equal(t, 2, rep.Snapshots, "seed %d", seed)
		s := rep.String()
		for _, own := range []string{"message ids,", "marker sends, 6 of 6", "recorded local states, 6 of 6", "recorded channel states, 12 of 12"} {
			assert.Contains(t, s[:strings.Index(s, "derived from the log")], own, "seed %d: checked on the implementation's own values", seed)
		}
	}
	cfg := defaultConfig(9)
	cfg.nodes = 5
	res, err := simulate(cfg)
	require.NoError(t, err)
	rep := audit(t, res)
	require.True(t, rep.OK(), "five nodes:\n%s", rep)
	assert.Equal(t, 2, rep.Snapshots)
}

// TestDessimBugs: each injected bug, at a seed where it changes the run
// (the simulator says so), is rejected with its property, and the
// report explains it in the simulator's terms: its nodes, its snapshot
// ids ("0", "b"), its nodes' own steps.
func TestDessimBugs(t *testing.T) {
	cases := []struct {
		bug      bug
		seed     uint64
		property spec.Property
		wording  []string
	}{
		{noChannelRecording, 1, spec.PropExactChannelState, []string{
			`violates ExactChannelState (snapshot 0): N2->N1 recorded <<>>, want <<`,
			`(sent before N2 recorded, received after N1 recorded)`}},
		{channelAfterMarker, 7, spec.PropExactChannelState, []string{
			`diverges at step 42 (N1.jsonl: trace line 17): RecvMarker(N2, N1) [snap 0]`,
			`violates ExactChannelState (snapshot 0): N3->N1 recorded <<79 (id "N3/1"), 74 (id "N3/4")>>, want <<79 (id "N3/1")>>`}},
		{lateState, 1, spec.PropConservation, []string{
			`note: N2 recorded snapshot "b" at its step 9 (N2.jsonl: trace line 10), after its first marker of it (step 5, N2.jsonl: trace line 6) and 1 send or receive since: the spec records at the marker`,
			`proc N2: [bal=160 sent=2 rcvd=2] vs [bal=127 sent=2 rcvd=2]`}},
		{noForwarding, 1, spec.PropSnapshotsComplete, []string{
			`the implementation never sent a marker the spec sends: N1 never sent snapshot "b"'s marker on N1->N2 after recording at its step 11`}},
		{oldestOnly, 2, spec.PropExactChannelState, []string{
			`violates ExactChannelState (snapshot "b"): N2->N1 recorded <<>>, want <<6 (id "N2/2"), 8 (id "N2/3")>>`}},
	}
	for _, c := range cases {
		t.Run(string(c.bug), func(t *testing.T) {
			cfg := defaultConfig(c.seed)
			cfg.bug = c.bug
			res, err := simulate(cfg)
			require.NoError(t, err)
			require.True(t, res.fired, "bug %s does not change the run at seed %d", c.bug, c.seed)
			requireOwnObservations(t, res)
			rep := audit(t, res)
			require.False(t, rep.OK(), "bug %s conforms:\n%s", c.bug, rep)
			assert.Equal(t, c.property, rep.Property(), "%s", rep)
			for _, w := range c.wording {
				assert.Contains(t, rep.String(), w)
			}
		})
	}
}

// TestDessimQuietBugs: at a seed where a bug does not change the run
// (no concurrent recording, no message behind a marker), the run
// conforms: the audit rejects what the run did, not the flag.
func TestDessimQuietBugs(t *testing.T) {
	for _, c := range []struct {
		bug  bug
		seed uint64
	}{{channelAfterMarker, 1}, {oldestOnly, 1}} {
		cfg := defaultConfig(c.seed)
		cfg.bug = c.bug
		res, err := simulate(cfg)
		require.NoError(t, err)
		require.False(t, res.fired, "%s at seed %d", c.bug, c.seed)
		assert.True(t, audit(t, res).OK(), "%s at seed %d", c.bug, c.seed)
	}
}

// TestDessimCLI: the command writes one log a node; bad arguments exit
// 2 naming what was wrong.
func TestDessimCLI(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.Equal(t, 0, cli([]string{"-seed", "3", "-out", dir}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "dessim: 3 nodes, ")
	for _, n := range []string{"N1", "N2", "N3"} {
		_, err := os.Stat(filepath.Join(dir, n+".jsonl"))
		assert.NoError(t, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-out", dir, "-bug", "typo"}, `dessim: -bug "typo": want one of no-channel-recording, channel-after-marker, late-state, no-forwarding, oldest-only`},
		{[]string{"-seed", "1"}, "dessim: -out: missing"},
		{[]string{"-out", dir, "-nodes", "1"}, "dessim: -nodes 1: want 2 to 26"},
		{[]string{"-teleport"}, "flag provided but not defined: -teleport"},
	} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 2, cli(c.args, &out, &errb), c.args)
		assert.Contains(t, errb.String(), c.want, c.args)
	}
}
