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

// check runs the barrier models through model/barrier, reporting as for
// the Chandy-Lamport ones.
func TestCheckBarrierModels(t *testing.T) {
	code, out, errs := check("--model", "../../tla/MCBarrierUnalignedDAG.cfg", "--workers", "2")
	require.Equal(t, exitOK, code, out+errs)
	assert.Contains(t, out, "Model MCBarrierUnalignedDAG (../../tla/MCBarrierUnalignedDAG.cfg): Spec, unaligned, 4 nodes, 3 edges.\n")
	assert.Contains(t, out, "Checking BarrierTypeOK, BarrierConsistentCut, BarrierExactChannelState, AlignedNoChannelState, BarrierSnapshotReachable, BarrierExactlyOnce, BarriersComplete.\n")
	assert.Contains(t, out, "Not checking SnapshotRefinement: only TLC evaluates it.\n")
	assert.Contains(t, out, "Model checking completed. No error has been found.\n")
	assert.Contains(t, out, "3258 states generated, 1645 distinct states found, 0 states left on queue.\n")
	assert.Empty(t, errs)

	code, out, errs = check("--model", "../../tla/MCBarrierNoBlock.cfg")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, out, "Error: Invariant BarrierExactlyOnce is violated.\n")
	assert.Contains(t, out, "State 10: <Restore>\n")
	assert.Contains(t, out, `State 13: <ProcessV(<<"X", "K">>,FALSE,TRUE)>`)
	assert.Contains(t, out, `/\ out = (<<"S1", 1>> :> 2 @@`, "the sink has received S1's first record twice")
	assert.Empty(t, errs)
}

func TestCheckBarrierJSON(t *testing.T) {
	code, out, _ := check("--model", "../../tla/MCBarrierNoLog.cfg", "--json")
	assert.Equal(t, exitFail, code)
	var v checkVerdict
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, "violated", v.Verdict)
	assert.Equal(t, "SpecNoLog", v.Specification)
	assert.Equal(t, "BarrierExactlyOnce", string(v.Property))
	require.Len(t, v.Counterexample, 16)
	assert.Equal(t, "Restore", v.Counterexample[15].Action)
	assert.Contains(t, v.Counterexample[15].Changed, "restored")
}

// Usage errors and bad barrier models exit 2 naming what is wrong.
func TestCheckBarrierErrors(t *testing.T) {
	code, _, errs := check("--model", "../../tla/MCBarrierAlignedDAG.cfg", "--simulate")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "markerwave check: --simulate: ../../tla/MCBarrierAlignedDAG.cfg is a model of BarrierSnapshots.tla, which check searches exhaustively only")

	dir := t.TempDir()
	for _, ext := range []string{".tla", ".cfg"} {
		b, err := os.ReadFile("../../tla/MCBarrierAlignedDAG" + ext)
		require.NoError(t, err)
		s := strings.ReplaceAll(string(b), "MCBarrierAlignedDAG", "MCBad")
		s = strings.ReplaceAll(s, `MCMode   == "aligned"`, `MCMode   == "eager"`)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "MCBad"+ext), []byte(s), 0o644))
	}
	code, out, errs := check("--model", filepath.Join(dir, "MCBad.cfg"))
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, `MCBad.tla:14: Mode: want "aligned" or "unaligned"`)
}
