package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/web"
)

const serveAbout = `
Serves the explorer page: the Go model, compiled to WebAssembly, running
in the browser. Choose a scenario (the article's two accounts, the token
ring, the P1/P2 puzzle, concurrent snapshots, or constants of your own),
take the enabled actions or run at random, switch to a counter-example
specification and see the property that fails named, with the steps of
the run that make each property hold or fail and a link to why it holds
(docs/properties.md), and audit a trace file, or one of the project's
bundled traces (traces/conforms, traces/rejects), as markerwave audit
does. Everything the page needs is built into
this binary; it requests nothing from elsewhere.

It listens on loopback only unless --allow-remote is given, prints the
page's address on stdout and serves until interrupted (Ctrl-C).

Exit status: 0 stopped by an interrupt, or the site exported; 1 the
address could not be listened on, or the binary holds no WebAssembly
module (make wasm builds it); 2 bad usage or an unwritable --export folder.`

// serveSecurity are the headers of every response: the page may load
// only its own files (the same policy its <meta> states), and nothing is
// sniffed, cached stale or told where it came from.
var serveSecurity = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
	"Cache-Control":           "no-cache",
}

// serveContext is canceled when serve must stop: on SIGINT or SIGTERM.
func serveContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runServe runs `markerwave serve` until SIGINT or SIGTERM.
func runServe(args []string, stdout, stderr io.Writer) int {
	return serveUntil(serveContext, args, stdout, stderr)
}

// serveUntil runs `markerwave serve` until the context that until
// returns is canceled (tests pass their own, so that several can serve
// side by side).
func serveUntil(until func() (context.Context, context.CancelFunc), args []string, stdout, stderr io.Writer) int {
	f := newFlags("serve", "[flags]", serveAbout, stdout, stderr)
	addr := f.String("addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0 picks a free one); a host that is not loopback needs --allow-remote")
	remote := f.Bool("allow-remote", false, "allow an --addr that is not a loopback address: the page is then served to the network")
	dir := f.String("export", "", "write the page as a static site into `DIR` (any static file server serves it; it needs application/wasm for .wasm) instead of serving it")
	if code, done := f.parse(args); done {
		return code
	}
	if f.NArg() > 0 {
		return f.usageError("want no arguments, got %q", f.Arg(0))
	}
	site, err := web.Site()
	if err != nil {
		return f.fail(exitFail, err)
	}
	if *dir != "" {
		if f.isSet("addr") || *remote {
			return f.usageError("--export writes files and serves nothing: drop --addr and --allow-remote")
		}
		n, size, err := exportSite(site, *dir)
		if err != nil {
			return f.fail(exitUsage, err)
		}
		fmt.Fprintf(stdout, "wrote %s (%.1f MB) to %s\n", plural(n, "file"), float64(size)/1e6, *dir)
		return exitOK
	}
	if err := checkLoopback(*addr, *remote); err != nil {
		return f.usageError("%v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return f.fail(exitFail, err)
	}
	ctx, stop := until()
	defer stop()
	srv := &http.Server{Handler: siteHandler(site), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "http://%s/\n", ln.Addr())
	f.errorf("serving the explorer page on http://%s/ (Ctrl-C stops)", ln.Addr())
	select {
	case err := <-done:
		return f.fail(exitFail, err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return f.fail(exitFail, err)
	}
	f.errorf("stopped")
	return exitOK
}

// checkLoopback refuses a listen address whose host is not a loopback
// address ("localhost" or an IP that is), unless allowed: the empty host
// and 0.0.0.0 listen on every interface.
func checkLoopback(addr string, allowed bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v", addr, err)
	}
	if _, err := runtime.CheckPort(port, 0); err != nil {
		return fmt.Errorf("--addr %s: %v", addr, err)
	}
	if allowed || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	what := host + " is not a loopback address"
	if host == "" {
		what = "an empty host listens on every interface"
	}
	return fmt.Errorf("--addr %s: %s, so the page would be served to the network: give --allow-remote to mean it", addr, what)
}

// siteHandler serves the site's files with serveSecurity's headers.
func siteHandler(site fs.FS) http.Handler {
	files := http.FileServerFS(site)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range serveSecurity {
			w.Header().Set(k, v)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "the explorer page is read only", http.StatusMethodNotAllowed)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// exportSite writes every file of site into dir (creating it) and returns
// how many files and bytes it wrote.
func exportSite(site fs.FS, dir string) (n int, size int64, err error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return 0, 0, fmt.Errorf("--export %s: not a folder", dir)
	}
	err = fs.WalkDir(site, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(site, path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return err
		}
		n++
		size += int64(len(b))
		return nil
	})
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return n, size, fmt.Errorf("--export: %v", err)
		}
		return n, size, err
	}
	return n, size, nil
}
