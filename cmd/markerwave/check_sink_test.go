package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// check runs the two-phase-commit sink models through model/barrier's
// sink search, reporting as for the barrier models.
func TestCheckSinkModels(t *testing.T) {
	code, out, errs := check("--model", "../../tla/MCBarrierSinkTimeout.cfg", "--workers", "2")
	require.Equal(t, exitOK, code, out+errs)
	assert.Contains(t, out, "Model MCBarrierSinkTimeout (../../tla/MCBarrierSinkTimeout.cfg): SpecSink, 2 nodes, 1 edge, at most 2 checkpoints, 1 restore and 1 store abort.\n")
	assert.Contains(t, out, "Checking SinkTypeOK, NoDuplicateOutput, ExactlyOnceOutput, CommittedOnlyComplete, CompleteCommitted.\n")
	assert.Contains(t, out, "15047 states generated, 8446 distinct states found, 0 states left on queue.\n")
	assert.Empty(t, errs)

	code, out, errs = check("--model", "../../tla/MCBarrierSinkSilent.cfg")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, out, "Error: Invariant ExactlyOnceOutput is violated.\n")
	assert.Contains(t, out, "State 8: <ReportLossV(1,TRUE)>\n")
	assert.Contains(t, out, `/\ txns = <<[ck |-> 1, st |-> "committed", recs |-> {<<"S1", 1>>}], [ck |-> 0, st |-> "open", recs |-> {}]>>`)
	assert.Empty(t, errs)
}

func TestCheckSinkJSON(t *testing.T) {
	code, out, _ := check("--model", "../../tla/MCBarrierSinkNoNotify.cfg", "--json")
	assert.Equal(t, exitFail, code)
	var v checkVerdict
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, "violated", v.Verdict)
	assert.Equal(t, "SpecSinkNoNotify", v.Specification)
	assert.Equal(t, "CompleteCommitted", string(v.Property))
	require.Len(t, v.Counterexample, 4)
	assert.Equal(t, "CompleteCkpt", v.Counterexample[3].Action)
	assert.Contains(t, v.Counterexample[3].Changed, "done")
}

// Usage errors and bad sink models exit 2 naming what is wrong.
func TestCheckSinkErrors(t *testing.T) {
	code, _, errs := check("--model", "../../tla/MCBarrierSinkPipeline.cfg", "--simulate")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "is a model of BarrierSink.tla, which check searches exhaustively only")

	dir := t.TempDir()
	for _, ext := range []string{".tla", ".cfg"} {
		b, err := os.ReadFile("../../tla/MCBarrierSinkPipeline" + ext)
		require.NoError(t, err)
		s := strings.ReplaceAll(string(b), "MCBarrierSinkPipeline", "MCBad")
		s = strings.ReplaceAll(s, "MCMaxCkpt     == 2", "MCMaxCkpt     == 0")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "MCBad"+ext), []byte(s), 0o644))
	}
	code, out, errs := check("--model", filepath.Join(dir, "MCBad.cfg"))
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, "MCBad.tla:")
	assert.Contains(t, errs, "MaxCkpt: want an integer in 1..60, not 0")
}
