package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayers enforces the dependency rule: spec knows nothing of the other
// layers; model and impl know spec and never each other; tla (the TLC
// manifest) knows only spec, and model reads it in its tests only.
func TestLayers(t *testing.T) {
	const mod = "github.com/markerwave/markerwave/"
	rules := []struct {
		pkgs      string
		withTests bool // the packages' test dependencies too
		forbidden []string
	}{
		{"spec/...", true, []string{"tla", "model", "impl", "conformance", "cmd"}},
		{"tla/...", true, []string{"model", "impl", "conformance", "cmd"}},
		{"model/...", true, []string{"impl", "conformance", "cmd"}},
		{"model/...", false, []string{"tla"}},
		{"impl/...", true, []string{"tla", "model", "conformance", "cmd"}},
	}
	for _, r := range rules {
		for _, rel := range moduleDeps(t, mod, r.pkgs, r.withTests) {
			for _, b := range r.forbidden {
				assert.False(t, rel == b || strings.HasPrefix(rel, b+"/"), "%s depends on %s", r.pkgs, rel)
			}
		}
	}
	// Beyond spec, tla's code imports the standard library and its JSON
	// Schema validator only.
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../../tla/...").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		ok := dep == mod+"tla" || dep == mod+"spec" ||
			strings.HasPrefix(dep, "github.com/santhosh-tekuri/jsonschema/") || strings.HasPrefix(dep, "golang.org/x/text/")
		assert.True(t, ok, "tla depends on %s", dep)
	}
}

// moduleDeps lists the module's packages that pkgs depend on, relative to
// the module's path.
func moduleDeps(t *testing.T, mod, pkgs string, withTests bool) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if withTests {
		args = append(args, "-test")
	}
	out, err := exec.Command("go", append(args, "../../"+pkgs)...).CombinedOutput()
	require.NoError(t, err, string(out))
	var rel []string
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, mod) {
			rel = append(rel, strings.TrimPrefix(dep, mod))
		}
	}
	return rel
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
