// Package trace streams spec.Events as a JSON-lines trace in the format of
// spec.WriteTrace: one header line, then one event a line, readable by
// spec.ReadTrace.
//
// A nil *Sink is the sink for tracing turned off: its methods do nothing
// and cost a nil check, so callers need no branch of their own.
package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/markerwave/markerwave/spec"
)

// Sink writes a trace to an io.Writer. It is safe for concurrent use;
// events are written in the order Emit is called.
type Sink struct {
	mu     sync.Mutex
	w      io.Writer
	bw     *bufio.Writer
	enc    *json.Encoder
	n      int
	err    error // first error; later calls return it
	closed bool
}

// Off is the disabled sink.
var Off *Sink

// NewSink writes h (with Format set to spec.TraceFormat) to w and returns
// a sink for the events. Output is buffered: call Flush or Close.
func NewSink(w io.Writer, h spec.Header) (*Sink, error) {
	if w == nil {
		return nil, fmt.Errorf("trace: nil writer")
	}
	if h.Topology == nil {
		return nil, fmt.Errorf("trace: header has no topology")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	s := &Sink{w: w, bw: bw, enc: json.NewEncoder(bw)}
	h.Format = spec.TraceFormat
	if err := s.enc.Encode(h); err != nil {
		return nil, fmt.Errorf("trace: header: %w", err)
	}
	return s, nil
}

// Enabled reports whether events are written (false for a nil sink).
func (s *Sink) Enabled() bool { return s != nil }

// Emit appends e to the trace. After the first write error every call
// returns that error.
func (s *Sink) Emit(e spec.Event) error {
	if s == nil {
		return nil
	}
	return s.emit(e)
}

// emit is separate so that only the enabled path moves e to the heap.
func (s *Sink) emit(e spec.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.closed {
		return fmt.Errorf("trace: emit after close")
	}
	if err := s.enc.Encode(&e); err != nil {
		s.err = fmt.Errorf("trace: event %d (%s): %w", s.n+1, e, err)
		return s.err
	}
	s.n++
	return nil
}

// Count is the number of events written.
func (s *Sink) Count() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Flush writes buffered output to the underlying writer.
func (s *Sink) Flush() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flush()
}

func (s *Sink) flush() error {
	if s.err != nil {
		return s.err
	}
	if err := s.bw.Flush(); err != nil {
		s.err = fmt.Errorf("trace: flush: %w", err)
	}
	return s.err
}

// Close flushes and, if the writer is an io.Closer, closes it. Later
// Emits are errors.
func (s *Sink) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.err
	}
	s.closed = true
	err := s.flush()
	if c, ok := s.w.(io.Closer); ok {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("trace: close: %w", cerr)
			s.err = err
		}
	}
	return err
}
