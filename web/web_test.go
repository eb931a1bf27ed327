package web

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWasmFresh rebuilds the WebAssembly module and its glue as `make
// wasm` does, into a temporary folder, and fails if the ones built into
// this package differ: a stale module would show a model other than the
// one the rest of the tests check.
func TestWasmFresh(t *testing.T) {
	site, err := Site()
	require.NoError(t, err, "run `make wasm` (make test does)")
	dir := t.TempDir()
	out, err := exec.Command("make", "-s", "-C", "..", "wasm", "WASM_OUT="+filepath.Join(dir, WasmFile)).CombinedOutput()
	require.NoError(t, err, "make wasm: %s", out)
	for _, name := range []string{WasmFile, "wasm_exec.js"} {
		built, err := fs.ReadFile(site, name)
		require.NoError(t, err)
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(built, fresh), "web/static/%s is stale (built from other sources or another Go toolchain): run `make wasm`", name)
	}
}

// TestSite: the page's files are in the site, and index.html names only
// files the site holds, so it requests nothing from elsewhere.
func TestSite(t *testing.T) {
	site, err := Site()
	require.NoError(t, err)
	index, err := fs.ReadFile(site, "index.html")
	require.NoError(t, err)
	for _, f := range []string{"style.css", "wasm_exec.js", "app.js"} {
		assert.Contains(t, string(index), `"`+f+`"`)
		_, err := fs.Stat(site, f)
		assert.NoError(t, err, f)
	}
	app, err := fs.ReadFile(site, "app.js")
	require.NoError(t, err)
	assert.Contains(t, string(app), `fetch("main.wasm")`)
	assert.Contains(t, string(app), `new Worker("worker.js")`, "the audit runs in a worker")
	worker, err := fs.ReadFile(site, "worker.js")
	require.NoError(t, err)
	assert.Contains(t, string(worker), `importScripts("wasm_exec.js")`)
	assert.Contains(t, string(worker), `fetch("main.wasm")`)
	for _, doc := range []string{string(index), string(app), string(worker)} {
		assert.NotContains(t, doc, "http://")
		assert.False(t, strings.Contains(doc, "https://"), "the page links nowhere outside")
	}
}
