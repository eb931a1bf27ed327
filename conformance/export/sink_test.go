package export

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// sinkTraces are the bundled sink traces, conforming and rejected.
func sinkTraces(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../traces/sink/*/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

func readSink(t *testing.T, path string) *spec.SinkTrace {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr, err := spec.ReadSinkTrace(f)
	require.NoError(t, err)
	return tr
}

// Every bundled sink trace draws, in both formats, well-formed: a dot
// per step on its lane (the sink's or the store's) and a divider per
// restore, each step labelled, the steps a restore settles shaded, a
// legend entry per kind of step.
func TestSinkDiagram(t *testing.T) {
	for _, path := range sinkTraces(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := readSink(t, path)
			for _, f := range []Format{SVG, HTML} {
				var b bytes.Buffer
				ext, notes, err := SinkDiagram(tr, nil, &b, f)
				require.NoError(t, err)
				assert.Equal(t, len(tr.Events), ext.Columns)
				assert.True(t, ext.PerStep)
				require.NotEmpty(t, notes)
				doc := b.String()
				els := parse(t, b.Bytes())
				var dots, dividers, settles, legend int
				for _, e := range els {
					switch {
					case e.name == "circle" && e.hasClass("event"):
						dots++
						assert.Equal(t, num(float64(sinkTop+sinkLaneOf[e.attrs["data-action"]]*sinkLaneDy)), e.attrs["cy"], "step %s on its lane", e.attrs["data-index"])
					case e.hasClass("restore"):
						dividers++
					case e.hasClass("settle"):
						settles++
					case e.hasClass("legend-entry"):
						legend++
					}
					assert.False(t, e.hasClass("divergence"), "no mark without one")
				}
				restores, settling := 0, 0
				for i, ev := range tr.Events {
					assert.Contains(t, doc, ">"+SinkStepLabel(ev)+"<", "step %d labelled", i+1)
					if ev.Action == spec.SinkRestore {
						restores++
					}
				}
				for _, s := range settlingSteps(tr.Events) {
					if s {
						settling++
					}
				}
				assert.Equal(t, len(tr.Events)-restores, dots)
				assert.Equal(t, restores, dividers)
				assert.Equal(t, settling, settles)
				assert.Equal(t, len(sinkKinds)+2, legend)
			}
		})
	}
}

// The labels say what each step names: a PreCommit its transaction,
// checkpoint and records count; a Restore the checkpoint after it;
// Complete its checkpoint; the others their transaction.
func TestSinkStepLabels(t *testing.T) {
	tr := readSink(t, "../../traces/sink/conforms/store-abort-reported.jsonl")
	var labels []string
	for _, ev := range tr.Events {
		labels = append(labels, SinkStepLabel(ev))
	}
	assert.Equal(t, []string{
		"PreCommit t1 ckpt 1, 2 records", "Complete ckpt 1", "StoreAbort t1", "ReportLoss t1",
		"PreCommit t2 ckpt 2, 2 records", "Complete ckpt 2", "StoreAbort t2", "Restore, ckpt 3 next",
		"ReportLoss t2", "Abort t3", "PreCommit t4 ckpt 3, 2 records", "Complete ckpt 3", "Commit t4",
	}, labels)
	assert.Equal(t, []bool{false, false, false, false, false, false, false, false, true, true, false, false, false}, settlingSteps(tr.Events))
}

// A divergence is ringed at its step, on the step's lane, naming the
// property; one at the end of the trace (step 0) is a line after the
// last step. The notes say where.
func TestSinkDiagramMarksDivergence(t *testing.T) {
	tr := readSink(t, "../../traces/sink/rejects/ExactlyOnceOutput-silent-loss.jsonl")
	for _, c := range []struct {
		step       int
		name, note string
	}{
		{4, "circle", "the audit diverges at step 4 (trace line 5), Commit t1, ringed in red: ExactlyOnceOutput"},
		{0, "line", "the audit diverges at the end of the trace: ExactlyOnceOutput"},
	} {
		var b bytes.Buffer
		_, notes, err := SinkDiagram(tr, &SinkMark{Step: c.step, Property: "ExactlyOnceOutput", Detail: "why"}, &b, SVG)
		require.NoError(t, err)
		assert.Contains(t, notes, c.note)
		var marks []element
		for _, e := range parse(t, b.Bytes()) {
			if e.hasClass("divergence") {
				marks = append(marks, e)
			}
		}
		require.Len(t, marks, 1)
		assert.Equal(t, c.name, marks[0].name)
		if c.step > 0 {
			assert.Equal(t, num(float64(left+c.step*sinkDx)), marks[0].attrs["cx"])
			assert.Equal(t, num(float64(sinkTop+sinkLaneDy)), marks[0].attrs["cy"], "a Commit is on the store's lane")
		}
		assert.True(t, strings.Contains(b.String(), ">diverges: ExactlyOnceOutput<"))
	}
}
