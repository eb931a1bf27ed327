package export

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probeJS drives the page's zoom script as a person would (the wheel, an
// arrow key, a drag, the fit button, a click on a cut's legend entry)
// and writes the SVG's viewBox after each step into <pre id="probe">.
const probeJS = `<script>//<![CDATA[
(function () {
  var svg = document.getElementById("diagram"), box = document.getElementById("viewport"), out = [];
  var r = box.getBoundingClientRect();
  function note(what) { out.push(what + " " + svg.getAttribute("viewBox")); }
  note("start");
  box.dispatchEvent(new WheelEvent("wheel", {deltaY: -100, clientX: r.left + 200, clientY: r.top + 100, bubbles: true, cancelable: true}));
  note("wheel");
  box.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", bubbles: true}));
  note("right");
  box.dispatchEvent(new PointerEvent("pointerdown", {clientX: 300, clientY: 300, bubbles: true}));
  window.dispatchEvent(new PointerEvent("pointermove", {clientX: 250, clientY: 280, bubbles: true}));
  window.dispatchEvent(new PointerEvent("pointerup", {bubbles: true}));
  note("drag");
  document.querySelector("button[data-zoom=fit]").click();
  note("fit");
  svg.querySelector(".legend-entry[data-snap='2']").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  out.push("focus " + svg.getAttribute("data-focus") + " " + getComputedStyle(svg.querySelector(".cut[data-snap='1']")).opacity);
  var p = document.createElement("pre");
  p.id = "probe";
  p.textContent = out.join("\n");
  document.body.appendChild(p);
})();
//]]></script>
`

// chromium finds a Chromium or Chrome to run headless, "" if none.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDiagramHTMLInChromium runs the page's script in headless Chromium:
// the wheel zooms in, the arrow keys and dragging pan, fit shows the
// whole diagram, and clicking a cut's legend entry dims the other
// snapshots.
func TestDiagramHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := chromium()
	if browser == "" {
		t.Skip("NOT RUN: no chromium on PATH (apt-get install chromium): the page's zoom script is not exercised in a browser")
	}
	tr := readTraceFile(t, "traces/conforms/concurrent-snapshots.jsonl")
	doc := string(render(t, tr, HTML))
	page := filepath.Join(t.TempDir(), "probe.html")
	require.NoError(t, os.WriteFile(page, []byte(strings.Replace(doc, "</body>", probeJS+"</body>", 1)), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
		// No connections of its own: the page makes none, and the browser
		// must not try any either.
		"--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page).Output()
	require.NoError(t, err, "chromium --dump-dom")
	m := regexp.MustCompile(`(?s)<pre id="probe">(.*?)</pre>`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "the probe ran")
	box := map[string][]float64{}
	var focus []string
	for _, l := range strings.Split(m[1], "\n") {
		f := strings.Fields(l)
		if f[0] == "focus" {
			focus = f[1:]
			continue
		}
		require.Len(t, f, 5, l)
		for _, s := range f[1:] {
			v, err := strconv.ParseFloat(s, 64)
			require.NoError(t, err, l)
			box[f[0]] = append(box[f[0]], v)
		}
	}
	var W, H float64
	for _, e := range parse(t, []byte(doc)) {
		if e.name == "svg" {
			W, H = atof(t, e.attrs["width"]), atof(t, e.attrs["height"])
		}
	}
	start, wheel, right, drag, fit := box["start"], box["wheel"], box["right"], box["drag"], box["fit"]
	require.Len(t, start, 4)
	assert.Less(t, wheel[2], start[2], "the wheel zooms in: a narrower viewBox")
	assert.Less(t, wheel[3], start[3])
	assert.Greater(t, right[0], wheel[0], "ArrowRight pans right")
	assert.Equal(t, wheel[2], right[2], "panning keeps the zoom")
	assert.Greater(t, drag[0], right[0], "dragging left pans right")
	assert.Greater(t, drag[1], right[1], "dragging up pans down")
	assert.Zero(t, fit[0])
	assert.Zero(t, fit[1])
	assert.GreaterOrEqual(t, fit[2], W-0.5, "fit shows the whole width")
	assert.GreaterOrEqual(t, fit[3], H-0.5, "and the whole height")
	assert.Equal(t, []string{"2", "0.12"}, focus, "snapshot 2 highlighted, snapshot 1's cut dimmed")
}
