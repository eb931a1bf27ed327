package spec

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every trace reader refuses a line that encoding/json would read
// without a word (DecodeStrict's key walk), naming the line: the
// markerwave-trace/3, barrier and sink readers as the outsider one does
// (TestReadOutsiderKeysExact). Each case edits line 2 of a shipped
// conforming trace, which reads as is.
func TestTraceReadersRefuseInexactKeys(t *testing.T) {
	readers := []struct {
		name, file, key string
		read            func(io.Reader) error
	}{
		{"trace/3", "../traces/conforms/token-ring.jsonl", `"proc":`, func(r io.Reader) error { _, err := ReadTrace(r); return err }},
		{"barrier", "../traces/barrier/conforms/aligned-dag.jsonl", `"node":`, func(r io.Reader) error { _, err := ReadBarrierTrace(r); return err }},
		{"sink", "../traces/sink/conforms/restore-commits-complete.jsonl", `"ckpt":`, func(r io.Reader) error { _, err := ReadSinkTrace(r); return err }},
	}
	for _, rd := range readers {
		b, err := os.ReadFile(rd.file)
		require.NoError(t, err)
		require.NoError(t, rd.read(bytes.NewReader(b)), "%s reads as shipped", rd.file)
		lines := strings.SplitAfter(string(b), "\n")
		require.Contains(t, lines[1], rd.key, rd.file)
		field := strings.Trim(rd.key, `":`)
		for _, tc := range []struct{ what, line, want string }{
			{"a key given twice", strings.Replace(lines[1], rd.key, rd.key+valueOf(lines[1], rd.key)+","+rd.key, 1), `field "` + field + `": given twice`},
			{"a key in another case", strings.Replace(lines[1], rd.key, `"`+strings.ToUpper(field)+`":`, 1), `keys are case-sensitive, the field is "` + field + `"`},
			{"bytes that are not UTF-8", strings.Replace(lines[1], rd.key+`"`, rd.key+"\"\xff", 1), "invalid UTF-8"},
		} {
			if tc.line == lines[1] {
				continue // the key's value is not a string: no UTF-8 case
			}
			in := lines[0] + tc.line + strings.Join(lines[2:], "")
			err := rd.read(strings.NewReader(in))
			if assert.Error(t, err, "%s: %s", rd.name, tc.what) {
				assert.Contains(t, err.Error(), "trace line 2: ", "%s: %s", rd.name, tc.what)
				assert.Contains(t, err.Error(), tc.want, "%s: %s", rd.name, tc.what)
			}
		}
	}
}

// valueOf is the JSON value that follows key on line, up to the next
// comma or closing brace (a string or a number in these traces).
func valueOf(line, key string) string {
	rest := line[strings.Index(line, key)+len(key):]
	end := strings.IndexAny(rest, ",}")
	return rest[:end]
}
