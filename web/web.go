// Package web holds the explorer page: its static files (static/), the
// Go model compiled to WebAssembly (static/main.wasm, built by `make
// wasm` from web/wasm; never committed) and the page's logic on the
// model (web/explorer). markerwave serve serves Site.
package web

import (
	"embed"
	"errors"
	"io/fs"
)

// WasmFile is the WebAssembly module's name in the site.
const WasmFile = "main.wasm"

//go:embed static
var static embed.FS

// ErrNoWasm says the binary was built without the WebAssembly module.
var ErrNoWasm = errors.New("this binary holds no web/static/" + WasmFile + ": run `make wasm` (GOOS=js GOARCH=wasm) and build markerwave again; `make serve` does both")

// Site is the page's files, rooted at index.html; ErrNoWasm if the
// WebAssembly module was not built into the binary.
func Site() (fs.FS, error) {
	site, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(site, WasmFile); err != nil {
		return nil, ErrNoWasm
	}
	return site, nil
}
