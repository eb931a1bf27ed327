package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/conformance/export"
)

// export --diagram draws every bundled sink trace: each step labelled,
// a conforming trace unmarked, a rejected one marked where the audit
// diverges, naming the property the audit names.
func TestExportSinkDiagram(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "traces", "sink", "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 7)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := conformance.ReadSinkTraceFile(path)
			require.NoError(t, err)
			r := conformance.AuditSink(tr, conformance.Options{})
			rejects := strings.Contains(path, "rejects")
			require.Equal(t, rejects, !r.OK())
			for _, name := range []string{"d.svg", "d.html"} {
				out := filepath.Join(t.TempDir(), name)
				code, stdout, errs := exportCmd("--diagram", out, path)
				require.Equal(t, exitOK, code, errs)
				assert.Empty(t, errs)
				assert.Contains(t, stdout, "wrote "+out+": columns 1..")
				b, err := os.ReadFile(out)
				require.NoError(t, err)
				wellFormedXML(t, b)
				doc := string(b)
				for _, ev := range tr.Events {
					assert.Contains(t, doc, ">"+export.SinkStepLabel(ev)+"<")
				}
				assert.Equal(t, rejects, strings.Contains(doc, `class="divergence"`))
				if rejects {
					prop := string(r.Property())
					assert.Contains(t, doc, ">diverges: "+prop+"<")
					assert.Contains(t, stdout, "  the audit diverges at step "+strconv.Itoa(r.Divergence.Step)+" (trace line ")
					assert.Contains(t, stdout, "ringed in red: "+prop+"\n")
				}
			}
		})
	}
}

// A sink trace that is not well formed exits 2 naming its line and
// writes no diagram; the other exports are refused, naming the trace.
func TestExportSinkErrors(t *testing.T) {
	good := filepath.Join("..", "..", "traces", "sink", "conforms", "store-abort-reported.jsonl")
	b, err := os.ReadFile(good)
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	lines[3] = `{"action":"Commit","ckpt":2}`
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644))
	out := filepath.Join(t.TempDir(), "d.svg")
	code, stdout, errs := exportCmd("--diagram", out, bad)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "markerwave export: "+bad+": trace line 4: Commit: txn missing\n", errs)
	assert.Empty(t, stdout)
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no diagram of a bad trace")

	for _, args := range [][]string{{"--shiviz", "x.log"}, {"--tlc", t.TempDir()}, {"--diagram", out, "--snap", "1"}, {"--diagram", out, "--window", "1:2"}} {
		code, _, errs := exportCmd(append(args, good)...)
		assert.Equal(t, exitUsage, code, args)
		assert.Contains(t, errs, good+" is a sink trace: it has a --diagram only", args)
	}
}
