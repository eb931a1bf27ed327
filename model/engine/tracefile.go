package engine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
)

// traceFile keeps, in fingerprint mode, each stored state's fingerprint
// and parent id on disk (12 bytes a state, state id i at offset 12*i),
// as TLC's trace file does: enough to rebuild the path to any state by
// re-expanding from an initial state.
type traceFile struct {
	f *os.File
	w *bufio.Writer
}

const traceRecord = 12

func newTraceFile(dir string) (*traceFile, error) {
	f, err := os.CreateTemp(dir, "markerwave-trace-*")
	if err != nil {
		return nil, fmt.Errorf("engine: creating the trace file: %w", err)
	}
	return &traceFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// add appends the next state's record.
func (t *traceFile) add(fp uint64, parent uint32) error {
	var b [traceRecord]byte
	binary.LittleEndian.PutUint64(b[:8], fp)
	binary.LittleEndian.PutUint32(b[8:], parent)
	if _, err := t.w.Write(b[:]); err != nil {
		return fmt.Errorf("engine: writing the trace file %s: %w", t.f.Name(), err)
	}
	return nil
}

// fingerprints are the fingerprints of the states from an initial state
// to state id, following parent ids.
func (t *traceFile) fingerprints(id uint32) ([]uint64, error) {
	if err := t.w.Flush(); err != nil {
		return nil, fmt.Errorf("engine: writing the trace file %s: %w", t.f.Name(), err)
	}
	var rev []uint64
	for s := id; s != noParent; {
		var b [traceRecord]byte
		if _, err := t.f.ReadAt(b[:], int64(s)*traceRecord); err != nil {
			return nil, fmt.Errorf("engine: reading the trace file %s: %w", t.f.Name(), err)
		}
		rev = append(rev, binary.LittleEndian.Uint64(b[:8]))
		s = binary.LittleEndian.Uint32(b[8:])
	}
	fps := make([]uint64, len(rev))
	for i := range rev {
		fps[i] = rev[len(rev)-1-i]
	}
	return fps, nil
}

func (t *traceFile) close() {
	t.f.Close()
	os.Remove(t.f.Name())
}
