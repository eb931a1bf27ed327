package barrier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A model's constants, as MCBarrierAlignedDAG.tla writes them.
var goodDefs = map[string]string{
	"MCSrc":    `{"S1", "S2"}`,
	"MCOp":     `{"X"}`,
	"MCSnk":    `"K"`,
	"MCEdge":   `{<<"S1", "X">>, <<"S2", "X">>, <<"X", "K">>}`,
	"MCBack":   `{}`,
	"MCBudget": `[S1 |-> 2, S2 |-> 1]`,
	"MCCap":    `1`,
	"MCIter":   `0`,
	"MCMode":   `"aligned"`,
}

var defOrder = []string{"MCSrc", "MCOp", "MCSnk", "MCEdge", "MCBack", "MCBudget", "MCCap", "MCIter", "MCMode"}

// writeModel writes MCT.tla (extending extends, with defs overriding
// goodDefs) and MCT.cfg into a fresh directory and returns the .cfg path.
func writeModel(t *testing.T, extends string, defs map[string]string, spec string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("---- MODULE MCT ----\nEXTENDS " + extends + "\n")
	for _, k := range defOrder {
		v := goodDefs[k]
		if o, ok := defs[k]; ok {
			v = o
		}
		b.WriteString(k + " == " + v + "\n")
	}
	b.WriteString("====\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MCT.tla"), []byte(b.String()), 0o644))
	var c strings.Builder
	c.WriteString("CONSTANTS\n")
	for _, k := range defOrder {
		c.WriteString("    " + strings.TrimPrefix(k, "MC") + " <- " + k + "\n")
	}
	c.WriteString("SPECIFICATION " + spec + "\nINVARIANTS\n    BarrierTypeOK\n    BarrierExactlyOnce\nPROPERTIES\n    BarriersComplete\nCHECK_DEADLOCK FALSE\n")
	path := filepath.Join(dir, "MCT.cfg")
	require.NoError(t, os.WriteFile(path, []byte(c.String()), 0o644))
	return path
}

func TestLoadGoodModel(t *testing.T) {
	cfg, err := Load(writeModel(t, "BarrierSnapshots", nil, "SpecNoBlock"))
	require.NoError(t, err)
	assert.Equal(t, "MCT", cfg.Name)
	assert.Equal(t, []string{"S1", "S2", "X", "K"}, cfg.Nodes)
	assert.Equal(t, VariantNoBlock, cfg.Variant)
	assert.Equal(t, Aligned, cfg.Mode)
	assert.Equal(t, []int{2, 1, 0, 0}, cfg.Budget)
	assert.Equal(t, 3, cfg.NumKeys())
	assert.Len(t, cfg.Invariants, 2)
	assert.Len(t, cfg.Properties, 1)
}

// Every bad model is refused with the file, the line and what is wrong.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name    string
		extends string
		defs    map[string]string
		spec    string
		want    string
	}{
		{"mode", "", map[string]string{"MCMode": `"eager"`}, "Spec", `MCT.tla:11: Mode: want "aligned" or "unaligned"`},
		{"unknown node", "", map[string]string{"MCEdge": `{<<"S1", "X">>, <<"S2", "X">>, <<"X", "Z">>}`}, "Spec", `MCT.tla:6: Edge: edge X->Z joins a node the graph does not have`},
		{"self-loop", "", map[string]string{"MCEdge": `{<<"S1", "X">>, <<"S2", "X">>, <<"X", "K">>, <<"X", "X">>}`}, "Spec", `Edge: edge X->X is a self-loop`},
		{"source with two outputs", "", map[string]string{"MCEdge": `{<<"S1", "X">>, <<"S1", "K">>, <<"S2", "X">>, <<"X", "K">>}`}, "Spec", `Edge: source "S1" must have one output that is not a back-edge, not 2`},
		{"back-edge not an edge", "", map[string]string{"MCBack": `{<<"K", "X">>}`}, "Spec", `Back: <<"K", "X">> is not in Edge`},
		{"budget of an operator", "", map[string]string{"MCBudget": `[S1 |-> 2, S2 |-> 1, X |-> 1]`}, "Spec", `Budget: "X" is not a source`},
		{"budget missing", "", map[string]string{"MCBudget": `[S1 |-> 2]`}, "Spec", `Budget: Budget["S2"] must be a natural number`},
		{"cap", "", map[string]string{"MCCap": `0`}, "Spec", `MCT.tla:9: Cap: cap must be at least 1, not 0`},
		{"sink not a string", "", map[string]string{"MCSnk": `{"K"}`}, "Spec", `Snk: want a node name (a string), not a set`},
		{"unknown spec", "", nil, "SpecFast", `unknown specification "SpecFast"`},
		{"Chandy-Lamport module", "ChandyLamport", nil, "Spec", "MCT does not extend BarrierSnapshots (EXTENDS ChandyLamport)"},
	}
	for _, c := range cases {
		ext := c.extends
		if ext == "" {
			ext = "BarrierSnapshots"
		}
		_, err := Load(writeModel(t, ext, c.defs, c.spec))
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	_, err := Load(filepath.Join(t.TempDir(), "MCNone.cfg"))
	assert.ErrorContains(t, err, "MCNone.cfg")
}
