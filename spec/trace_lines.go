package spec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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

// hasFormat reports whether first, a trace's first line, is a header of
// format.
func hasFormat(first []byte, format string) bool {
	var h struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(first, &h) == nil && h.Format == format
}
