// Package web holds the explorer page: its static files (static/), the
// Go model compiled to WebAssembly (static/main.wasm, built by `make
// wasm` from web/wasm; never committed), the page's logic on the model
// (web/explorer), and index.html.tmpl, the page's HTML, rendered with what
// it shows before the WebAssembly is ready (the scenarios, the
// specifications, the properties and their arguments, the bundled traces,
// and the first scenario's initial state as the model renders it:
// explorer.First).
// markerwave serve serves Site.
package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"strings"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/traces"
	"github.com/markerwave/markerwave/web/explorer"
)

// WasmFile is the WebAssembly module's name in the site.
const WasmFile = "main.wasm"

// TracesIndex is the bundled traces' list in the site, as JSON (Trace).
const TracesIndex = "traces/index.json"

//go:embed static
var static embed.FS

//go:embed index.html.tmpl
var indexTemplate string

// ErrNoWasm says the binary was built without the WebAssembly module.
var ErrNoWasm = errors.New("this binary holds no web/static/" + WasmFile + ": run `make wasm` (GOOS=js GOARCH=wasm) and build markerwave again; `make serve` does both")

// Site is the page's files, rooted at index.html: static/, index.html
// rendered, and the bundled traces under traces/ with their list
// (TracesIndex); ErrNoWasm if the WebAssembly module was not built into
// the binary.
func Site() (fs.FS, error) {
	site, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(site, WasmFile); err != nil {
		return nil, ErrNoWasm
	}
	files := memFS{}
	if err := copyInto(files, site, ""); err != nil {
		return nil, err
	}
	if err := copyInto(files, traces.Files, "traces"); err != nil {
		return nil, err
	}
	list, err := Traces()
	if err != nil {
		return nil, err
	}
	if err := putJSON(files, TracesIndex, list); err != nil {
		return nil, err
	}
	index, err := renderIndex(list)
	if err != nil {
		return nil, err
	}
	files["index.html"] = index
	return files, nil
}

// copyInto adds every file of src to files, under folder dir.
func copyInto(files memFS, src fs.FS, dir string) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		files[path.Join(dir, p)] = b
		return nil
	})
}

func putJSON(files memFS, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	files[name] = b
	return nil
}

// Trace is one of the bundled traces the audit tab offers: its path in
// the site (traces/conforms/token-ring.jsonl), its folder (conforms or
// rejects: what the audit should say), and its header's note.
type Trace struct {
	Path   string `json:"path"`
	Name   string `json:"name"`
	Folder string `json:"folder"`
	Note   string `json:"note"`
}

// Traces lists the bundled traces (traces.Files), conforms/ first.
func Traces() ([]Trace, error) {
	var out []Trace
	for _, folder := range []string{"conforms", "rejects"} {
		names, err := fs.Glob(traces.Files, folder+"/*.jsonl")
		if err != nil {
			return nil, err
		}
		for _, p := range names {
			t, err := traceOf(p, folder)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// traceOf reads the bundled trace p's header.
func traceOf(p, folder string) (Trace, error) {
	b, err := fs.ReadFile(traces.Files, p)
	if err != nil {
		return Trace{}, err
	}
	tr, _, err := spec.ReadTraceLines(bytes.NewReader(b))
	if err != nil {
		return Trace{}, fmt.Errorf("traces/%s: %w", p, err)
	}
	return Trace{Path: "traces/" + p, Name: path.Base(p), Folder: folder, Note: tr.Header.Note}, nil
}

// page is what index.html.tmpl renders: the catalogue (the scenarios,
// their specifications, the limits), the first scenario's specification
// (Default), the properties, the bundled traces, and First.
type page struct {
	explorer.Catalogue
	Default    model.Variant
	Properties []explorer.PropertyDoc
	DocsBase   string
	Traces     []Trace
	// First is explorer.First: the catalogue and the first scenario's
	// initial view, which app.js shows before the WebAssembly has started.
	First template.JS
}

// renderIndex renders index.html.tmpl.
func renderIndex(list []Trace) ([]byte, error) {
	cat, err := explorer.NewCatalogue()
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("index.html").Funcs(template.FuncMap{"lower": strings.ToLower}).Parse(indexTemplate)
	if err != nil {
		return nil, err
	}
	first, err := explorer.First(cat)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	// json.Marshal escapes <, > and & in strings, so the JSON cannot end
	// the script element it is rendered into.
	err = tmpl.Execute(&b, page{Catalogue: cat, Default: cat.Scenarios[0].Variant, First: template.JS(first),
		Properties: explorer.PropertyDocs, DocsBase: explorer.DocsBase, Traces: list})
	return b.Bytes(), err
}
