package web

import (
	"bytes"
	"encoding/json"
	"html/template"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/web/explorer"
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
	// The page links the properties' arguments (docs/properties.md at
	// explorer.DocsBase) and nothing else outside, and requests nothing
	// from outside: a link is followed only when clicked.
	assert.Contains(t, string(index), `href="`+explorer.DocsBase+`#consistentcut"`)
	for _, doc := range []string{strings.ReplaceAll(string(index), explorer.DocsBase, ""), string(app), string(worker)} {
		assert.NotContains(t, doc, "http://")
		assert.False(t, strings.Contains(doc, "https://"), "the page links nowhere outside but to the properties' arguments")
	}
}

// TestPageBeforeWasm: index.html holds, before any script runs, the
// scenarios (each a link that opens it), the specifications, the
// properties with what each says and the link to its argument, and the
// bundled traces.
func TestPageBeforeWasm(t *testing.T) {
	site, err := Site()
	require.NoError(t, err)
	index, err := fs.ReadFile(site, "index.html")
	require.NoError(t, err)
	page := string(index)
	all, err := explorer.Scenarios()
	require.NoError(t, err)
	for _, sc := range all {
		assert.Contains(t, page, `<a href="#s=`+sc.ID+`" title="`+template.HTMLEscapeString(sc.About)+`">`, sc.ID)
		assert.Contains(t, page, `<option value="`+sc.ID+`" data-variant="`+string(sc.Variant)+`">`, sc.ID)
	}
	for _, v := range explorer.Variants {
		assert.Contains(t, page, `<option value="`+string(v.Variant)+`"`, v.Variant)
	}
	barrier, err := explorer.BarrierScenarios()
	require.NoError(t, err)
	for _, sc := range barrier {
		assert.Contains(t, page, `<a href="#s=`+sc.ID+`" title="`+template.HTMLEscapeString(sc.About)+`">`, sc.ID)
		assert.Contains(t, page, `<option value="`+sc.ID+`" data-variant="`+string(sc.Variant)+`" data-family="`+sc.Family+`">`, sc.ID)
	}
	for _, v := range explorer.BarrierVariants {
		assert.Contains(t, page, `<option value="`+string(v.Variant)+`" data-family="`+v.Family+`" hidden>`, v.Variant)
	}
	for _, p := range explorer.PropertyDocs {
		assert.Contains(t, page, `<li data-prop="`+string(p.Name)+`"><strong>`+string(p.Name)+`</strong> (`+p.Where+`)`, p.Name)
		assert.Contains(t, page, `href="`+explorer.DocsBase+`#`+p.Anchor+`"`, p.Name)
	}
	assert.Contains(t, page, `<option value="traces/rejects/ConsistentCut-orphan.jsonl"`)
}

// TestBundledTraces: the audit tab's traces are in the site, listed in
// TracesIndex, and each audits as its folder says: conforms/ conforms,
// rejects/ is rejected for the property its name begins with.
func TestBundledTraces(t *testing.T) {
	site, err := Site()
	require.NoError(t, err)
	b, err := fs.ReadFile(site, TracesIndex)
	require.NoError(t, err)
	var list []Trace
	require.NoError(t, json.Unmarshal(b, &list))
	want, err := Traces()
	require.NoError(t, err)
	assert.Equal(t, want, list)
	var folders = map[string]int{}
	for _, tr := range list {
		folders[tr.Folder]++
		text, err := fs.ReadFile(site, tr.Path)
		require.NoError(t, err, tr.Path)
		l, err := explorer.Load(tr.Name, string(text), nil)
		require.NoError(t, err, tr.Path)
		v := l.View()
		if tr.Folder == "conforms" {
			assert.True(t, v.OK, "%s: %s", tr.Path, v.Verdict)
			continue
		}
		assert.False(t, v.OK, tr.Path)
		assert.True(t, strings.HasPrefix(tr.Name, string(v.Property)+"-"), "%s is rejected for %s", tr.Path, v.Property)
	}
	assert.Positive(t, folders["conforms"])
	assert.Positive(t, folders["rejects"])
}

// TestSiteFS: the site is a well-behaved fs.FS (fstest.TestFS opens,
// reads, seeks, stats and lists every file and folder) holding the
// page, the bundled traces and their list; and a memFS says what is
// missing or invalid by name.
func TestSiteFS(t *testing.T) {
	site, err := Site()
	require.NoError(t, err)
	want := []string{"index.html", "app.js", WasmFile, TracesIndex}
	list, err := Traces()
	require.NoError(t, err)
	for _, tr := range list {
		want = append(want, tr.Path)
	}
	require.NoError(t, fstest.TestFS(site, want...))
	m := memFS{"a/b.txt": []byte("hi")}
	_, err = m.Open("a/c.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "a/c.txt")
	_, err = m.Open("/a")
	assert.ErrorIs(t, err, fs.ErrInvalid)
	entries, err := fs.ReadDir(m, ".")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.True(t, entries[0].IsDir(), "a is an implied folder")
	require.NoError(t, fstest.TestFS(m, "a/b.txt"))
}
