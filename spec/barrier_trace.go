package spec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A barrier trace is a run of a dataflow in JSON Lines
// (traces/README.md, "Barrier traces"; traces/trace.schema.json): a
// header with the graph, then one event a line, one per step of a node
// (Emit, Inject, Process, RecvBarrier, named as the actions of
// tla/BarrierSnapshots.tla) or of the whole cluster (Restore), in an
// order consistent with causality: the order the steps were taken in.
// A node's part of the snapshot is on the step it recorded in (Inject,
// or the RecvBarrier that recorded), and the records it logged on its
// inputs are the Process steps marked logged. This is its vocabulary
// and its reader; impl/dataflow writes it, conformance audits it.

// BarrierTraceFormat is the format tag of a barrier trace's header.
const BarrierTraceFormat = "markerwave-barrier-trace/1"

// BarrierHeader is a barrier trace's first line.
type BarrierHeader struct {
	Format string       `json:"format"`
	Graph  BarrierGraph `json:"graph"`
	// Drained claims the run ended with every buffer empty and every
	// source's budget emitted.
	Drained bool   `json:"drained,omitempty"`
	Source  string `json:"source,omitempty"`
	Note    string `json:"note,omitempty"`
}

// BarrierRecord is a record (an item that is not a barrier): its source,
// its number there, its hops round a cycle, its sequence number on the
// edge it travels (the ghost eseq of tla/BarrierSnapshots.tla), and its
// payload (not checked).
type BarrierRecord struct {
	Src  string `json:"src"`
	I    int    `json:"i"`
	Hops int    `json:"hops,omitempty"`
	Seq  int    `json:"seq,omitempty"` // 0: not given, derived
	Val  int64  `json:"val,omitempty"`
}

// BarrierCount is how many times the sink received record <<Src, I>>.
type BarrierCount struct {
	Src string `json:"src"`
	I   int    `json:"i"`
	N   int    `json:"n"`
}

// BarrierPart is a node's part when it recorded, by names: its counts (a
// source's emitted, another node's processed; the sink's output), the
// sequence numbers of its outputs and inputs at its cut (keyed "A->B"),
// and the records its barrier overtook on each output (unaligned). The
// Logic's state is not in the trace.
type BarrierPart struct {
	Emitted   int                        `json:"emitted,omitempty"`
	Cnt       int                        `json:"cnt,omitempty"`
	Out       []BarrierCount             `json:"out,omitempty"`
	CutSent   map[string]int             `json:"cut_sent,omitempty"`
	CutRcvd   map[string]int             `json:"cut_rcvd,omitempty"`
	Overtaken map[string][]BarrierRecord `json:"overtaken,omitempty"`
}

// The actions of a barrier trace's events: those of
// tla/BarrierSnapshots.tla, and Restore.
const (
	BarrierEmit        = "Emit"
	BarrierInject      = "Inject"
	BarrierProcess     = "Process"
	BarrierRecvBarrier = "RecvBarrier"
	BarrierRestore     = "Restore"
)

// BarrierEvent is one step: Action, the node that took it (none for
// Restore), the edge <<From, To>> it put its record on (Emit) or took
// its item off (Process, RecvBarrier), the record (Emit, Process),
// Logged when the record joined the edge's channel state (Process), and
// the node's part when it recorded in this step (Inject, RecvBarrier).
type BarrierEvent struct {
	Action string         `json:"action"`
	Node   string         `json:"node,omitempty"`
	From   string         `json:"from,omitempty"`
	To     string         `json:"to,omitempty"`
	Rec    *BarrierRecord `json:"rec,omitempty"`
	Logged bool           `json:"logged,omitempty"`
	Part   *BarrierPart   `json:"part,omitempty"`
}

// SortBarrierCounts puts a sink's output in order: by source, then
// number.
func SortBarrierCounts(cs []BarrierCount) {
	slices.SortFunc(cs, func(a, b BarrierCount) int {
		if c := strings.Compare(a.Src, b.Src); c != 0 {
			return c
		}
		return a.I - b.I
	})
}

// BarrierTrace is a barrier trace as read: its header, its events and
// the file line (from 1) of each.
type BarrierTrace struct {
	Header BarrierHeader
	Events []BarrierEvent
	Lines  []int
}

// Graph is the trace's graph.
func (tr *BarrierTrace) Graph() BarrierGraph { return tr.Header.Graph }

// IsBarrierTrace reports whether first, a trace's first line, is a
// barrier trace's header.
func IsBarrierTrace(first []byte) bool {
	var h struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(first, &h) == nil && h.Format == BarrierTraceFormat
}

// ReadBarrierTrace reads a barrier trace strictly (DecodeStrict): a
// header of this format with a graph the ASSUME accepts
// (BarrierGraph.Check), then events naming known actions, nodes and
// edges. What the events do is the audit's to judge. An error names the
// file's line as ReadTraceLines does: "trace line N: ...".
func ReadBarrierTrace(r io.Reader) (*BarrierTrace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxTraceLine)
	var tr *BarrierTrace
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if tr == nil {
			h, err := readBarrierHeader(b)
			if err != nil {
				return nil, fmt.Errorf("trace line %d: %w", line, err)
			}
			tr = &BarrierTrace{Header: h}
			continue
		}
		if err := tr.readEvent(b, line); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(err, line+1)
	}
	if tr == nil {
		return nil, fmt.Errorf("trace: empty, no header line")
	}
	return tr, nil
}

// scanErr is a scanner's error at line, as ReadTraceLines words it.
func scanErr(err error, line int) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("trace line %d: longer than %d bytes", line, MaxTraceLine)
	}
	return fmt.Errorf("trace line %d: %w", line, err)
}

// readEvent reads event line b (number line) and appends it.
func (tr *BarrierTrace) readEvent(b []byte, line int) error {
	var ev BarrierEvent
	if err := DecodeStrict(b, &ev); err != nil {
		return err
	}
	if err := tr.Header.Graph.CheckEvent(ev); err != nil {
		return fmt.Errorf("%s: %w", ev.Action, err)
	}
	tr.Events = append(tr.Events, ev)
	tr.Lines = append(tr.Lines, line)
	return nil
}

// readBarrierHeader reads header line b: this format, a graph Check
// accepts.
func readBarrierHeader(b []byte) (BarrierHeader, error) {
	var h BarrierHeader
	if err := DecodeStrict(b, &h); err != nil {
		return h, fmt.Errorf("header: %w", err)
	}
	if h.Format != BarrierTraceFormat {
		return h, fmt.Errorf("format %q, want %q", h.Format, BarrierTraceFormat)
	}
	return h, h.Graph.Check()
}
