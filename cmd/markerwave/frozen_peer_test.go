package main

import (
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNodeFrozenPeer: a peer that stops reading without dying (SIGSTOP:
// its connections stay open, nothing is acknowledged, no heartbeat
// comes) fills its sender's window, 1 MiB of transfers, well before the
// 3 s timeout. The sender must not wait on the network under its core
// lock: it suspects the peer within the detection bound, names it, and
// stops on its own with failures (exit 1), its summary naming the dead
// peer and the transfers it never acknowledged. Before the fix the
// workload waited in the full window holding the core lock, so the
// detector never ran and even SIGTERM hung. About 6 s of real processes
// on loopback.
func TestNodeFrozenPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cluster nodes as OS processes")
	}
	t.Parallel() // it waits on the detector and the processes
	addrs := freeAddrs(t, 2)
	path := nodeConfig(t,
		`"procs": ["P1", "P2", "P3"]`, `"procs": ["P1", "P2"]`,
		`{"from": "P2", "to": "P3"}, {"from": "P3", "to": "P2"},`, ``,
		`{"from": "P3", "to": "P1"}, {"from": "P1", "to": "P3"}`, ``,
		`{"from": "P2", "to": "P1"},`, `{"from": "P2", "to": "P1"}`,
		`"127.0.0.1:7101"`, `"`+addrs[0]+`"`,
		`"127.0.0.1:7102"},`, `"`+addrs[1]+`"}`,
		`"P3": {"listen": "127.0.0.1:7103"}`, ``,
		`"P1": 1000, "P2": 1000, "P3": 1000`, `"P1": 1000000000, "P2": 1000000000`,
		`"transfers": 400`, `"transfers": 100000000`,
		`"max_amount": 50`, `"max_amount": 5`,
		`"pause_ms": 2`, `"pause_ms": 0`,
		`"initiators": ["P1", "P3"]`, `"initiators": ["P1"]`,
		`"count": 3}`, `"count": 3}, "failures": {"heartbeat_ms": 100, "timeout_ms": 3000, "drain_ms": 500, "startup_ms": 5000}`,
	)
	nodes, logs := startNodeProcs(t, path, "60s", "P1", "P2")
	time.Sleep(1500 * time.Millisecond) // the nodes meet and transfers flow (the logs are read once each process ends)
	require.NoError(t, nodes["P2"].Process.Signal(syscall.SIGSTOP))
	frozen := time.Now()
	done := make(chan error, 1)
	go func() { done <- nodes["P1"].Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("P1 still runs 30 s after P2 froze (a send waiting on P2's full window?)")
	}
	out := logs["P1"].String()
	t.Logf("P1 stopped %v after P2 froze:\n%s", time.Since(frozen).Round(time.Millisecond), out)
	assert.Equal(t, exitFail, nodes["P1"].ProcessState.ExitCode(), out)
	assert.Regexp(t, `P1: suspect P2 \(incarnation [0-9a-f]+\): nothing heard since`, out)
	assert.Regexp(t, `markerwave node: node P1 stopped with failures\n(.*\n)*  dead peer P2 `, out)
	lost := regexp.MustCompile(`lost to P2: (\d+) transfers \(total \d+\) never acknowledged \(P2 dead\)`).FindStringSubmatch(out)
	require.NotNil(t, lost, "the transfers P2 never acknowledged are named")
	// A transfer's frame is at most about 20 bytes here: 40000 of them
	// are most of the 1 MiB window, so the sender did meet a full one.
	n, err := strconv.Atoi(lost[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 40000, "the window to P2 filled before the timeout")
}
