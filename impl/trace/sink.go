package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/markerwave/markerwave/spec"
)

// Errors the sink returns; test them with errors.Is.
var (
	// ErrInvalidArg: NewSink was given a nil writer or a header without
	// topology.
	ErrInvalidArg = errors.New("trace: invalid argument")
	// ErrInvalidEvent: Emit was given an event spec.ReadTrace would
	// refuse (spec.Event.Validate fails against the header's topology)
	// or that has no JSON encoding (a Payload that is not JSON).
	ErrInvalidEvent = errors.New("trace: invalid event")
	// ErrClosed: Emit after Close.
	ErrClosed = errors.New("trace: emit after close")
)

// Sink writes a trace to an io.Writer (see the package doc for what it
// promises).
type Sink struct {
	mu     sync.Mutex
	w      io.Writer
	bw     *bufio.Writer
	enc    *json.Encoder
	top    *spec.Topology
	n      int
	err    error // first error; later calls return it
	closed bool
	each   bool // flush after every event (FlushEach)
}

// Off is the disabled sink.
var Off *Sink

// NewSink writes h (with Format set to spec.TraceFormat) to w and returns
// a sink for the events. Output is buffered: call Flush or Close.
func NewSink(w io.Writer, h spec.Header) (*Sink, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: nil writer", ErrInvalidArg)
	}
	if h.Topology == nil {
		return nil, fmt.Errorf("%w: header has no topology", ErrInvalidArg)
	}
	bw := bufio.NewWriterSize(errWriter{w}, 64<<10)
	s := &Sink{w: w, bw: bw, enc: json.NewEncoder(bw), top: h.Topology}
	s.enc.SetEscapeHTML(false) // as spec.WriteTrace: payloads are written as given
	h.Format = spec.TraceFormat
	if err := s.enc.Encode(h); err != nil {
		return nil, fmt.Errorf("trace: header: %w", err)
	}
	return s, nil
}

// FlushEach makes the sink flush after every event, for a process that
// may be killed (kill -9): its file then holds every event but, at
// worst, part of the one being written. It costs a write per event.
func (s *Sink) FlushEach() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.each = true
}

// Enabled reports whether events are written (false for a nil sink).
func (s *Sink) Enabled() bool { return s != nil }

// Emit appends e to the trace. It refuses an invalid event with
// ErrInvalidEvent and, after Close, any event with ErrClosed. After the
// first error (a refused event or a write error) every call returns that
// error: the trace written is a prefix of the events emitted.
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
		return ErrClosed
	}
	if err := e.Validate(s.top); err != nil {
		s.err = fmt.Errorf("trace: event %d (%s): %w: %w", s.n+1, e, ErrInvalidEvent, err)
		return s.err
	}
	if err := s.enc.Encode(&e); err != nil {
		s.err = s.encodeError(e, err)
		return s.err
	}
	s.n++
	if s.each {
		return s.flush()
	}
	return nil
}

// encodeError is the error of the n+1-th event e, which did not encode
// with err: the writer's error, or e is invalid (ErrInvalidEvent).
func (s *Sink) encodeError(e spec.Event, err error) error {
	var werr *writeError
	if errors.As(err, &werr) {
		return fmt.Errorf("trace: event %d (%s): %w", s.n+1, e, err)
	}
	return fmt.Errorf("trace: event %d (%s): %w: %w", s.n+1, e, ErrInvalidEvent, err)
}

// errWriter marks the errors of the underlying writer, so that Emit
// tells them from an event's encoding error.
type errWriter struct{ w io.Writer }

func (e errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}

// writeError is an error of the underlying writer.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// Count is the number of events written: the Emits that returned nil.
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

// Close flushes and, if the writer is an io.Closer, closes it, once.
// Later Emits are errors; later Closes return the first one's result.
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
