package export

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

func barrierTrace(t *testing.T, name string) *spec.BarrierTrace {
	t.Helper()
	f, err := os.Open("../../traces/" + name)
	require.NoError(t, err)
	defer f.Close()
	tr, err := spec.ReadBarrierTrace(f)
	require.NoError(t, err)
	return tr
}

func drawBarrier(t *testing.T, tr *spec.BarrierTrace, f Format) []element {
	t.Helper()
	var b bytes.Buffer
	_, _, err := BarrierDiagram(tr, &b, f)
	require.NoError(t, err)
	return parse(t, b.Bytes())
}

// The barrier diagram draws what each trace of traces/ shows: a step per
// event, an arrow per item taken, the blocked inputs of aligned
// operators, the channel state (logged, overtaken), the cut and the
// restores.
func TestBarrierDiagram(t *testing.T) {
	for _, c := range []struct {
		trace                                           string
		blocked, logged, overtaken, restores, leftovers int
	}{
		{"barrier/conforms/aligned-dag.jsonl", 1, 0, 0, 0, 0},
		{"barrier/conforms/unaligned-dag.jsonl", 0, 1, 3, 0, 0},
		{"barrier/conforms/aligned-cycle.jsonl", 0, 1, 0, 0, 0},
		// The overtaken S1#2 still queued at the restore is rolled back
		// (it comes again from S1's part): a leftover.
		{"barrier/conforms/unaligned-restore.jsonl", 0, 1, 1, 1, 1},
		// The switch: X's input from S1 blocked until its alignment timed
		// out, the record its barrier overtook, S2's record logged.
		{"barrier/conforms/adaptive-dag.jsonl", 1, 1, 1, 1, 0},
	} {
		t.Run(c.trace, func(t *testing.T) {
			tr := barrierTrace(t, c.trace)
			els := drawBarrier(t, tr, SVG)
			cat := func(id string) int {
				n := 0
				for _, e := range els {
					if e.attrs["data-cat"] == id && !e.hasClass("legend-item") {
						n++
					}
				}
				return n
			}
			steps := 0
			for _, ev := range tr.Events {
				if ev.Action != spec.BarrierRestore {
					steps++
				}
			}
			assert.Len(t, withClass(els, "event"), steps)
			assert.Len(t, withClass(els, "proc-line"), len(tr.Graph().Nodes))
			assert.Len(t, withClass(els, "cut"), 1)
			assert.Equal(t, c.blocked, cat("blocked"), "blocked inputs")
			assert.Equal(t, c.logged, cat("logged"), "logged records")
			assert.Equal(t, c.overtaken, cat("overtaken"), "overtaken records taken")
			assert.Equal(t, c.restores, cat("restore"), "restores")
			assert.Equal(t, c.leftovers, cat("pending"), "items never taken")
			html := drawBarrier(t, tr, HTML)
			assert.NotEmpty(t, withClass(html, "event"))
		})
	}
}

// The adaptive trace's Timeout is a diamond labelled "switch" where X's
// alignment ended, the blocked input's shading ends there, and the
// summary names the node that switched.
func TestBarrierDiagramSwitch(t *testing.T) {
	tr := barrierTrace(t, "barrier/conforms/adaptive-dag.jsonl")
	els := drawBarrier(t, tr, SVG)
	to := withClass(els, "timeout")
	require.Len(t, to, 1)
	assert.Equal(t, "X", to[0].attrs["data-proc"])
	assert.Len(t, withClass(els, "switch-label"), 1)
	var b bytes.Buffer
	_, summary, err := BarrierDiagram(tr, &b, SVG)
	require.NoError(t, err)
	assert.Contains(t, summary, "switched to unaligned (the diamonds: where an alignment timed out, or a barrier waiting in a full output buffer overtook it): X")
	assert.Contains(t, b.String(), "blocked by alignment from column")
	assert.Contains(t, b.String(), "when its alignment timed out and it switched to unaligned")
}
