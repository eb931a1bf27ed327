package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayers enforces the dependency rule: spec knows nothing of the other
// layers; model and impl know spec and never each other.
func TestLayers(t *testing.T) {
	const mod = "github.com/markerwave/markerwave/"
	forbidden := map[string][]string{
		"spec/...":  {"model", "impl", "conformance", "cmd"},
		"model/...": {"impl", "conformance", "cmd"},
		"impl/...":  {"model", "conformance", "cmd"},
	}
	for pkgs, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-test", "../../"+pkgs).CombinedOutput()
		require.NoError(t, err, string(out))
		for _, dep := range strings.Fields(string(out)) {
			if !strings.HasPrefix(dep, mod) {
				continue
			}
			rel := strings.TrimPrefix(dep, mod)
			for _, b := range bad {
				assert.False(t, rel == b || strings.HasPrefix(rel, b+"/"), "%s depends on %s", pkgs, rel)
			}
		}
	}
}

func TestDispatch(t *testing.T) {
	var out, errb strings.Builder
	assert.Equal(t, 2, dispatch(nil, &out, &errb))
	assert.Contains(t, errb.String(), "usage: markerwave COMMAND")
	for _, name := range []string{"demo", "node", "check", "audit", "export"} {
		assert.Contains(t, errb.String(), name)
	}
	errb.Reset()
	assert.Equal(t, 2, dispatch([]string{"teleport"}, &out, &errb))
	assert.Contains(t, errb.String(), `unknown command "teleport"`)
	assert.Equal(t, 0, dispatch([]string{"help"}, &out, &errb))
}
