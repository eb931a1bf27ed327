//go:build js && wasm

// Command wasm is the explorer page's WebAssembly: the Go model
// (package model, what TLC's counts are reproduced by) and the audit
// (conformance) running in the browser, through web/explorer. Build it
// with `make wasm` (GOOS=js GOARCH=wasm, into web/static/main.wasm).
//
// It sets globalThis.markerwave to an object of functions the page
// calls; each takes strings and numbers and returns a JSON string, an
// object {"error": "..."} when the call fails:
//
//	scenarios()                      the scenarios, variants and limits
//	start(scenario, variant, schedule)  a new session of a scenario, Chandy-Lamport or barrier (variant "": the scenario's own), the schedule replayed
//	startConstants(json, variant, schedule)  the same for constants of one's own
//	take(token)  back()  random(seed, n)     step the session
//	view()                           the session as the page shows it
//	trace()                          the run as a trace file (JSON lines)
//	load(name, text, progress)       audit a trace file; progress(percent) is told how far the replay is
//	traceDiagram(upto, snap)         the loaded trace's diagram
//
// The page runs one instance on its main thread for the model session,
// and calls load and traceDiagram in another, in its audit worker
// (web/static/worker.js), so that a long audit never freezes the page.
package main

import (
	"encoding/json"
	"fmt"
	"syscall/js"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/web/explorer"
)

var (
	session explorer.Stepper
	loaded  *explorer.Loaded
)

// reply renders v as the JSON a call returns.
func reply(v any, err error) any {
	if err != nil {
		return errorReply(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errorReply(err)
	}
	return string(b)
}

func errorReply(err error) any {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	return string(b)
}

// view replies with the session's view, or err.
func view(err error) any {
	if err != nil {
		return errorReply(err)
	}
	if session == nil {
		return errorReply(fmt.Errorf("no scenario started"))
	}
	return reply(session.Render())
}

// started replaces the session with s, replays schedule and replies with
// its view; a schedule that does not replay keeps the steps that did and
// says where it stopped.
func started(s explorer.Stepper, err error, schedule string) any {
	if err != nil {
		return errorReply(err)
	}
	session = s
	rerr := s.Replay(schedule)
	v, err := s.Render()
	if err != nil || rerr == nil {
		return reply(v, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errorReply(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return errorReply(err)
	}
	out["warning"] = rerr.Error()
	return reply(out, nil)
}

// fn wraps f as a JavaScript function; a panic becomes an error reply, so
// a bug shows in the page instead of stopping the program.
func fn(f func(args []js.Value) any) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) (out any) {
		defer func() {
			if r := recover(); r != nil {
				out = errorReply(fmt.Errorf("internal error: %v", r))
			}
		}()
		return f(args)
	})
}

// arg is args[i] as a string, "" if absent.
func arg(args []js.Value, i int) string {
	if i >= len(args) || args[i].Type() != js.TypeString {
		return ""
	}
	return args[i].String()
}

// num is args[i] as an integer, 0 if absent.
func num(args []js.Value, i int) int {
	if i >= len(args) || args[i].Type() != js.TypeNumber {
		return 0
	}
	return args[i].Int()
}

// progress is args[i], a JavaScript function, as an audit's progress
// callback, called with the percentage of events replayed each time it
// grows by one; nil if absent.
func progress(args []js.Value, i int) func(done, total int) {
	if i >= len(args) || args[i].Type() != js.TypeFunction {
		return nil
	}
	f, last := args[i], -1
	return func(done, total int) {
		if pct := done * 100 / max(total, 1); pct > last {
			last = pct
			f.Invoke(pct)
		}
	}
}

// scenarios replies with the page's scenarios, Chandy-Lamport and
// barrier, their specifications and the limits on constants.
func scenarios() any { return reply(explorer.NewCatalogue()) }

func main() {
	api := map[string]any{
		"scenarios": fn(func([]js.Value) any { return scenarios() }),
		"start": fn(func(a []js.Value) any {
			s, err := explorer.Start(arg(a, 0), arg(a, 1))
			return started(s, err, arg(a, 2))
		}),
		"startConstants": fn(func(a []js.Value) any {
			var k explorer.Constants
			if err := spec.DecodeStrict([]byte(arg(a, 0)), &k); err != nil {
				return errorReply(fmt.Errorf("constants: %w", err))
			}
			s, err := explorer.NewSession(k, model.Variant(arg(a, 1)))
			return started(s, err, arg(a, 2))
		}),
		"take": fn(func(a []js.Value) any {
			if session == nil {
				return view(nil)
			}
			return view(session.Take(arg(a, 0)))
		}),
		"back": fn(func([]js.Value) any {
			if session != nil {
				session.Back()
			}
			return view(nil)
		}),
		"random": fn(func(a []js.Value) any {
			if session != nil {
				session.Random(uint64(num(a, 0)), num(a, 1))
			}
			return view(nil)
		}),
		"view": fn(func([]js.Value) any { return view(nil) }),
		"trace": fn(func([]js.Value) any {
			if session == nil {
				return view(nil)
			}
			s, err := session.TraceJSONL()
			return reply(map[string]string{"trace": s}, err)
		}),
		"load": fn(func(a []js.Value) any {
			l, err := explorer.Load(arg(a, 0), arg(a, 1), progress(a, 2))
			if err != nil {
				return errorReply(err)
			}
			loaded = l
			return reply(l.View(), nil)
		}),
		// loadFiles audits files given together (explorer.LoadFiles):
		// args[0] is a JSON array of {name, text}.
		"loadFiles": fn(func(a []js.Value) any {
			var files []explorer.TraceFile
			if err := json.Unmarshal([]byte(arg(a, 0)), &files); err != nil {
				return errorReply(fmt.Errorf("loadFiles: %w", err))
			}
			l, err := explorer.LoadFiles(files, progress(a, 1))
			if err != nil {
				return errorReply(err)
			}
			loaded = l
			return reply(l.View(), nil)
		}),
		"traceDiagram": fn(func(a []js.Value) any {
			if loaded == nil {
				return errorReply(fmt.Errorf("no trace loaded"))
			}
			d, err := loaded.Diagram(num(a, 0), spec.SnapID(num(a, 1)))
			return reply(map[string]string{"diagram": d}, err)
		}),
	}
	js.Global().Set("markerwave", js.ValueOf(api))
	js.Global().Call("dispatchEvent", js.Global().Get("Event").New("markerwave-ready"))
	select {}
}
