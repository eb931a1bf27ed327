// Command dessim is a second, independent implementation of Chandy and
// Lamport 1985's snapshot algorithm, written as a discrete-event
// simulator: bank branches on a complete graph of FIFO links with random
// delays, an event queue in virtual time, its own frames, local
// snapshots and ids (transfers "N1/3", snapshots "0" and "b"). It knows
// nothing of markerwave's implementation or model: it is instrumented
// with the instrument package alone, one call at each point of the
// algorithm, and each node writes its own outsider log:
//
//	go run ./examples/dessim -seed 1 -out /tmp/dessim
//	go run ./cmd/markerwave audit /tmp/dessim
//
// -bug injects one of five bugs (bugs.go); TestDessim checks that every
// correct run conforms and that each bug is rejected with its property.
package main

import (
	"bytes"
	"container/heap"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/markerwave/markerwave/instrument"
)

// config is one simulation's parameters.
type config struct {
	seed     uint64
	nodes    int
	budget   int     // transfers each node makes
	maxDelay float64 // a link's delay is 1 + up to this much
	think    float64 // a node waits 1 + up to this much between transfers
	bug      bug
	// snapshots are initiated at these times by these nodes.
	snapshots  []initiation
	initiators map[string]string
}

// initiation is a snapshot to start: when, where, its id.
type initiation struct {
	at   float64
	node int
	snap string
}

// defaultConfig is a run of three nodes with two concurrent snapshots.
func defaultConfig(seed uint64) config {
	return config{seed: seed, nodes: 3, budget: 6, maxDelay: 6, think: 3,
		snapshots: []initiation{{at: 4, node: 0, snap: "0"}, {at: 5, node: 2, snap: "b"}}}
}

// result is a finished simulation: each node's log, what the bug did.
type result struct {
	names  []string
	logs   map[string]*bytes.Buffer
	fired  bool
	events int
}

// simulate runs cfg to the end and returns every node's log.
func simulate(cfg config) (result, error) {
	if cfg.nodes < 2 || cfg.nodes > 26 {
		return result{}, fmt.Errorf("-nodes %d: want 2 to 26", cfg.nodes)
	}
	w := &world{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 17)), fired: map[bug]bool{}}
	res := result{logs: map[string]*bytes.Buffer{}}
	if err := w.populate(&res); err != nil {
		return result{}, err
	}
	if err := w.run(); err != nil {
		return result{}, err
	}
	for _, n := range w.nodes {
		if err := n.rec.Close(); err != nil {
			return result{}, err
		}
	}
	res.fired, res.events = w.fired[cfg.bug], w.events
	return res, nil
}

// populate makes the nodes, their links and logs, and schedules their
// first wake-ups and the snapshots.
func (w *world) populate(res *result) error {
	c := instrument.Config{Run: fmt.Sprintf("dessim-seed-%d-%s", w.cfg.seed, w.cfg.bug), InitBal: map[string]int64{},
		Drained: true, Source: "examples/dessim"}
	for i := range w.cfg.nodes {
		name := fmt.Sprintf("N%d", i+1)
		c.Procs = append(c.Procs, name)
		c.InitBal[name] = 100
		w.nodes = append(w.nodes, &node{w: w, index: i, name: name, balance: 100, budget: w.cfg.budget, local: map[string]*localSnapshot{}})
	}
	for _, n := range w.nodes {
		res.names = append(res.names, n.name)
		res.logs[n.name] = &bytes.Buffer{}
		rec, err := instrument.NewNode(res.logs[n.name], c, n.name)
		if err != nil {
			return err
		}
		n.rec = rec
		w.connect(n)
	}
	return w.scheduleStarts()
}

// connect gives n a link to every other node.
func (w *world) connect(n *node) {
	for _, m := range w.nodes {
		if m != n {
			l := &link{from: n, to: m}
			n.out = append(n.out, l)
			m.in = append(m.in, l)
		}
	}
}

// scheduleStarts schedules every node's first wake-up and the snapshots.
func (w *world) scheduleStarts() error {
	for _, n := range w.nodes {
		w.schedule(&occurrence{at: w.rng.Float64() * w.cfg.think, what: tick, node: n.index})
	}
	w.cfg.initiators = map[string]string{}
	for _, s := range w.cfg.snapshots {
		if s.node < 0 || s.node >= len(w.nodes) {
			return fmt.Errorf("snapshot %s: no node %d", s.snap, s.node+1)
		}
		w.cfg.initiators[s.snap] = w.nodes[s.node].name
		w.schedule(&occurrence{at: s.at, what: initiate, node: s.node, snap: s.snap})
	}
	heap.Init(&w.queue)
	return nil
}

// writeLogs writes each node's log to dir/NODE.jsonl.
func (r result) writeLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range r.names {
		if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), r.logs[name].Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() { os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr)) }

// cli runs the command: 0 done, 2 bad arguments or a failed write.
func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dessim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "the random seed (the run is a function of it)")
	nodes := fs.Int("nodes", 3, "how many nodes, 2 to 26")
	bugName := fs.String("bug", "", "inject a bug: "+strings.Join(bugNames(), ", "))
	out := fs.String("out", "", "the directory to write each node's log to (NODE.jsonl); required")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := configure(*seed, *nodes, *bugName, *out)
	var res result
	if err == nil {
		res, err = simulateTo(cfg, *out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dessim: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "dessim: %d nodes, %d simulated events, logs in %s\n", cfg.nodes, res.events, *out)
	if cfg.bug != "" && !res.fired {
		fmt.Fprintf(stdout, "dessim: bug %s did not change this run (try another -seed)\n", cfg.bug)
	}
	return 0
}

// configure is the run the flags ask for: the default one with that seed,
// node count and bug; out (the log directory) is required.
func configure(seed uint64, nodes int, bugName, out string) (config, error) {
	cfg := defaultConfig(seed)
	cfg.nodes = nodes
	b, err := parseBug(bugName)
	if err != nil {
		return cfg, err
	}
	if out == "" {
		return cfg, errors.New("-out: missing: the directory to write the node logs to")
	}
	cfg.bug = b
	return cfg, nil
}

// simulateTo runs cfg and writes each node's log into dir.
func simulateTo(cfg config, dir string) (result, error) {
	res, err := simulate(cfg)
	if err != nil {
		return res, err
	}
	return res, res.writeLogs(dir)
}
