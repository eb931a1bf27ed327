package conformance

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// stripBarrier is tr as an outside stream processor would log it: its
// records by source and number only (no seq, no hops), and each part
// holding only the records it persisted (overtaken, by source and
// number), none of its counts and cuts.
func stripBarrier(tr *spec.BarrierTrace) *spec.BarrierTrace {
	out := &spec.BarrierTrace{Header: tr.Header, Lines: tr.Lines}
	for _, ev := range tr.Events {
		if ev.Rec != nil {
			ev.Rec = &spec.BarrierRecord{Src: ev.Rec.Src, I: ev.Rec.I, Val: ev.Rec.Val}
		}
		if ev.Part != nil {
			p := &spec.BarrierPart{}
			for k, rs := range ev.Part.Overtaken {
				if p.Overtaken == nil {
					p.Overtaken = map[string][]spec.BarrierRecord{}
				}
				for _, r := range rs {
					p.Overtaken[k] = append(p.Overtaken[k], spec.BarrierRecord{Src: r.Src, I: r.I})
				}
			}
			ev.Part = p
		}
		out.Events = append(out.Events, ev)
	}
	return out
}

// writeBarrier writes tr as the JSON lines a writer would.
func writeBarrier(t *testing.T, tr *spec.BarrierTrace) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	require.NoError(t, enc.Encode(tr.Header))
	for _, ev := range tr.Events {
		require.NoError(t, enc.Encode(ev))
	}
	return b.Bytes()
}

// TestBarrierStripped: every barrier trace in traces/barrier, stripped of
// what the audit can derive (stripBarrier) and read back by the format's
// reader (and valid under the schema), gets the verdict the whole trace
// gets: it conforms, or it is rejected with the property its name
// carries. A conforming trace's derivation gives back exactly the
// events it was stripped of, and the report says what was derived.
func TestBarrierStripped(t *testing.T) {
	s := compileTraceSchema(t)
	for _, dir := range []string{"conforms", "rejects"} {
		files, _ := filepath.Glob(filepath.Join("..", "traces", "barrier", dir, "*.jsonl"))
		require.NotEmpty(t, files, "no barrier traces in traces/barrier/%s", dir)
		for _, f := range files {
			t.Run(dir+"/"+filepath.Base(f), func(t *testing.T) {
				full, err := ReadBarrierTraceFile(f)
				require.NoError(t, err)
				want := spec.Property("")
				if dir == "rejects" {
					want = spec.Property(strings.SplitN(filepath.Base(f), "-", 2)[0])
				}
				rfull := AuditBarrier(full, Options{})
				require.Equal(t, want, rfull.Property(), "the whole trace:\n%s", rfull)
				assert.Empty(t, rfull.Notes, "nothing to derive in a whole trace")

				b := writeBarrier(t, stripBarrier(full))
				require.NoError(t, s.validate(b), "the stripped trace is valid under the schema")
				stripped, err := spec.ReadBarrierTrace(bytes.NewReader(b))
				require.NoError(t, err, "the reader accepts the stripped trace")
				r := AuditBarrier(stripped, Options{})
				assert.Equal(t, want, r.Property(), "the stripped trace:\n%s", r)
				require.Len(t, r.Notes, 1, "%s", r)
				assert.Contains(t, r.String(), "derived from the trace (the checks on them hold by construction): ")
				if dir == "conforms" {
					derived, d := DeriveBarrier(stripped)
					assert.Empty(t, d.Unknown)
					assert.Equal(t, string(writeBarrier(t, full)), string(writeBarrier(t, derived)), "the derivation gives back the whole trace")
				}
			})
		}
	}
}
