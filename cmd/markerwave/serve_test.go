package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/web"
	"github.com/markerwave/markerwave/web/explorer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve follows the commands' conventions (TestConventions); it reads no
// input file.
func init() {
	commandConventions["serve"] = conventions{flags: []string{"addr", "allow-remote", "export"}}
}

// TestServeFlags: loopback only unless --allow-remote, no arguments,
// --export writes the site.
func TestServeFlags(t *testing.T) {
	serve := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := runServe(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, _ := serve("--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "-allow-remote")
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.0.2.1:80", "example.org:80"} {
		code, _, errs := serve("--addr", addr)
		assert.Equal(t, exitUsage, code, addr)
		assert.Contains(t, errs, "markerwave serve: --addr "+addr, addr)
		assert.Contains(t, errs, "--allow-remote", addr)
	}
	code, _, errs := serve("--addr", "nonsense")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `--addr "nonsense"`)
	code, _, errs = serve("extra")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `want no arguments, got "extra"`)
	code, _, errs = serve("--export", t.TempDir(), "--addr", "127.0.0.1:1")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--export writes files and serves nothing")

	dir := filepath.Join(t.TempDir(), "site")
	code, out, errs = serve("--export", dir)
	require.Equal(t, exitOK, code, errs)
	bundled, err := web.Traces()
	require.NoError(t, err)
	assert.Contains(t, out, fmt.Sprintf("wrote %d files (", 7+len(bundled)), "the page's six files, the bundled traces and their list")
	for _, f := range []string{"index.html", "app.js", "worker.js", "style.css", "wasm_exec.js", "main.wasm", web.TracesIndex, bundled[0].Path} {
		assert.FileExists(t, filepath.Join(dir, filepath.FromSlash(f)))
	}
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, _, errs = serve("--export", file)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "not a folder")
}

// startServe runs markerwave serve on a free loopback port until the test
// ends and returns the page's address.
func startServe(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	until := func() (context.Context, context.CancelFunc) { return ctx, cancel }
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errb strings.Builder
	go func() {
		done <- serveUntil(until, []string{"--addr", "127.0.0.1:0"}, pw, &errb)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, "serve printed no address: %s", errb.String())
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() {
		cancel()
		assert.Equal(t, exitOK, <-done, "serve stops cleanly on an interrupt")
	})
	return strings.TrimSpace(line)
}

// TestServeHeaders: the page, the WebAssembly as application/wasm, the
// security policy on every response, nothing to write.
func TestServeHeaders(t *testing.T) {
	base := startServe(t)
	for path, ctype := range map[string]string{"": "text/html; charset=utf-8", "main.wasm": "application/wasm", "app.js": "text/javascript; charset=utf-8"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, ctype, resp.Header.Get("Content-Type"), path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'", path)
	}
	resp, err := http.Post(base, "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// browserPath finds Chromium for the browser tests. Without one the tests
// fail, naming what is missing, unless MARKERWAVE_NO_BROWSER says the
// browser is left out by choice (then they skip, saying so).
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if why := os.Getenv("MARKERWAVE_NO_BROWSER"); why != "" {
		t.Skipf("NOT RUN: MARKERWAVE_NO_BROWSER=%q: the explorer page is not tested in a browser", why)
	}
	t.Fatal("no chromium on PATH: the explorer page's browser tests need it (Debian: apt-get install chromium; .ci/run installs it). " +
		"To leave the browser out by choice, set MARKERWAVE_NO_BROWSER to why")
	return ""
}

// TestPagePlainHeadless: what a plain headless browser sees, with no
// script of a test's waiting for the model (chromium --headless
// --dump-dom, the DOM a --screenshot paints): the page with the first
// scenario's initial state, its processes, its actions and its verdict,
// rendered before the WebAssembly has started (explorer.First).
func TestPagePlainHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("NOT RUN in -short: starts a browser")
	}
	browser := browserPath(t)
	base := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-component-update",
		"--user-data-dir="+t.TempDir(), "--dump-dom", base)
	var errb strings.Builder
	cmd.Stderr = &errb
	dom, err := cmd.Output()
	require.NoError(t, err, "%s --dump-dom: %s", browser, errb.String())
	page := string(dom)
	for what, want := range map[string]string{
		"the initial state's processes": `<th>P1</th><td class="bal">$100</td>`,
		"the initial state's channels":  `<th>P2-&gt;P1</th><td>empty</td>`,
		"the initial state's actions":   `data-token="I1"`,
		"the verdict":                   "Every property of the spec holds in this state.",
	} {
		assert.True(t, strings.Contains(page, want), "%s: the page holds no %s", what, want)
	}
	assert.False(t, strings.Contains(page, "appear here once it has loaded"), "the actions' placeholder is still there")
}

// TestPageInBrowser drives the explorer page in headless Chromium against
// markerwave serve, as a person would: the article's two accounts taken
// step by step show a snapshot of $150; the no-recording specification
// shows $120 and names Conservation; the shared link and the keys replay
// and step; the orphan trace is audited with its divergence shown; a long
// run is audited and one snapshot of it drawn. Every request the page
// makes is to the server. With MARKERWAVE_SCREENSHOTS=DIR
// (make screenshots) it writes the page's screenshots into DIR.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("NOT RUN in -short: starts a browser")
	}
	t.Parallel() // it waits on the browser (waitersParallel)
	browser := browserPath(t)
	base := startServe(t)
	shots := os.Getenv("MARKERWAVE_SCREENSHOTS")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+bigRunBound)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-quic", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	var mu sync.Mutex
	var requests []string
	require.NoError(t, chromedp.Listen(bctx, func(ev any) {
		var u string
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			u = e.Request.URL
		case network.EventRequestWillBeSent:
			u = e.Request.URL
		default:
			return
		}
		mu.Lock()
		requests = append(requests, u)
		mu.Unlock()
	}))
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(bctx, steps...), what)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, "read %s", sel)
		return s
	}
	eval := func(expr string) int {
		t.Helper()
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](expr))
		require.NoError(t, err, expr)
		return n
	}
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		require.NoError(t, err, "screenshot")
		require.NoError(t, os.WriteFile(filepath.Join(shots, name), png, 0o644))
	}
	take := func(tokens ...string) {
		t.Helper()
		for _, tok := range tokens {
			do("take "+tok, chromedp.Click(chromedp.CSS(`#enabled button[data-token="`+tok+`"]`)))
		}
	}
	ready := chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`))
	setVariant := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById("variant"); s.value = %q; s.dispatchEvent(new Event("change")); })()`, v))
	}
	setScenario := func(id string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById("scenario"); s.value = %q; s.dispatchEvent(new Event("change")); })()`, id))
	}
	history := `document.querySelectorAll("#history li").length`
	// until waits for a JavaScript condition: what a file upload ends in
	// (it is read and audited asynchronously, so an earlier banner or
	// error must not be taken for it).
	until := func(cond string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(time.Minute))
	}
	bannerNames := func(name string) chromedp.Action[chromedp.Void] {
		return until(fmt.Sprintf(`document.getElementById("audit-banner").textContent.startsWith(%q)`, name))
	}

	// Before the WebAssembly runs (here: never, its request blocked) the
	// page shows the scenarios, the properties and their links, and the
	// first scenario's initial state as the server rendered it with the
	// model (explorer.First): its processes, channels, enabled actions
	// (not taken until the model has started) and properties.
	blockWasm := func(block bool) {
		t.Helper()
		_, err := chromedp.Call(bctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{{URLPattern: base + web.WasmFile, Block: block}}})
		require.NoError(t, err, "block %s: %v", web.WasmFile, block)
	}
	blockWasm(true)
	do("open the page without the model", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#scenario-list")))
	scenarios, err := explorer.Scenarios()
	require.NoError(t, err)
	barrierScenarios, err := explorer.BarrierScenarios()
	require.NoError(t, err)
	assert.Equal(t, len(scenarios)+len(barrierScenarios), eval(`document.querySelectorAll("#scenario-list li a").length`), "the scenarios are listed")
	first, err := explorer.Start(scenarios[0].ID, "")
	require.NoError(t, err)
	firstView, err := first.Render()
	require.NoError(t, err)
	props := len(firstView.(explorer.View).Properties)
	assert.Equal(t, props, eval(`document.querySelectorAll("#properties li a.why-link").length`), "the properties link their arguments")
	assert.Contains(t, text(`#properties li[data-prop="ConsistentCut"]`), "no channel has both its ends recorded yet")
	assert.Equal(t, props, eval(`document.querySelectorAll("#properties li.holds").length`), "every property holds in the initial state")
	assert.Equal(t, "Every property of the spec holds in this state.", text("#banner"))
	procs, err := chromedp.Run(bctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#procs tbody tr")].map((r) => [...r.cells].map((c) => c.textContent).join(" ")).join("\n")`))
	require.NoError(t, err)
	assert.Equal(t, "P1 $100 0 0\nP2 $50 0 0", procs, "the initial state's processes")
	assert.Equal(t, 3, eval(`document.querySelectorAll("#enabled button.act:disabled").length`), "the initial state's three actions, shown, not yet taken")
	do("the model fails to load", until(`document.getElementById("error").textContent.startsWith("could not start the model")`))
	blockWasm(false)

	// The article's two accounts: P2 sends $30, P1 initiates, P2 records
	// on the marker, P1 records the $30 in flight, then the marker.
	do("open the page", chromedp.Navigate("about:blank"), chromedp.Navigate(base), ready)
	scenario, err := chromedp.Run(bctx, chromedp.Value(chromedp.CSS("#scenario")))
	require.NoError(t, err)
	assert.Equal(t, "two-accounts", scenario)
	take("S1x30", "I1", "M0", "R1", "M1")
	assert.Equal(t, "$150", text(`.snap[data-snap="1"] .snap-total`))
	assert.Contains(t, text(`.snap[data-snap="1"] .status`), "complete: recorded $150, the system's $150")
	assert.Contains(t, text("#banner"), "Every property of the spec holds")
	assert.Equal(t, 1, eval(`document.querySelectorAll("#diagram svg .cut").length`), "the diagram draws the snapshot's cut")
	// Every property links its section of docs/properties.md, and the
	// section is there.
	md, err := os.Open("../../" + explorer.DocsFile)
	require.NoError(t, err)
	anchors, err := explorer.DocAnchors(md)
	md.Close()
	require.NoError(t, err)
	links, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#properties a.why-link")].map((a) => a.href)`))
	require.NoError(t, err)
	require.Len(t, links, 7, "six invariants and SnapshotsComplete")
	for _, l := range links {
		anchor, ok := strings.CutPrefix(l, explorer.DocsBase+"#")
		assert.True(t, ok && anchors[anchor], "%s: no such section of %s", l, explorer.DocsFile)
	}
	assert.Contains(t, text(`#properties li[data-prop="Conservation"] .why`), "snapshot 1 completed at step 5 and recorded $150")
	shot("explorer-1280.png")

	// The same schedule without channel recording: the $30 vanishes.
	do("no recording", setVariant("SpecNoRecord"))
	assert.Equal(t, "$120", text(`.snap[data-snap="1"] .snap-total`))
	assert.Contains(t, text("#banner"), "Conservation")
	assert.Contains(t, text(`#properties li[data-prop="Conservation"]`), "✗")
	link, err := chromedp.Run(bctx, chromedp.Location())
	require.NoError(t, err)
	assert.Contains(t, link, "v=SpecNoRecord")
	assert.Contains(t, link, "run=S1x30.I1.M0.R1.M1")

	// The run, audited as a trace: the snapshot the model recorded
	// leaves the $30 out, which the audit of its report names.
	do("audit this run", chromedp.Click(chromedp.CSS("#audit-run")), bannerNames("this run"))
	banner := text("#audit-banner")
	assert.Contains(t, banner, "this run violates ExactChannelState")
	assert.Contains(t, banner, "first divergence at event 5 (line 6), RecvMarker(P2, P1) [snap 1]: RecordedState")

	// The shared link replays the run in a fresh page; the keys step back
	// and take the first enabled action.
	do("open the link", chromedp.Navigate("about:blank"), chromedp.Navigate(link), ready)
	assert.Equal(t, 5, eval(history))
	assert.Equal(t, "$120", text(`.snap[data-snap="1"] .snap-total`))
	do("phone", chromedp.EmulateViewport(390, 844))
	assert.Equal(t, 0, eval(`document.documentElement.scrollWidth > window.innerWidth ? 1 : 0`), "at 390 px wide the page scrolls only vertically")
	shot("explorer-phone.png")
	do("wide again", chromedp.EmulateViewport(1280, 800))
	do("Backspace", chromedp.KeyEvent("\b"))
	assert.Equal(t, 4, eval(history), "Backspace steps back")
	do("key 1", chromedp.KeyEvent("1"))
	assert.Equal(t, 5, eval(history), "key 1 takes the first enabled action")

	// Non-FIFO channels: the $30 P1 sends after recording overtakes the
	// marker and P2 takes it before recording, an orphan, named and drawn.
	do("non-FIFO", setVariant("SpecNonFIFO"), chromedp.Click(chromedp.CSS("#reset")))
	take("I1", "S0x30", "R0@2", "M0", "M1")
	assert.Contains(t, text("#banner"), "Violated: ConsistentCut")
	assert.Contains(t, text(`#properties li[data-prop="ConsistentCut"]`), "✗")
	assert.Contains(t, text(`#properties li[data-prop="ConsistentCut"]`), "an orphan message")
	assert.Equal(t, 1, eval(`document.querySelectorAll("#diagram svg .msg.app.orphan").length`), "the diagram draws the orphan")
	// The orphan's send (step 2) and receive (step 3) are shown; a click
	// on the receive marks it in the schedule and the diagram.
	orphanSteps, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#properties li[data-prop="ConsistentCut"] button.step')].map((b) => b.dataset.step)`))
	require.NoError(t, err)
	assert.Equal(t, []string{"2", "3"}, orphanSteps)
	assert.Contains(t, text(`#properties li[data-prop="ConsistentCut"] .why`), "the orphan #1 on P1->P2: sent at step 2, after P1 recorded for snapshot 1 (step 1); received at step 3, before P2 recorded (step 4)")
	do("show step 3", chromedp.Click(chromedp.CSS(`#properties li[data-prop="ConsistentCut"] button.step[data-step="3"]`)))
	assert.Equal(t, "RecvAppAt(\"P1\",\"P2\",2)", text("#history li.at"))
	assert.Equal(t, 1, eval(`document.querySelectorAll('#diagram svg .event.at[data-index="3"][data-action="RecvApp"]').length`), "the receive is marked in the diagram")
	shot("explorer-orphan.png")

	// No marker forwarding, on the token ring: P2 records on P1's marker
	// and forwards none; once nothing can be received the snapshot stalls
	// and SnapshotsComplete fails, nothing else.
	do("token ring, no forwarding", setScenario("token-ring"), setVariant("SpecNoForward"))
	take("I1", "S1x1", "M0", "R1")
	assert.Equal(t, "Violated: SnapshotsComplete", strings.SplitN(text("#banner"), " — ", 2)[0])
	assert.Contains(t, text(`#properties li[data-prop="SnapshotsComplete"]`), "snapshot 1 was initiated and is never complete")
	assert.Contains(t, text(`.snap[data-snap="1"] .status`), "in progress")
	assert.Equal(t, 0, eval(`[...document.querySelectorAll("#enabled button")].filter((b) => /Recv/.test(b.textContent)).length`),
		"no receive is enabled: every fair behaviour stutters here, stalled")

	// Lossy channels: P1->P2 loses the marker, and the snapshot stalls,
	// SnapshotsComplete naming the lost marker.
	do("lossy", setScenario("two-accounts"), setVariant("SpecLossy"))
	take("I1", "L0")
	assert.Equal(t, "Violated: SnapshotsComplete", strings.SplitN(text("#banner"), " — ", 2)[0])
	assert.Contains(t, text(`#properties li[data-prop="SnapshotsComplete"]`), "its marker was lost on P1->P2")

	// A link to the crash scenario opens it under its specification, the
	// one that offers Crash.
	do("open #s=crash", chromedp.Navigate("about:blank"), chromedp.Navigate(base+"#s=crash"), ready)
	variant, err := chromedp.Run(bctx, chromedp.Value(chromedp.CSS("#variant")))
	require.NoError(t, err)
	assert.Equal(t, "SpecFaults", variant)
	assert.Equal(t, 1, eval(`document.querySelectorAll('#enabled button[data-token="C1"]').length`), "the crash scenario offers Crash(P2)")
	assert.Contains(t, text(`#enabled button[data-token="C1"]`), `Crash("P2")`)
	// And so does its link in the scenario list, from another scenario.
	do("two accounts", setScenario("two-accounts"))
	assert.Equal(t, 0, eval(`document.querySelectorAll('#enabled button[data-token="C1"]').length`))
	do("the crash scenario's link", chromedp.Evaluate[chromedp.Void](`(() => { document.getElementById("scenario-box").open = true; })()`),
		chromedp.Click(chromedp.CSS(`#scenario-list li[data-scenario="crash"] a`)), until(`document.getElementById("variant").value === "SpecFaults"`))
	assert.Equal(t, 1, eval(`document.querySelectorAll('#enabled button[data-token="C1"]').length`), "the list's link opens the crash scenario with Crash")
	do("close the list", chromedp.Evaluate[chromedp.Void](`(() => { document.getElementById("scenario-box").open = false; })()`))

	// Crashes: without a failure detector, P2's crash leaves the snapshot
	// pending forever (SnapshotsEnd); with one, P2 is suspected and the
	// snapshot aborted, and every property of the faults spec holds.
	do("crash, no detector", setScenario("crash"), setVariant("SpecNoDetector"))
	take("I1", "C1")
	assert.Equal(t, "Violated: SnapshotsEnd", strings.SplitN(text("#banner"), " — ", 2)[0])
	assert.Contains(t, text(`#properties li[data-prop="SnapshotsEnd"]`), "P2 crashed and nothing suspects it")
	assert.Contains(t, text("#partial"), "leave out crashes")
	assert.Equal(t, 1, eval(`document.getElementById("audit-run").disabled ? 1 : 0`), "a run with failures is not offered to the audit")
	shot("explorer-crash.png")
	do("crash, detector", setVariant("SpecFaults"))
	take("X1", "A1p1")
	assert.Contains(t, text("#banner"), "Every property of the spec holds")
	assert.Contains(t, text(`.snap[data-snap="1"] .status`), "aborted: P2 suspected")
	assert.Contains(t, text(`#properties li[data-prop="SnapshotsEnd"]`), "✓")

	// Barrier snapshots: the backpressure scenario's link opens it under
	// SpecAdaptive, the specifications of tla/BarrierAdaptive.tla
	// offered. X aligns, S1 -> X blocked behind S1's barrier, X -> K full;
	// its alignment times out at step 8: X switches, its barrier
	// overtakes S1#1 on X -> K, persisted, and the diagram draws the
	// switch.
	// (The link is followed in the page already open, as a click on it
	// would: the model is not loaded again.)
	do("open #s=backpressure", chromedp.Evaluate[chromedp.Void](`(() => { location.hash = "s=backpressure"; })()`),
		until(`document.getElementById("variant").value === "SpecAdaptive" && document.querySelectorAll("#nodes tbody tr").length === 4`))
	assert.Equal(t, 5, eval(`[...document.querySelectorAll("#variant option")].filter((o) => !o.hidden).length`), "SpecAdaptive and its four broken variants")
	take("E0", "I0", "P0", "B0", "E0", "E1", "I1")
	assert.Equal(t, "S1->X", text(`#nodes tr[data-node="X"] td.blocked`))
	assert.Contains(t, text(`#nodes tr[data-node="X"] td.node-state`), "aligning since step 4: S1->X blocked, waiting for the barrier of S2->X")
	take("T2")
	assert.Equal(t, "unaligned", text(`#nodes tr[data-node="X"] td.mode`))
	assert.Contains(t, text(`#nodes tr[data-node="X"] td.node-state`), "until its alignment timed out at step 8: switched to unaligned")
	assert.Equal(t, "S1#1", text(`#edges tr[data-edge="X->K"] .item.persisted`), "the record X's barrier overtook is persisted")
	assert.Equal(t, 1, eval(`document.querySelectorAll("#diagram svg .event.timeout").length`), "the switch is drawn")
	shot("explorer-switch.png")
	do("scripted run", chromedp.Click(chromedp.CSS("#article")))
	assert.Equal(t, 22, eval(history))
	assert.Contains(t, text(`.snap[data-snap="barrier"] .status`), "X's alignment timed out at step 8 and it switched to unaligned; channel state: S2#1 on S2->X (logged by X at step 11), S1#1 on X->K (overtaken by X's barrier, persisted at step 8)")
	assert.Contains(t, text("#banner"), "Every property of the spec holds")
	assert.Contains(t, text("#diagram-notes"), "switched to unaligned (the diamonds: where an alignment timed out, or a barrier waiting in a full output buffer overtook it): X")
	// The run, audited as a barrier trace in the page's worker: it
	// conforms to SpecAdaptive.
	do("audit the backpressure run", chromedp.Click(chromedp.CSS("#audit-run")), bannerNames("this run"))
	assert.Contains(t, text("#audit-banner"), "this run conforms (22 events)")
	do("back to the model", chromedp.Click(chromedp.CSS("#tab-model")))
	do("phone, barriers", chromedp.EmulateViewport(390, 844))
	assert.Equal(t, 0, eval(`document.documentElement.scrollWidth > window.innerWidth ? 1 : 0`), "at 390 px wide the barrier state scrolls only vertically")
	do("wide again, barriers", chromedp.EmulateViewport(1280, 800))

	// The same schedule under SpecAdaptiveStaleType: ReportedTypeTaken
	// fails, its steps and its cause named, the rule dropped quoted.
	do("stale type", setVariant("SpecAdaptiveStaleType"))
	assert.Equal(t, 22, eval(history), "the same schedule replays")
	assert.Equal(t, "Violated: ReportedTypeTaken", strings.SplitN(text("#banner"), " — ", 2)[0])
	staleWhy := text(`#properties li[data-prop="ReportedTypeTaken"] .why`)
	assert.Contains(t, staleWhy, "X reported a snapshot of type aligned at step 8 although it took an unaligned one")
	assert.Contains(t, staleWhy, "The cause: at step 8, TimeoutV(\"X\",TRUE,TRUE,FALSE,TRUE), SpecAdaptive would have X report unaligned; SpecAdaptiveStaleType reports aligned")
	staleLink, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(`#properties li[data-prop="ReportedTypeTaken"] a.why-link`), "href"))
	require.NoError(t, err)
	assert.Equal(t, explorer.DocsBase+"#reportedtypetaken", staleLink.Value)
	assert.True(t, anchors["reportedtypetaken"], "the property's argument is in %s", explorer.DocsFile)
	do("show step 8", chromedp.Click(chromedp.CSS(`#properties li[data-prop="ReportedTypeTaken"] button.step[data-step="8"]`)))
	assert.Contains(t, text("#history li.at"), `TimeoutV("X"`)
	assert.Equal(t, 1, eval(`document.querySelectorAll('#diagram svg .event.at[data-index="8"]').length`), "the switch is marked in the diagram")
	shot("explorer-stale-type.png")
	// Under SpecAdaptiveForceSwitch, the force-aligned scenario's run
	// switches X, which feeds the force-aligned X -> K.
	do("force-aligned", setScenario("force-aligned"), setVariant("SpecAdaptiveForceSwitch"), chromedp.Click(chromedp.CSS("#article")))
	assert.Equal(t, "Violated: ForceAlignedNoChannelState", strings.SplitN(text("#banner"), " — ", 2)[0])
	assert.Contains(t, text(`#properties li[data-prop="ForceAlignedNoChannelState"] .why`), "X feeds a force-aligned edge: it aligns however long it takes")
	// The aligned scenario opens under tla/BarrierSnapshots.tla's Spec
	// (not tla/ChandyLamport.tla's, of the same name); under SpecNoBlock
	// its counter-example takes a blocked record.
	do("aligned", setScenario("aligned"))
	assert.Equal(t, 1, eval(`document.getElementById("variant").selectedOptions[0].dataset.family === "barrier" ? 1 : 0`), "the barrier Spec is selected")
	assert.Contains(t, text("#variant-about"), "tla/BarrierSnapshots.tla Spec")
	do("no blocking", setVariant("SpecNoBlock"), chromedp.Click(chromedp.CSS("#article")))
	assert.Contains(t, text("#banner"), "Violated: BarrierConsistentCut")
	assert.Contains(t, text(`#properties li[data-prop="BarrierConsistentCut"] .why`), "which Spec does not enable (<<\"S1\", \"X\">> is blocked: its barrier has arrived and X has not recorded (alignment)")

	// Constants of one's own: a three-process ring, started and stepped;
	// a topology that is not strongly connected is refused, named.
	setConstants := func(k string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.getElementById("constants-box").open = true; document.getElementById("constants").value = %q; document.getElementById("apply-constants").click(); })()`, k))
	}
	do("ring of one's own", setConstants(`{"procs":["A","B","C"],"chans":[["A","B"],["B","C"],["C","A"]],"init_bal":{"A":3,"B":0,"C":0},"amount":[1],"budget":{"A":1,"B":1,"C":1},"initiator":{"1":"B"}}`))
	take("I1", "S0x1")
	assert.Equal(t, 2, eval(history))
	assert.Contains(t, text("#system-total"), "$3")
	link, err = chromedp.Run(bctx, chromedp.Location())
	require.NoError(t, err)
	assert.Contains(t, link, "k=", "the link carries the constants")
	do("not strongly connected", setConstants(`{"procs":["A","B"],"chans":[["A","B"]],"init_bal":{"A":1,"B":0},"amount":[1],"budget":{"A":1,"B":0},"initiator":{"1":"A"}}`))
	assert.Contains(t, text("#error"), "strongly connected")

	// Audit the orphan trace, picked from the bundled traces: the
	// divergence is shown and jumped to.
	bundled, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#bundled option")].map((o) => o.value).filter((v) => v)`))
	require.NoError(t, err)
	traces, err := web.Traces()
	require.NoError(t, err)
	require.Len(t, bundled, len(traces), "every bundled trace is offered")
	do("audit", chromedp.Click(chromedp.CSS("#tab-audit")),
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("bundled"); s.value = "traces/rejects/ConsistentCut-orphan.jsonl"; s.dispatchEvent(new Event("change")); })()`),
		bannerNames("ConsistentCut-orphan.jsonl"))
	assert.Contains(t, text("#bundled-note"), "Article, orphan message")
	why, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS("#audit-banner a.why-link"), "href"))
	require.NoError(t, err)
	assert.Equal(t, explorer.DocsBase+"#consistentcut", why.Value, "the verdict links the property's argument")
	banner = text("#audit-banner")
	assert.Contains(t, banner, "violates ConsistentCut")
	assert.Contains(t, banner, "first divergence at event 3 (line 4), RecvApp(P1, P2) 30#1: Enabled")
	div, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS("#events li.divergent"), "data-n"))
	require.NoError(t, err)
	assert.Equal(t, "3", div.Value)
	assert.Contains(t, text("#cursor"), "Showing events 1..3 of")
	assert.Equal(t, 1, eval(`document.querySelectorAll("#audit-diagram svg .msg.orphan").length`), "the diagram marks the orphan up to the divergence")
	shot("explorer-audit.png")

	// A trace dropped on the page, as a person drags one from their files:
	// the missing-message reject, its property named.
	missing, err := os.ReadFile("../../traces/rejects/ExactChannelState-missing-message.jsonl")
	require.NoError(t, err)
	body, err := json.Marshal(string(missing))
	require.NoError(t, err)
	do("drop a trace", chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File([`+string(body)+`], "dropped.jsonl", { type: "application/json" }));
		const drop = document.getElementById("drop");
		for (const type of ["dragover", "drop"]) drop.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`), bannerNames("dropped.jsonl"))
	banner = text("#audit-banner")
	assert.Contains(t, banner, "dropped.jsonl violates ExactChannelState")
	assert.Contains(t, banner, "first divergence at event 5 (line 6), RecvMarker(P1, P2) [snap 1]")

	// A file that is no trace is refused, naming it and the line.
	garbage := filepath.Join(t.TempDir(), "garbage.jsonl")
	require.NoError(t, os.WriteFile(garbage, []byte("{ not a trace\n"), 0o644))
	do("garbage", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{garbage}),
		until(`document.getElementById("error").textContent.startsWith("garbage.jsonl")`))
	assert.Contains(t, text("#error"), "garbage.jsonl: trace line 1: header: malformed JSON")

	// A run's node logs chosen together are merged and audited as one
	// run, as markerwave audit DIR does.
	logs := splitNodeLogs(t, "../../traces/conforms/concurrent-snapshots.jsonl")
	do("node logs", chromedp.SetUploadFiles(chromedp.CSS("#file"), logs),
		bannerNames(fmt.Sprintf("%d node logs merged", len(logs))))
	assert.Contains(t, text("#audit-banner"), "conforms")
	// A barrier trace is told by its header, audited and drawn.
	noBlocking, err := filepath.Abs("../../traces/barrier/rejects/BarrierConsistentCut-no-blocking.jsonl")
	require.NoError(t, err)
	do("barrier trace", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{noBlocking}),
		bannerNames("BarrierConsistentCut-no-blocking.jsonl"))
	assert.Contains(t, text("#audit-banner"), "violates BarrierConsistentCut")
	assert.Positive(t, eval(`document.querySelectorAll("#audit-diagram svg").length`), "the barrier run is drawn")

	// A long run of a 5-account bank: it conforms, and one snapshot's
	// neighbourhood is drawn within a few screens.
	do("long run", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{longRun(t, 2000)}), bannerNames("trace.jsonl"))
	assert.Contains(t, text("#audit-banner"), "conforms")
	do("snapshot 2", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("audit-snap"); s.value = "2"; s.dispatchEvent(new Event("change")); })()`),
		until(`document.getElementById("audit-diagram").dataset.view.endsWith(":2")`))
	assert.Equal(t, 1, eval(`document.querySelectorAll("#audit-diagram svg .cut").length`), "snapshot 2 alone")
	width := eval(`Number(document.querySelector("#audit-diagram svg").getAttribute("width"))`)
	assert.LessOrEqual(t, width, 4*1920, "one snapshot's neighbourhood of a 2000-event run stays within four screens, as export --snap does")
	shot("explorer-long-run.png")

	// A long run audited in the page's worker: its verdict shows within a
	// generous bound. make test takes 20k events (a few seconds); make
	// page-long the demo's run with 60,000 transfers, about 106k events
	// (bigRun says how to choose another; the times measured are in the
	// README).
	big, events := bigRun(t)
	start := time.Now()
	do(fmt.Sprintf("%d-event run", events), chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{big}),
		chromedp.Poll[chromedp.Void](`document.getElementById("audit-banner").textContent.startsWith("big.jsonl")`, chromedp.WithPollingTimeout(bigRunBound)))
	took := time.Since(start)
	t.Logf("the page audited big.jsonl (%s) in %v", text("#audit-banner"), took.Round(time.Millisecond))
	assert.Contains(t, text("#audit-banner"), "big.jsonl conforms")
	assert.Contains(t, text("#audit-verdict"), "conforms: ")
	assert.Less(t, took, bigRunBound, "the page audits a %d-event run within %v", events, bigRunBound)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, requests)
	for _, u := range requests {
		ok := strings.HasPrefix(u, base) || strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:") || u == "about:blank"
		assert.True(t, ok, "the page requested %s", u)
	}
}

// bigRunBound bounds the page's audit of bigRun: several times what
// 100k events take on a loaded two-core machine.
const bigRunBound = 3 * time.Minute

// bigRun is the long run the page audits, as big.jsonl, and its number of
// events: the trace MARKERWAVE_PAGE_TRACE names (make page-long: the
// demo's), else a drained bank run of MARKERWAVE_PAGE_EVENTS events
// (default 20,000) with seven snapshots or so, its recorded states and
// cut seqs.
func bigRun(t *testing.T) (string, int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big.jsonl")
	if src := os.Getenv("MARKERWAVE_PAGE_TRACE"); src != "" {
		tr, _, err := conformance.ReadTraceFile(src)
		require.NoError(t, err, "MARKERWAVE_PAGE_TRACE")
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p, len(tr.Events)
	}
	events := 20_000
	if s := os.Getenv("MARKERWAVE_PAGE_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "MARKERWAVE_PAGE_EVENTS")
		events = n
	}
	net, err := coretest.RandomBank(events, events/7, 1)
	require.NoError(t, err)
	tr := net.Trace("")
	tr.Header.Drained = true
	tr.Recorded = net.RecordedSnapshots()
	require.NoError(t, spec.WriteTraceFile(p, tr))
	return p, len(tr.Events)
}

// splitNodeLogs writes the events of trace file path, process by
// process, as the node logs of its run into a temporary directory, and
// returns their paths.
func splitNodeLogs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr, err := spec.ReadTrace(f)
	require.NoError(t, err)
	dir := t.TempDir()
	var out []string
	for _, p := range tr.Header.Topology.Procs {
		log := spec.Trace{Header: tr.Header}
		for _, e := range tr.Events {
			if e.Proc == p {
				log.Events = append(log.Events, e)
			}
		}
		name := filepath.Join(dir, string(p)+".jsonl")
		require.NoError(t, spec.WriteTraceFile(name, log))
		out = append(out, name)
	}
	return out
}
