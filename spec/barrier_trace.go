package spec

import (
	"bufio"
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
// tla/BarrierSnapshots.tla, and Timeout, tla/BarrierAdaptive.tla's, in
// the adaptive mode) or of the whole cluster (Restore), in an
// order consistent with causality: the order the steps were taken in.
// A node's part of the snapshot is on the step it recorded in (Inject,
// the RecvBarrier that recorded, or the Timeout that switched it), and the records it logged on its
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
// and the records its barrier overtook on each output (unaligned), and
// in the adaptive mode the type of snapshot it reported (reported[n] of
// tla/BarrierAdaptive.tla: "aligned" or "unaligned"; none for a
// source). The Logic's state is not in the trace.
type BarrierPart struct {
	Emitted   int                        `json:"emitted,omitempty"`
	Cnt       int                        `json:"cnt,omitempty"`
	Out       []BarrierCount             `json:"out,omitempty"`
	CutSent   map[string]int             `json:"cut_sent,omitempty"`
	CutRcvd   map[string]int             `json:"cut_rcvd,omitempty"`
	Overtaken map[string][]BarrierRecord `json:"overtaken,omitempty"`
	Type      string                     `json:"type,omitempty"`
}

// The actions of a barrier trace's events: those of
// tla/BarrierSnapshots.tla, Timeout (tla/BarrierAdaptive.tla: a node's
// alignment timed out and it switched to unaligned, recording),
// TimeoutOut (tla/BarrierAdaptive.tla: a node that recorded aligned
// switched, its barrier overtaking the records queued ahead of it on its
// outputs; the event carries its part again, those records overtaken),
// and Restore.
const (
	BarrierEmit        = "Emit"
	BarrierInject      = "Inject"
	BarrierProcess     = "Process"
	BarrierRecvBarrier = "RecvBarrier"
	BarrierTimeout     = "Timeout"
	BarrierTimeoutOut  = "TimeoutOut"
	BarrierRestore     = "Restore"
)

// BarrierEvent is one step: Action, the node that took it (none for
// Restore), the edge <<From, To>> it put its record on (Emit) or took
// its item off (Process, RecvBarrier), the record (Emit, Process),
// Logged when the record joined the edge's channel state (Process), and
// the node's part when it recorded in this step (Inject, RecvBarrier,
// Timeout).
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
func IsBarrierTrace(first []byte) bool { return hasFormat(first, BarrierTraceFormat) }

// ReadBarrierTrace reads a barrier trace strictly (DecodeStrict): a
// header of this format with a graph the ASSUME accepts
// (BarrierGraph.Check), then events naming known actions, nodes and
// edges. What the events do is the audit's to judge. An error names the
// file's line as ReadTraceLines does: "trace line N: ...".
func ReadBarrierTrace(r io.Reader) (*BarrierTrace, error) {
	var tr *BarrierTrace
	header := func(b []byte) error {
		h, err := readBarrierHeader(b)
		tr = &BarrierTrace{Header: h}
		return err
	}
	if err := readTraceFile(r, header, func(b []byte, line int) error { return tr.readEvent(b, line) }); err != nil {
		return nil, err
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
