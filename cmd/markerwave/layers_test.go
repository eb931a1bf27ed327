package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayers enforces the dependency rule: spec knows nothing of the other
// layers; model and impl know spec and never each other; tla (the TLC
// manifest) knows only spec, and model reads it in its tests only. Inside
// the layers: the audit (conformance, conformance/export) and the page
// (web) know no impl, so the explorer's WebAssembly compiles no runtime;
// the dataflow core (impl/dataflow) knows spec only, none of impl's
// shared parts; the TLC-file parser (model/tlcmodel) knows no model
// package, and the barrier model (model/barrier) not the Chandy-Lamport
// one (model). The instrumentation package (instrument) knows spec only,
// and the example implementation (examples/dessim) the instrumentation.
// The embedding package at the module root knows spec and impl only.
func TestLayers(t *testing.T) {
	t.Parallel() // go list only: beside the other parallel tests
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
		// Inside impl, the runtime sits on top: what it assembles, stores
		// and runs knows nothing of it.
		{"impl/store/...", true, []string{"impl/runtime"}},
		{"impl/snapshot/...", true, []string{"impl/runtime", "impl/store"}},
		{"impl/app/...", true, []string{"impl/runtime", "impl/store", "impl/snapshot"}},
		// The package an embedder imports (the module root) wraps impl for
		// a service: no model, audit or CLI comes with it.
		{".", true, []string{"tla", "model", "conformance", "cmd"}},
		// The audit and the page: no impl (conformance/fifo, a harness of
		// impl/transport, and the nemesis and mutation tests drive impl).
		{"conformance", false, []string{"impl", "cmd"}},
		{"conformance/export", false, []string{"impl", "cmd"}},
		{"web/...", false, []string{"impl", "cmd"}},
	}
	for _, r := range rules {
		for _, rel := range moduleDeps(t, mod, r.pkgs, r.withTests) {
			for _, b := range r.forbidden {
				assert.False(t, rel == b || strings.HasPrefix(rel, b+"/"), "%s depends on %s", r.pkgs, rel)
			}
		}
	}
	// Packages that may know only the packages listed (and themselves).
	only := []struct {
		pkg       string
		withTests bool
		allowed   []string
	}{
		// The dataflow runtime: its core knows spec alone; its runtimes
		// the shared framing (impl/transport, impl/wire) and its sink,
		// never the Chandy-Lamport runtime, core, store or coordination.
		{"impl/dataflow", false, []string{"spec"}},
		{"impl/dataflow/pipeline", false, []string{"spec", "impl/dataflow"}},
		{"impl/dataflow/sink", false, []string{"spec"}},
		{"impl/dataflow/sink/sinkdb", false, []string{"spec", "impl/dataflow/sink"}},
		{"impl/dataflow/sink/pgtest", false, []string{"internal/testenv"}},
		{"impl/dataflow/run", false, []string{"spec", "impl/dataflow", "impl/dataflow/sink", "impl/transport", "impl/wire"}},
		{"model/tlcmodel", true, nil},
		// What a test does without its tool (fail in CI, skip elsewhere),
		// which every layer's tests may use: it knows nothing of them.
		{"internal/testenv", true, nil},
		{"model/barrier", true, []string{"spec", "model/engine", "model/tlcmodel", "tla"}},
		// The instrumentation an outside Go implementation links in, and
		// the independent implementation in examples/, which knows
		// nothing of markerwave but the instrumentation.
		{"instrument", false, []string{"spec"}},
		{"examples/dessim", false, []string{"instrument", "spec"}},
	}
	for _, o := range only {
		for _, rel := range moduleDeps(t, mod, o.pkg, o.withTests) {
			rel = strings.TrimSuffix(rel, ".test")
			assert.True(t, rel == o.pkg || slices.Contains(o.allowed, rel), "%s depends on %s", o.pkg, rel)
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

// TestEtcdServerInOnePackage: etcd's server (about 80 CPU-seconds of a
// cold build) is compiled only for the package that embeds it
// (impl/coord/etcdembed) and the CLI; the coordination (impl/coord) and
// the embedding package need only the client.
func TestEtcdServerInOnePackage(t *testing.T) {
	t.Parallel() // go list only: beside the other parallel tests
	const server = "go.etcd.io/etcd/server/v3"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../../...").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		if !strings.HasPrefix(pkg, "github.com/markerwave/markerwave") {
			continue
		}
		for _, imp := range imports {
			if strings.HasPrefix(imp, server) {
				assert.Equal(t, "github.com/markerwave/markerwave/impl/coord/etcdembed", pkg, "%s imports %s", pkg, imp)
			}
		}
	}
	for _, pkg := range []string{"impl/coord", "."} {
		deps, err := exec.Command("go", "list", "-deps", "../../"+pkg).CombinedOutput()
		require.NoError(t, err, string(deps))
		assert.NotContains(t, string(deps), server, "%s depends on etcd's server", pkg)
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
