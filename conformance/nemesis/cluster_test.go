package nemesis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/markerwave/markerwave/conformance/loopback"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// procs are the cluster's nodes; every ordered pair is a channel.
var procs = []spec.ProcID{"P1", "P2", "P3"}

// initialMoney is each node's starting balance.
const initialMoney = 1000

// Failure detection of the nodes: short enough that a cycle takes a
// second or two, long enough that a cut shorter than timeoutMS is
// usually ridden out without a suspicion.
const (
	heartbeatMS = 50
	timeoutMS   = 500
	drainMS     = 600
)

// built is the markerwave binary the tests of this package share: built
// once (the nemesis and the supervised nemesis each run it), removed by
// TestMain.
var built struct {
	once sync.Once
	dir  string
	exe  string
	err  error
	out  []byte
}

// buildMarkerwave builds the markerwave binary into a temporary
// directory, once per test binary. It is linked without the DWARF and
// symbol tables (-ldflags=-s -w: a third less link time; nobody debugs
// it, and a panic's traceback keeps file:line).
func buildMarkerwave(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "markerwave-nemesis-"); built.err != nil {
			return
		}
		built.exe = filepath.Join(built.dir, "markerwave")
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", built.exe, "github.com/markerwave/markerwave/cmd/markerwave")
		built.out, built.err = cmd.CombinedOutput()
	})
	require.NoError(t, built.err, "go build: %s", built.out)
	return built.exe
}

// cluster is the nodes' addresses and configs, the proxies between them
// and the running node processes.
type cluster struct {
	t       *testing.T
	exe     string
	dir     string
	everyMS int                    // each node initiates a snapshot every everyMS
	listen  map[spec.ProcID]string // where each node listens
	// proxies[{from,to}] carries channel from->to: from's config names
	// the proxy as to's address.
	proxies map[spec.Channel]*toxiproxy.Proxy
	// configs[p] is p's config file; canonical has the real addresses
	// (for markerwave recover, which checks that they are free).
	configs   map[spec.ProcID]string
	canonical string
	nodes     map[spec.ProcID]*node
}

// node is one running markerwave node process.
type node struct {
	id     spec.ProcID
	cmd    *exec.Cmd
	out    *lineLog
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// lineLog keeps a process's stderr and stdout lines with the time each
// arrived, and wakes waiters on every line.
type lineLog struct {
	mu    sync.Mutex
	lines []timedLine
	wake  chan struct{}
}

type timedLine struct {
	at   time.Time
	text string
}

func newLineLog() *lineLog { return &lineLog{wake: make(chan struct{})} }

func (l *lineLog) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, timedLine{time.Now(), s})
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// first returns the first line at or after since matching re.
func (l *lineLog) first(re *regexp.Regexp, since time.Time) (timedLine, bool, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if !x.at.Before(since) && re.MatchString(x.text) {
			return x, true, l.wake
		}
	}
	return timedLine{}, false, l.wake
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, x := range l.lines {
		fmt.Fprintf(&b, "%s %s\n", x.at.Format("15:04:05.000"), x.text)
	}
	return b.String()
}

// freeAddrs returns n distinct loopback addresses free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs, err := loopback.FreeAddrs(n)
	require.NoError(t, err)
	return addrs
}

// newCluster picks the addresses, starts one toxiproxy proxy per channel
// (listening on 127.0.0.1 only) and writes the configs: a snapshot every
// everyMS from each node.
func newCluster(t *testing.T, exe string, seed uint64, everyMS int) *cluster {
	c := &cluster{t: t, exe: exe, dir: t.TempDir(), everyMS: everyMS, listen: map[spec.ProcID]string{},
		proxies: map[spec.Channel]*toxiproxy.Proxy{}, configs: map[spec.ProcID]string{}, nodes: map[spec.ProcID]*node{}}
	for i, addr := range freeAddrs(t, len(procs)) {
		c.listen[procs[i]] = addr
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for _, from := range procs {
		for _, to := range procs {
			if from == to {
				continue
			}
			ch := spec.Channel{From: from, To: to}
			px := toxiproxy.NewProxy(srv, string(from)+"->"+string(to), "127.0.0.1:0", c.listen[to])
			require.NoError(t, px.Start())
			t.Cleanup(px.Stop)
			c.proxies[ch] = px
		}
	}
	for _, p := range procs {
		addrs := map[spec.ProcID]string{}
		for _, q := range procs {
			if q == p {
				addrs[q] = c.listen[q]
			} else {
				addrs[q] = c.proxies[spec.Channel{From: p, To: q}].Listen
			}
		}
		c.configs[p] = c.writeConfig(string(p), addrs, seed)
	}
	c.canonical = c.writeConfig("canonical", c.listen, seed)
	return c
}

// writeConfig writes a cluster file in which node q listens at addrs[q]
// (for the node that reads it, the address it dials q at).
func (c *cluster) writeConfig(name string, addrs map[spec.ProcID]string, seed uint64) string {
	nodes := map[string]any{}
	bal := map[string]int{}
	var chans []map[string]string
	for _, p := range procs {
		nodes[string(p)] = map[string]string{"listen": addrs[p]}
		bal[string(p)] = initialMoney
		for _, q := range procs {
			if p != q {
				chans = append(chans, map[string]string{"from": string(p), "to": string(q)})
			}
		}
	}
	cfg := map[string]any{
		"topology":     map[string]any{"procs": procs, "channels": chans},
		"nodes":        nodes,
		"app":          map[string]any{"kind": "bank", "balances": bal},
		"trace_dir":    filepath.Join(c.dir, "nodes"),
		"snapshot_dir": filepath.Join(c.dir, "snapshots"),
		"workload":     map[string]any{"transfers": 1000000, "max_amount": 40, "pause_ms": 3, "seed": seed},
		"snapshots":    map[string]any{"initiators": procs, "every_ms": c.everyMS, "count": 100000},
		"failures":     map[string]any{"heartbeat_ms": heartbeatMS, "timeout_ms": timeoutMS, "drain_ms": drainMS, "startup_ms": 5000},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(c.t, err)
	path := filepath.Join(c.dir, name+".json")
	require.NoError(c.t, os.WriteFile(path, b, 0o644))
	return path
}

// start runs node p (args after --config FILE --id p: e.g. --restore N).
func (c *cluster) start(p spec.ProcID, args ...string) {
	c.t.Helper()
	c.nodes[p] = c.startProcess(p, append([]string{"node", "--config", c.configs[p], "--id", string(p)}, args...)...)
}

// startProcess runs markerwave with args as process id, its stdout and
// stderr lines kept with their times; the test's end kills it.
func (c *cluster) startProcess(id spec.ProcID, args ...string) *node {
	c.t.Helper()
	cmd := exec.Command(c.exe, args...)
	n := &node{id: id, cmd: cmd, out: newLineLog(), exited: make(chan struct{})}
	pr, pw, err := os.Pipe()
	require.NoError(c.t, err)
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(c.t, cmd.Start())
	pw.Close()
	var reading sync.WaitGroup
	reading.Add(1)
	go func() {
		defer reading.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			n.out.add(sc.Text())
		}
		pr.Close()
	}()
	go func() {
		n.err = cmd.Wait()
		reading.Wait()
		close(n.exited)
	}()
	c.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-n.exited
	})
	return n
}

// stop sends sig to p and waits for it to exit, at most within d; it
// returns p's exit code.
func (c *cluster) stop(p spec.ProcID, sig os.Signal, d time.Duration) int {
	c.t.Helper()
	_ = c.nodes[p].cmd.Process.Signal(sig)
	return c.wait(p, d)
}

// wait waits, at most d, for p to exit and returns its exit code.
func (c *cluster) wait(p spec.ProcID, d time.Duration) int {
	c.t.Helper()
	code := c.waitExit(c.nodes[p], d)
	delete(c.nodes, p)
	return code
}

// waitExit waits, at most d, for process n to exit and returns its exit
// code.
func (c *cluster) waitExit(n *node, d time.Duration) int {
	c.t.Helper()
	select {
	case <-n.exited:
	case <-time.After(d):
		c.t.Fatalf("%s did not exit within %v; its output:\n%s", n.id, d, n.out)
	}
	return n.cmd.ProcessState.ExitCode()
}

// waitLine waits, at most d, for a line of p's output at or after since
// matching re.
func (c *cluster) waitLine(p spec.ProcID, re *regexp.Regexp, since time.Time, d time.Duration) (timedLine, bool) {
	return waitLineOf(c.nodes[p], re, since, d)
}

// waitLineOf waits, at most d, for a line of process n's output at or
// after since matching re.
func waitLineOf(n *node, re *regexp.Regexp, since time.Time, d time.Duration) (timedLine, bool) {
	deadline := time.After(d)
	for {
		x, ok, wake := n.out.first(re, since)
		if ok {
			return x, true
		}
		select {
		case <-wake:
		case <-n.exited:
			x, ok, _ := n.out.first(re, since)
			return x, ok
		case <-deadline:
			return timedLine{}, false
		}
	}
}

// run runs markerwave with args, returning its exit code and output; a
// command that takes over two minutes is killed (a hang fails the test).
func (c *cluster) run(ctx context.Context, args ...string) (int, string, string) {
	c.t.Helper()
	return c.runWithin(ctx, 2*time.Minute, args...)
}

// runWithin is run with its own bound d: the audit of a long history
// (tens of thousands of steps) on a loaded machine takes minutes.
func (c *cluster) runWithin(ctx context.Context, d time.Duration, args ...string) (int, string, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.exe, args...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil || ctx.Err() != nil {
		c.t.Fatalf("markerwave %s: %v (%v)\n%s%s", strings.Join(args, " "), err, ctx.Err(), &out, &errs)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errs.String()
}

// balanceRe is a node's last words on its balance.
var balanceRe = regexp.MustCompile(`^(P\d+): stopped: balance (\d+),`)

// finalBalance is the balance the node whose output is l said it
// stopped with.
func finalBalance(l *lineLog) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if m := balanceRe.FindStringSubmatch(x.text); m != nil {
			b, err := strconv.ParseInt(m[2], 10, 64)
			return b, err == nil
		}
	}
	return 0, false
}
