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

// TestDispatch checks the front door: the command list, help, the
// version, and unknown commands and flags.
func TestDispatch(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := dispatch(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	listsCommands := func(t *testing.T, s string) {
		t.Helper()
		assert.True(t, strings.HasPrefix(s, "usage: markerwave COMMAND"), s)
		for _, c := range commands {
			assert.Contains(t, s, "\n  "+c.name+" ")
			assert.Contains(t, s, c.summary)
		}
	}

	// No arguments at all is a usage error: the list on stderr, exit 2.
	code, out, errs := run()
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	listsCommands(t, errs)
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"-help"}} {
		code, out, errs := run(args...)
		assert.Equal(t, exitOK, code, args)
		assert.Empty(t, errs, args)
		listsCommands(t, out)
	}

	for _, c := range commands {
		code, out, errs := run("help", c.name)
		code2, out2, errs2 := run(c.name, "--help")
		assert.Equal(t, []any{code2, out2, errs2}, []any{code, out, errs}, "help %s is %s --help", c.name, c.name)
	}

	for _, args := range [][]string{{"--version"}, {"-version"}} {
		code, out, errs = run(args...)
		assert.Equal(t, exitOK, code)
		assert.Empty(t, errs)
		assert.Regexp(t, `^markerwave \S.*\n$`, out)
	}
	assert.Equal(t, "markerwave "+version()+"\n", out)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"teleport"}, "markerwave: unknown command \"teleport\"\n"},
		{[]string{"--teleport"}, "markerwave: unknown flag \"--teleport\"\n"},
		{[]string{"help", "teleport"}, "markerwave help: unknown command \"teleport\"\n"},
		{[]string{"help", "audit", "export"}, "markerwave help: want one command, got 2 arguments\n"},
	} {
		code, out, errs := run(tc.args...)
		assert.Equal(t, exitUsage, code, tc.args)
		assert.Empty(t, out, tc.args)
		assert.Equal(t, tc.want+"run 'markerwave help' for the commands\n", errs, tc.args)
	}
}
