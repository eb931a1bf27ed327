package engine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
)

// queue is one BFS level's states in fingerprint mode, in order: each a
// uvarint length then the encoding. Records are appended to a buffer in
// memory; when the buffer passes the queue's memory budget it is appended
// to a spill file (created in dir on first use), so a level larger than
// memory lives on disk. Reading returns the file's records, then the
// buffer's.
type queue struct {
	dir    string
	budget int
	mem    []byte
	file   *os.File
	w      *bufio.Writer
	n      int64 // records
	spilt  int64 // bytes written to the file

	r     *bufio.Reader // reading: the file, then mem
	memAt int
}

func newQueue(dir string, budget int) *queue { return &queue{dir: dir, budget: budget} }

// push appends a record.
func (q *queue) push(enc []byte) error {
	q.mem = binary.AppendUvarint(q.mem, uint64(len(enc)))
	q.mem = append(q.mem, enc...)
	q.n++
	if len(q.mem) > q.budget {
		return q.spill()
	}
	return nil
}

// spill appends the buffer to the file.
func (q *queue) spill() error {
	if q.file == nil {
		f, err := os.CreateTemp(q.dir, "markerwave-frontier-*")
		if err != nil {
			return fmt.Errorf("engine: spilling the frontier to disk: %w", err)
		}
		q.file, q.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	if _, err := q.w.Write(q.mem); err != nil {
		return fmt.Errorf("engine: spilling the frontier to %s: %w", q.file.Name(), err)
	}
	q.spilt += int64(len(q.mem))
	q.mem = q.mem[:0]
	return nil
}

// startReading rewinds the queue for reading.
func (q *queue) startReading() error {
	if q.file == nil {
		return nil
	}
	if err := q.w.Flush(); err != nil {
		return fmt.Errorf("engine: spilling the frontier to %s: %w", q.file.Name(), err)
	}
	if _, err := q.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	q.r = bufio.NewReaderSize(io.LimitReader(q.file, q.spilt), 1<<20)
	return nil
}

// next appends the next record to dst; ok is false at the end.
func (q *queue) next(dst []byte) (_ []byte, ok bool, err error) {
	if q.r != nil {
		n, err := binary.ReadUvarint(q.r)
		if err == nil {
			start := len(dst)
			dst = slices.Grow(dst, int(n))[:start+int(n)]
			if _, err = io.ReadFull(q.r, dst[start:]); err == nil {
				return dst, true, nil
			}
		}
		if err != io.EOF {
			return dst, false, fmt.Errorf("engine: reading the frontier back from %s: %w", q.file.Name(), err)
		}
		q.r = nil
	}
	if q.memAt >= len(q.mem) {
		return dst, false, nil
	}
	n, k := binary.Uvarint(q.mem[q.memAt:])
	q.memAt += k
	dst = append(dst, q.mem[q.memAt:q.memAt+int(n)]...)
	q.memAt += int(n)
	return dst, true, nil
}

// close removes the spill file.
func (q *queue) close() {
	if q.file != nil {
		q.file.Close()
		os.Remove(q.file.Name())
		q.file = nil
	}
	q.mem = nil
}
