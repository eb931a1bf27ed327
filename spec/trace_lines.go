package spec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// readTraceFile is the one line loop of the trace formats that begin
// with a header line (barrier, sink and outsider traces): it skips blank
// lines, hands the first line to header and every later one, with its
// number, to event, and words every error as ReadTraceLines does ("trace
// line N: ...", a line over MaxTraceLine, an empty file).
func readTraceFile(r io.Reader, header func(b []byte) error, event func(b []byte, line int) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxTraceLine)
	line, seen := 0, false
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		read := event
		if !seen {
			read, seen = func(b []byte, _ int) error { return header(b) }, true
		}
		if err := read(b, line); err != nil {
			return fmt.Errorf("trace line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return scanErr(err, line+1)
	}
	if !seen {
		return fmt.Errorf("trace: empty, no header line")
	}
	return nil
}

// traceFormats are the trace formats markerwave reads, named in the
// error for a header with another format or none.
var traceFormats = []string{TraceFormat, OutsiderFormat, BarrierTraceFormat, SinkTraceFormat}

// checkFormat refuses header line b when it names a format other than
// want, or none, saying what it found and which formats there are. It
// runs before the header's other fields are read, so that a header of
// another format is refused for its format, not for a field of that
// format this one does not have. A line that is not an object with a
// string format is left to the header's strict decoding.
func checkFormat(b []byte, want string) error {
	var h struct {
		Format *string `json:"format"`
	}
	if json.Unmarshal(b, &h) != nil || h.Format != nil && *h.Format == want {
		return nil
	}
	got := "missing"
	if h.Format != nil {
		got = strconv.Quote(*h.Format)
	}
	return fmt.Errorf("field \"format\": %s, want %q (the trace formats: %s)", got, want, strings.Join(traceFormats, ", "))
}

// hasFormat reports whether first, a trace's first line, is a header of
// format.
func hasFormat(first []byte, format string) bool {
	var h struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(first, &h) == nil && h.Format == format
}
