package instrument

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/markerwave/markerwave/spec"
)

// Config describes the run in the header every log starts with.
type Config struct {
	// Run names the run; logs of different runs are never merged.
	Run string
	// Procs names the nodes; Channels the directed FIFO channels between
	// them, each {from, to}: every ordered pair when nil.
	Procs    []string
	Channels [][2]string
	// InitBal is every node's initial balance (the bank application of
	// tla/ChandyLamport.tla: map the application's state to it).
	InitBal map[string]int64
	// Drained claims the run ends with every channel empty.
	Drained bool
	// Source says what wrote the log (optional).
	Source string
}

// header is the outsider header c describes, for node ("" in a file
// every node writes into).
func (c Config) header(node string) (spec.OutsiderHeader, error) {
	top, err := c.topology()
	if err != nil {
		return spec.OutsiderHeader{}, err
	}
	h := spec.OutsiderHeader{Format: spec.OutsiderFormat, Run: c.Run, Node: spec.ProcID(node), Topology: top,
		InitBal: make(map[spec.ProcID]int64, len(c.InitBal)), Drained: c.Drained, Source: c.Source}
	for p, b := range c.InitBal {
		h.InitBal[spec.ProcID(p)] = b
	}
	if err := h.Validate(); err != nil {
		return spec.OutsiderHeader{}, fmt.Errorf("instrument: header: %w", err)
	}
	return h, nil
}

// topology builds the spec's topology of c's nodes and channels.
func (c Config) topology() (*spec.Topology, error) {
	procs := make([]spec.ProcID, len(c.Procs))
	for i, p := range c.Procs {
		procs[i] = spec.ProcID(p)
	}
	var chans []spec.Channel
	for _, ch := range c.Channels {
		chans = append(chans, spec.Channel{From: spec.ProcID(ch[0]), To: spec.ProcID(ch[1])})
	}
	if c.Channels == nil {
		chans = spec.AllPairs(procs)
	}
	top, err := spec.NewTopology(procs, chans)
	if err != nil {
		return nil, fmt.Errorf("instrument: %w", err)
	}
	return top, nil
}

// Recorder writes one node's observations (or, made by New, the header
// of a file every node writes into; For gives each node its own). A nil
// *Recorder records nothing, at no cost.
type Recorder struct {
	s    *sink
	node spec.ProcID
	view bool // made by For: Close leaves the shared writer open
}

// sink is the log the Recorders of one file share.
type sink struct {
	mu     sync.Mutex
	w      io.Writer
	top    *spec.Topology
	shared bool // events name their node
	parts  map[partKey]*spec.OutsiderSnapshot
	err    error
	buf    bytes.Buffer // one line being written
	enc    *json.Encoder
}

// partKey names one node's part of one snapshot.
type partKey struct {
	node spec.ProcID
	snap spec.ObsID
}

// NewNode starts node's own log on w: it writes the header and returns
// the node's Recorder. Audit the nodes' logs together (markerwave audit
// DIR, or the files).
func NewNode(w io.Writer, c Config, node string) (*Recorder, error) {
	if node == "" {
		return nil, fmt.Errorf("instrument: NewNode: no node (New writes a file every node writes into)")
	}
	return start(w, c, node)
}

// New starts a log on w that every node writes into, each event naming
// its node: it writes the header; For gives each node its Recorder.
func New(w io.Writer, c Config) (*Recorder, error) { return start(w, c, "") }

// start writes the header for node on w.
func start(w io.Writer, c Config, node string) (*Recorder, error) {
	h, err := c.header(node)
	if err != nil {
		return nil, err
	}
	s := &sink{w: w, top: h.Topology, shared: node == "", parts: map[partKey]*spec.OutsiderSnapshot{}}
	if err := s.writeJSON(h); err != nil {
		return nil, err
	}
	return &Recorder{s: s, node: spec.ProcID(node)}, nil
}

// For is node's Recorder on r's file (made by New); nil on a nil r.
func (r *Recorder) For(node string) *Recorder {
	if r == nil {
		return nil
	}
	n := &Recorder{s: r.s, node: spec.ProcID(node), view: true}
	if !r.s.shared {
		n.s.fail(fmt.Errorf("instrument: For(%q) on %s's own log (NewNode)", node, string(r.node)))
	} else if !r.s.top.Has(n.node) {
		n.s.fail(fmt.Errorf("instrument: For(%q): no node of the topology", node))
	}
	return n
}

// Err is the first error the Recorder's file met, nil if none.
func (r *Recorder) Err() error {
	if r == nil {
		return nil
	}
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.s.err
}

// Close returns Err, closing w when it is an io.Closer (on the Recorder
// New or NewNode made; on one For made, it only returns Err).
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	err := r.Err()
	if c, ok := r.s.w.(io.Closer); ok && !r.view {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// fail keeps the first error.
func (s *sink) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// writeJSON writes v as one line, in one Write; the caller holds s.mu
// or owns s.
func (s *sink) writeJSON(v any) error {
	if s.enc == nil {
		s.enc = json.NewEncoder(&s.buf)
		s.enc.SetEscapeHTML(false)
	}
	s.buf.Reset()
	err := s.enc.Encode(v)
	if err == nil {
		_, err = s.w.Write(s.buf.Bytes())
	}
	if err != nil {
		err = fmt.Errorf("instrument: write: %w", err)
	}
	return err
}
