package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frozenPeer runs P1 and P2 of a 2-node cluster at full speed (no pause
// between transfers) with the detector's timeout timeoutMS, then stops
// P2 without killing it (SIGSTOP: its connections stay open, nothing is
// acknowledged, no heartbeat comes), so P1's 1 MiB window to P2 fills
// within about a second. It returns the processes and their logs (to be
// read once a process ended) and when P2 froze.
func frozenPeer(t *testing.T, timeoutMS int) (map[string]*exec.Cmd, map[string]*bytes.Buffer, time.Time) {
	t.Helper()
	path := twoNodeConfig(t,
		`"P1": 1000, "P2": 1000`, `"P1": 1000000000, "P2": 1000000000`,
		`"transfers": 400`, `"transfers": 100000000`,
		`"max_amount": 50`, `"max_amount": 5`,
		`"pause_ms": 2`, `"pause_ms": 0`,
		`"initiators": ["P1", "P3"]`, `"initiators": ["P1"]`,
		`"count": 3}`, `"count": 3}, "failures": {"heartbeat_ms": 100, "timeout_ms": `+strconv.Itoa(timeoutMS)+`, "drain_ms": 500, "startup_ms": 5000}`,
	)
	nodes, logs := startNodeProcs(t, path, "60s", "P1", "P2")
	time.Sleep(1500 * time.Millisecond) // the nodes meet and transfers flow
	require.NoError(t, nodes["P2"].Process.Signal(syscall.SIGSTOP))
	return nodes, logs, time.Now()
}

// waitExit waits at most bound for node p to exit and returns its log.
func waitExit(t *testing.T, nodes map[string]*exec.Cmd, logs map[string]*bytes.Buffer, p string, since time.Time, bound time.Duration) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- nodes[p].Wait() }()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("%s still runs %v after P2 froze (a send waiting on P2's full window?)", p, bound)
	}
	out := logs[p].String()
	t.Logf("%s exited %v after P2 froze:\n%s", p, time.Since(since).Round(time.Millisecond), out)
	assert.Equal(t, exitFail, nodes[p].ProcessState.ExitCode(), "a stop with failures")
	return out
}

// assertLostWindow checks that P1's summary names what P2 never
// acknowledged: 30000 transfers or more, over half the 1 MiB window at
// about 18 bytes a frame (a full window held 58255 in every run here;
// the margin is for a loaded machine's slower sender), so P1 met a
// window full or nearly.
func assertLostWindow(t *testing.T, out string) {
	t.Helper()
	lost := regexp.MustCompile(`lost to P2: (\d+) transfers \(total \d+\) never acknowledged`).FindStringSubmatch(out)
	require.NotNil(t, lost, "the transfers P2 never acknowledged are named")
	n, err := strconv.Atoi(lost[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 30000, "the window to P2 filled")
}

// TestNodeFrozenPeer: a sender whose peer froze must not wait on the
// network under its core lock: it suspects the peer at its 3 s timeout,
// names it, and stops on its own with failures (exit 1), its summary
// naming the dead peer and the transfers it never acknowledged. Before
// the fix the workload waited in the full window holding the core lock,
// so the detector never ran (and even SIGTERM hung). About 7 s of real
// processes on loopback.
func TestNodeFrozenPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cluster nodes as OS processes")
	}
	t.Parallel() // it waits on the detector and the processes
	nodes, logs, frozen := frozenPeer(t, 3000)
	out := waitExit(t, nodes, logs, "P1", frozen, 30*time.Second)
	assert.Regexp(t, `P1: suspect P2 \(incarnation [0-9a-f]+\): nothing heard since`, out)
	assert.Regexp(t, `markerwave node: node P1 stopped with failures\n(.*\n)*  dead peer P2 `, out)
	assertLostWindow(t, out)
}

// waitStalled waits, at most bound, until process pid is stalled in
// each of two 250 ms intervals: its threads ran under 30 ms and were
// runnable (running or waiting in the run queue) under half the
// interval, summed over its threads, read from
// /proc/<pid>/task/*/schedstat: its sender waits on the full window.
// It is bounded by what it waits for, not by a guess at how long a
// loaded machine's sender takes to fill the window (a fixed second held
// 15304 of its 58255 frames at load 15). CPU time alone does not tell a
// stalled sender from a starved one: beside eight other process tests,
// a P1 that had used under 30 ms of CPU in each interval was still
// sending, and held 9733 frames when the SIGTERM came; a starved sender
// is runnable the whole interval, a stalled one only while its timers'
// wake-ups wait for a core (under 16 busy loops, the run queue alone
// held them over 30 ms an interval).
func waitStalled(t *testing.T, pid int, bound time.Duration) {
	t.Helper()
	const interval = 250 * time.Millisecond
	deadline := time.Now().Add(bound)
	last, quiet := schedTimes(t, pid), 0
	for quiet < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("P1 still busy %v after P2 froze: its sender never stalled on the full window", bound)
		}
		time.Sleep(interval)
		now := schedTimes(t, pid)
		ran, waited := now.ran-last.ran, now.waited-last.waited
		if ran >= 0 && waited >= 0 && ran < 30*time.Millisecond && ran+waited < interval/2 {
			quiet++
		} else {
			quiet = 0 // busy or starved, or a thread ended (its times left the sums)
		}
		last = now
	}
}

// schedTimes are how long process pid's threads have run and waited in
// the run queue: the first two fields of each
// /proc/<pid>/task/<tid>/schedstat (nanoseconds), summed.
func schedTimes(t *testing.T, pid int) (s struct{ ran, waited time.Duration }) {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	require.NoError(t, err)
	require.NotEmpty(t, files, "process %d has no threads in /proc", pid)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		require.NoError(t, err)
		fields := strings.Fields(string(b))
		require.Len(t, fields, 3, "%s: %q", f, b)
		ran, err1 := strconv.ParseInt(fields[0], 10, 64)
		waited, err2 := strconv.ParseInt(fields[1], 10, 64)
		require.NoError(t, errors.Join(err1, err2), "%s: %q", f, b)
		s.ran += time.Duration(ran)
		s.waited += time.Duration(waited)
	}
	return s
}

// TestNodeFrozenPeerSIGTERM: SIGTERM once the sender stalled on the full
// window after the peer froze, long
// before its 20 s timeout: the stop does not wait for the workload's
// send stuck on the full window (it finishes first, which refuses that
// send), drains for drain_ms and exits 1 within seconds, naming P2 as
// neither finished nor suspected and what it never acknowledged. About
// 5 s of real processes on loopback.
func TestNodeFrozenPeerSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cluster nodes as OS processes")
	}
	t.Parallel()
	nodes, logs, frozen := frozenPeer(t, 20000)
	waitStalled(t, nodes["P1"].Process.Pid, 15*time.Second)
	require.NoError(t, nodes["P1"].Process.Signal(syscall.SIGTERM))
	out := waitExit(t, nodes, logs, "P1", frozen, 15*time.Second)
	assert.Contains(t, out, "P1: got SIGTERM: stopping")
	assert.NotContains(t, out, "suspect P2", "the stop came before the timeout")
	assert.Contains(t, out, "drain gave up after 500ms: P2 not finished and not suspected")
	assertLostWindow(t, out)
}
