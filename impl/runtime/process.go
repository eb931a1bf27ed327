package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// FileConfig is a cluster config file: one topology shared by every node
// process, each started with its own id.
//
//	{
//	  "topology": {"procs": ["P1","P2","P3"], "channels": [{"from":"P1","to":"P2"}, ...]},
//	  "nodes": {"P1": {"listen": "127.0.0.1:7101"}, ...},
//	  "app": {"kind": "bank", "balances": {"P1": 100, ...}},
//	  "trace_dir": "out/cluster/nodes",
//	  "snapshot_dir": "out/cluster/snapshots",
//	  "workload": {"transfers": 200, "max_amount": 20, "pause_ms": 5, "seed": 1},
//	  "snapshots": {"initiators": ["P1","P2"], "every_ms": 300, "count": 3}
//	}
//
// app.kind "token" takes "holder" instead of "balances".
type FileConfig struct {
	Topology    *spec.Topology              `json:"-"`
	Nodes       map[spec.ProcID]NodeAddress `json:"nodes"`
	App         AppConfig                   `json:"app"`
	TraceDir    string                      `json:"trace_dir,omitempty"`
	SnapshotDir string                      `json:"snapshot_dir"`
	Workload    *Workload                   `json:"workload,omitempty"`
	Snapshots   *Schedule                   `json:"snapshots,omitempty"`
}

// NodeAddress is where a node listens for its incoming channels.
type NodeAddress struct {
	Listen string `json:"listen"`
}

// AppConfig names the application and its initial state.
type AppConfig struct {
	Kind     string                `json:"kind"` // "bank" or "token"
	Balances map[spec.ProcID]int64 `json:"balances,omitempty"`
	Holder   spec.ProcID           `json:"holder,omitempty"`
}

// Workload is what each node sends on its own: Transfers random transfers
// (token: attempts to pass the token on) of 1..MaxAmount to random
// neighbours, PauseMS apart.
type Workload struct {
	Transfers int    `json:"transfers"`
	MaxAmount int64  `json:"max_amount"`
	PauseMS   int    `json:"pause_ms"`
	Seed      uint64 `json:"seed"`
}

// Schedule makes each initiator start Count snapshots, EveryMS apart.
type Schedule struct {
	Initiators []spec.ProcID `json:"initiators"`
	EveryMS    int           `json:"every_ms"`
	Count      int           `json:"count"`
}

// ParseConfig reads a cluster config strictly; errors name the field.
func ParseConfig(b []byte) (*FileConfig, error) {
	var raw struct {
		Topology json.RawMessage `json:"topology"`
		FileConfig
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("config: trailing data after the JSON object")
	}
	cfg := raw.FileConfig
	if len(raw.Topology) == 0 || string(raw.Topology) == "null" {
		return nil, fmt.Errorf(`config: field "topology" is missing`)
	}
	t, err := spec.ParseTopology(raw.Topology)
	if err != nil {
		return nil, fmt.Errorf(`config: field "topology": %w`, err)
	}
	cfg.Topology = t
	return &cfg, cfg.validate()
}

func (c *FileConfig) validate() error {
	t := c.Topology
	for p := range c.Nodes {
		if !t.Has(p) {
			return fmt.Errorf("config: nodes.%s: not a process of the topology (%s)", string(p), procList(t.Procs))
		}
	}
	for _, p := range t.Procs {
		n, ok := c.Nodes[p]
		if !ok {
			return fmt.Errorf("config: nodes.%s: missing (every process needs a listen address)", string(p))
		}
		if n.Listen == "" {
			return fmt.Errorf("config: nodes.%s.listen: missing", string(p))
		}
		if _, port, err := net.SplitHostPort(n.Listen); err != nil || port == "" || port == "0" {
			return fmt.Errorf("config: nodes.%s.listen: %q is not host:port with a fixed port", string(p), n.Listen)
		}
	}
	switch c.App.Kind {
	case "bank":
		if c.App.Holder != "" {
			return fmt.Errorf(`config: app.holder: only for kind "token"`)
		}
		for p, b := range c.App.Balances {
			if !t.Has(p) {
				return fmt.Errorf("config: app.balances.%s: not a process of the topology", string(p))
			}
			if b < 0 {
				return fmt.Errorf("config: app.balances.%s: negative balance %d", string(p), b)
			}
		}
		for _, p := range t.Procs {
			if _, ok := c.App.Balances[p]; !ok {
				return fmt.Errorf("config: app.balances.%s: missing", string(p))
			}
		}
	case "token":
		if len(c.App.Balances) > 0 {
			return fmt.Errorf(`config: app.balances: only for kind "bank"`)
		}
		if !t.Has(c.App.Holder) {
			return fmt.Errorf("config: app.holder: %q is not a process of the topology", string(c.App.Holder))
		}
	case "":
		return fmt.Errorf(`config: app.kind: missing (want "bank" or "token")`)
	default:
		return fmt.Errorf(`config: app.kind: %q, want "bank" or "token"`, c.App.Kind)
	}
	if c.SnapshotDir == "" {
		return fmt.Errorf(`config: field "snapshot_dir" is missing`)
	}
	if w := c.Workload; w != nil {
		if w.Transfers < 0 {
			return fmt.Errorf("config: workload.transfers: %d is negative", w.Transfers)
		}
		if w.MaxAmount < 0 {
			return fmt.Errorf("config: workload.max_amount: %d is negative", w.MaxAmount)
		}
		if w.PauseMS < 0 {
			return fmt.Errorf("config: workload.pause_ms: %d is negative", w.PauseMS)
		}
	}
	if s := c.Snapshots; s != nil {
		for i, p := range s.Initiators {
			if !t.Has(p) {
				return fmt.Errorf("config: snapshots.initiators[%d]: %q is not a process of the topology", i, string(p))
			}
		}
		if s.EveryMS <= 0 {
			return fmt.Errorf("config: snapshots.every_ms: %d, want > 0", s.EveryMS)
		}
		if s.Count < 0 {
			return fmt.Errorf("config: snapshots.count: %d is negative", s.Count)
		}
		if limit := (1<<SnapSeqBits - 1) / len(t.Procs); s.Count > limit {
			return fmt.Errorf("config: snapshots.count: %d, at most %d for %d processes", s.Count, limit, len(t.Procs))
		}
	}
	return nil
}

func procList(ps []spec.ProcID) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// NewApp returns p's initial application.
func (c *FileConfig) NewApp(p spec.ProcID) (core.App, error) {
	if c.App.Kind == "token" {
		return app.NewToken(p == c.App.Holder), nil
	}
	return app.NewBank(c.App.Balances[p])
}

// Header is the trace header for this cluster.
func (c *FileConfig) Header() spec.Header {
	h := spec.Header{Topology: c.Topology, InitBal: map[spec.ProcID]int64{}}
	for _, p := range c.Topology.Procs {
		if c.App.Kind == "token" {
			if p == c.App.Holder {
				h.InitBal[p] = 1
			} else {
				h.InitBal[p] = 0
			}
		} else {
			h.InitBal[p] = c.App.Balances[p]
		}
	}
	return h
}

// PartStore persists local parts and assembled snapshots (impl/store's
// Store is one).
type PartStore interface {
	SavePart(snapshot.Part) (string, error)
	LoadParts(t *spec.Topology, id spec.SnapID) ([]snapshot.Part, []spec.ProcID, error)
	Save(snapshot.Global) (string, error)
}

// ProcessOptions are RunProcess's inputs besides the config.
type ProcessOptions struct {
	Store PartStore
	// From, if set, restores the node from this snapshot. New snapshot ids
	// are picked as on a fresh start (see RunProcess), so they cannot be
	// From.ID or any other id of the store.
	From *snapshot.Global
	// Out receives progress lines; nil discards them.
	Out io.Writer
	// Listener, if set, is used instead of listening on the configured
	// address (for tests).
	Listener net.Listener
}

// RunProcess runs node self of a multi-process cluster until ctx ends:
// a TCP transport serving only self (listener for its incoming channels,
// dialers for its outgoing ones), the workload and snapshot schedule of
// the config, each completed local part persisted to the store, and a
// global snapshot assembled and saved by whichever node completes the
// last part. On return the node and transport are stopped; frames not
// delivered are reported in the error.
//
// Snapshot ids. Every start of an initiating node draws a random run tag
// (one the store holds no id of: 31 bits on a fresh start; on a restore,
// one of the 2^16 tags just above the restored snapshot's, since restored
// nodes retire every smaller id) and numbers its snapshots
// tag<<SnapSeqBits | (k*N + idx + 1) for its k-th snapshot, idx its index
// among the N processes. The markers carry the id, so the other nodes
// need no coordination: every part of snapshot X comes from the run that
// created X, and parts of different runs (or of a run and a restored
// one) sharing a snapshot directory are never assembled together. The
// store never overwrites a part or snapshot with a different one either.
//
// A node that crashes loses its channel state: its peers' transports
// report ErrPeerRestarted and stop those channels. Recovery means
// restarting every node from one stored snapshot (ProcessOptions.From).
func RunProcess(ctx context.Context, cfg *FileConfig, self spec.ProcID, opt ProcessOptions) error {
	t := cfg.Topology
	idx := t.ProcIndex(self)
	if idx < 0 {
		return fmt.Errorf("config: --id %s is not a process of the topology (%s)", string(self), procList(t.Procs))
	}
	if opt.Store == nil {
		return fmt.Errorf("runtime: RunProcess needs a store")
	}
	out := opt.Out
	if out == nil {
		out = io.Discard
	}
	var outMu sync.Mutex
	say := func(format string, a ...any) {
		outMu.Lock()
		fmt.Fprintf(out, "%s: "+format+"\n", append([]any{string(self)}, a...)...)
		outMu.Unlock()
	}
	addrs := map[spec.ProcID]string{}
	for p, n := range cfg.Nodes {
		addrs[p] = n.Listen
	}
	var (
		trFatal int
		trMu    sync.Mutex
	)
	tcfg := transport.TCPConfig{Addrs: addrs, Local: []spec.ProcID{self}, OnError: func(err error) {
		// Dial errors are normal while peers start; a restarted peer is
		// not.
		if errors.Is(err, transport.ErrPeerRestarted) {
			trMu.Lock()
			trFatal++
			trMu.Unlock()
			say("error: %v (restart every node from a snapshot: --restore ID)", err)
		}
	}}
	if opt.Listener != nil {
		tcfg.Listeners = map[spec.ProcID]net.Listener{self: opt.Listener}
	}
	tr, err := transport.NewTCP(t, tcfg)
	if err != nil {
		return err
	}
	var sink *trace.Sink
	if cfg.TraceDir != "" {
		if sink, err = OpenTrace(cfg.TraceDir, self, cfg.Header()); err != nil {
			tr.Close()
			return err
		}
	}
	a, err := cfg.NewApp(self)
	if err != nil {
		tr.Close()
		sink.Close()
		return err
	}
	parts := make(chan snapshot.Part, 256)
	var (
		nodeErrs int
		errMu    sync.Mutex
	)
	node, err := NewNode(NodeConfig{
		Topology: t, Self: self, App: a, Transport: tr, Trace: sink, From: opt.From,
		OnPart: func(p snapshot.Part) { parts <- p },
		OnError: func(err error) {
			errMu.Lock()
			nodeErrs++
			errMu.Unlock()
			say("error: %v", err)
		},
	})
	if err != nil {
		tr.Close()
		sink.Close()
		return err
	}
	say("listening on %s; %d outgoing, %d incoming channels", tr.Addr(self), len(t.Out(self)), len(t.In(self)))

	// Persist parts; the node that completes the last one assembles.
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for p := range parts {
			if _, err := opt.Store.SavePart(p); err != nil {
				say("error: %v", err)
				continue
			}
			ps, missing, err := opt.Store.LoadParts(t, p.Snap)
			if err != nil {
				say("error: %v", err)
				continue
			}
			if len(missing) > 0 {
				say("snapshot %d: local part saved, waiting for %s", p.Snap, procList(missing))
				continue
			}
			g, err := snapshot.Assemble(t, p.Snap, ps)
			if err != nil {
				say("error: %v", err)
				continue
			}
			path, err := opt.Store.Save(g)
			if err != nil {
				say("error: %v", err)
				continue
			}
			say("snapshot %d complete: total %d (%d in flight), saved %s", g.ID, g.Total(), g.InFlight(), path)
		}
	}()

	var wg sync.WaitGroup
	if w := cfg.Workload; w != nil && w.Transfers > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(w.Seed, uint64(idx)))
			outs := t.Out(self)
			maxAmt := max(w.MaxAmount, 1)
			for k := 0; k < w.Transfers; k++ {
				to := outs[rng.IntN(len(outs))].To
				var err error
				if cfg.App.Kind == "token" {
					err = node.SendApp(to, app.TokenPayload)
				} else {
					err = node.Transfer(to, 1+rng.Int64N(maxAmt))
				}
				if err != nil && !errors.Is(err, core.ErrApp) {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Duration(w.PauseMS) * time.Millisecond):
				}
			}
		}()
	}
	var tag uint64
	if s := cfg.Snapshots; s != nil && s.Count > 0 && isInitiator(s, self) {
		var from spec.SnapID
		if opt.From != nil {
			from = opt.From.ID
		}
		if tag, err = runTag(opt.Store, from); err != nil {
			node.Stop()
			tr.Close()
			sink.Close()
			return err
		}
		say("snapshot ids of this run: %d + k*%d + %d", tag<<SnapSeqBits, len(t.Procs), idx+1)
	}
	if s := cfg.Snapshots; s != nil && tag != 0 {
		for _, p := range s.Initiators {
			if p != self {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < s.Count; k++ {
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Duration(s.EveryMS) * time.Millisecond):
					}
					// Unique across runs (tag) and initiators (idx).
					id := spec.SnapID(tag<<SnapSeqBits | uint64(k*len(t.Procs)+idx+1))
					if err := node.Initiate(id); err != nil {
						say("initiate %d: %v", id, err)
						continue
					}
					say("initiated snapshot %d", id)
				}
			}()
			break
		}
	}

	<-ctx.Done()
	wg.Wait()
	st, _ := node.State()
	node.Stop()
	trErr := tr.Close()
	close(parts)
	<-writerDone
	sinkErr := sink.Close()
	say("stopped: balance %d, sent %d, received %d", st.Bal, st.Sent, st.Rcvd)
	var problems []string
	var se *transport.ShutdownError
	if errors.As(trErr, &se) {
		problems = append(problems, se.Error())
	} else if trErr != nil {
		problems = append(problems, trErr.Error())
	}
	trMu.Lock()
	if trFatal > 0 {
		problems = append(problems, fmt.Sprintf("%d channels stopped because a peer restarted", trFatal))
	}
	trMu.Unlock()
	if u := node.Unsent(); len(u) > 0 {
		problems = append(problems, fmt.Sprintf("%d frames refused by the transport", len(u)))
	}
	if sinkErr != nil {
		problems = append(problems, sinkErr.Error())
	}
	errMu.Lock()
	if nodeErrs > 0 {
		problems = append(problems, fmt.Sprintf("%d node errors", nodeErrs))
	}
	errMu.Unlock()
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("node %s: %s", string(self), strings.Join(problems, "; "))
	}
	return nil
}

// SnapSeqBits is the number of low bits of a multi-process snapshot id
// that number the snapshots of one run; the bits above are the run tag.
const SnapSeqBits = 20

const (
	// freshTags bounds the tags of a fresh start: [1, freshTags].
	freshTags = 1<<31 - 1
	// restoreWindow is how far above the restored snapshot's tag a
	// restored run's tag may lie: restored nodes retire every id up to
	// the snapshot's (core.Checkpoint.SnapFloor), so their ids must be
	// larger, and a small window leaves room for chains of restores.
	restoreWindow = 1 << 16
	// maxTag keeps ids below 2^53, exact as JSON numbers.
	maxTag = 1<<(53-SnapSeqBits) - 1
)

func isInitiator(s *Schedule, p spec.ProcID) bool {
	for _, q := range s.Initiators {
		if q == p {
			return true
		}
	}
	return false
}

// idLister is implemented by stores that can list the ids they hold
// (impl/store's Used).
type idLister interface {
	Used() ([]spec.SnapID, error)
}

// runTag draws a random run tag that no id in st has: in [1, freshTags]
// on a fresh start, and just above from's tag when restoring from snapshot
// from (so that every new id is larger than from).
func runTag(st PartStore, from spec.SnapID) (uint64, error) {
	taken := map[uint64]bool{}
	if l, ok := st.(idLister); ok {
		ids, err := l.Used()
		if err != nil {
			return 0, fmt.Errorf("runtime: pick snapshot ids: %w", err)
		}
		for _, id := range ids {
			taken[uint64(id)>>SnapSeqBits] = true
		}
	}
	lo, n := uint64(1), uint64(freshTags)
	if from != 0 {
		lo = uint64(from)>>SnapSeqBits + 1
		n = min(restoreWindow, maxTag-lo+1)
		if lo > maxTag {
			return 0, fmt.Errorf("runtime: no snapshot ids left above the restored snapshot %d", from)
		}
	}
	free := uint64(0)
	for t := lo; t < lo+n && free == 0; t++ {
		if !taken[t] {
			free = t
		}
	}
	if free == 0 {
		return 0, fmt.Errorf("runtime: no free snapshot ids above %d: the store holds ids of all %d run tags", uint64(lo)<<SnapSeqBits, n)
	}
	for {
		if t := lo + rand.Uint64N(n); !taken[t] {
			return t, nil
		}
	}
}
