package main

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/runtime"
)

// TestAuditKill9 audits a run with a crash, as left on disk: three node
// processes run with transfers and snapshots, P2 is killed with SIGKILL,
// the survivors suspect it, abort the snapshots that wait for it and stop
// sending to it, and stop at the end of their duration. markerwave audit
// merges the three logs (P2's cut short by the kill) and replays the
// suspicions, aborts and dropped markers against
// tla/ChandyLamportFaults.tla: the run conforms. A few seconds of real
// processes on loopback.
func TestAuditKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cluster nodes as OS processes")
	}
	t.Parallel() // it waits on processes and timers (waitersParallel)
	path := threeNodeConfig(t,
		`"transfers": 400`, `"transfers": 5000`,
		`"pause_ms": 2`, `"pause_ms": 5`,
		`"every_ms": 250`, `"every_ms": 20`,
		`"count": 3}`, `"count": 100}, "failures": {"heartbeat_ms": 20, "timeout_ms": 200, "drain_ms": 300, "startup_ms": 500}`,
	)
	cfg, err := runtime.LoadConfig(path, "")
	require.NoError(t, err)
	nodes, logs := startNodeProcs(t, path, "2500ms")
	// The crash, once the cluster has made transfers and snapshots.
	time.Sleep(900 * time.Millisecond)
	require.NoError(t, nodes["P2"].Process.Signal(syscall.SIGKILL))
	_ = nodes["P2"].Wait()
	for _, id := range []string{"P1", "P3"} {
		_ = nodes[id].Wait() // exit 1: a stop with failures (the dead P2)
	}
	for _, id := range []string{"P1", "P3"} {
		out := logs[id].String()
		require.Contains(t, out, id+": suspect P2", "%s's output:\n%s", id, out)
	}

	code, out, errs := runCmd(runAudit, cfg.TraceDir)
	t.Logf("markerwave audit %s:\n%s%s\nP1: %s\nP3: %s", cfg.TraceDir, out, errs, logs["P1"], logs["P3"])
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	// A snapshot P2 was part of when it was killed is aborted (by a
	// survivor waiting for its marker, or, its part missing, by the
	// spec's fair Abort), and said so after the verdict in the words of
	// the node logs; none is left "incomplete:" (issue #20).
	assert.Regexp(t, `^`+regexp.QuoteMeta(cfg.TraceDir)+` \(3 node logs merged\): conforms: \d+ steps, \d+ snapshots?, all properties hold\n(  snapshot \d+ aborted: (its initiator )?P2 is suspected \(crashed or unreachable\)\n)*(  \.\.\. and \d+ more snapshots aborted \(--json lists them all\)\n)?$`, out)
	// Whether a snapshot was under way at the kill (and so aborted, its
	// markers dropped) depends on the timing; traces/conforms holds such
	// a run recorded by this test.
	if strings.Contains(logs["P1"].String()+logs["P3"].String(), "abort snapshot") {
		t.Log("the run aborted a snapshot")
	}
}
