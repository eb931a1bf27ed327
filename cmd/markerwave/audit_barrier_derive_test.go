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

// TestAuditBarrierDerived: a barrier trace that leaves out what the
// audit derives (records by source and number, empty parts) is audited
// as the whole one, and the verdict, in text and in --json, says what
// was derived.
func TestAuditBarrierDerived(t *testing.T) {
	b, err := os.ReadFile("../../traces/barrier/conforms/aligned-dag.jsonl")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	out := []string{lines[0]}
	for _, l := range lines[1:] {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &ev))
		if r, ok := ev["rec"].(map[string]any); ok {
			ev["rec"] = map[string]any{"src": r["src"], "i": r["i"]}
		}
		if _, ok := ev["part"]; ok {
			ev["part"] = map[string]any{}
		}
		nb, err := json.Marshal(ev)
		require.NoError(t, err)
		out = append(out, string(nb))
	}
	path := filepath.Join(t.TempDir(), "stripped.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644))

	var o, e strings.Builder
	require.Equal(t, exitOK, dispatch([]string{"audit", path}, &o, &e), e.String())
	assert.Contains(t, o.String(), "conforms: ")
	assert.Contains(t, o.String(), "derived from the trace (the checks on them hold by construction): ")

	o.Reset()
	require.Equal(t, exitOK, dispatch([]string{"audit", "--json", path}, &o, &e), e.String())
	var v struct {
		OK    bool     `json:"ok"`
		Notes []string `json:"notes"`
	}
	require.NoError(t, json.Unmarshal([]byte(o.String()), &v), o.String())
	assert.True(t, v.OK)
	require.Len(t, v.Notes, 1)
	assert.Contains(t, v.Notes[0], "record seqs and hops (Message)")
}
