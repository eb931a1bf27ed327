package export

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// randomRun is a seeded run of the bank on n fully connected processes
// with at least events events: random transfers and deliveries, a
// snapshot initiated by a random process when the run reaches each of
// snapAt events (snapshot k+1 at snapAt[k]), then every channel
// drained.
func randomRun(tb testing.TB, n, events int, snapAt []int, seed uint64) spec.Trace {
	top := spec.Complete(n)
	bal := map[spec.ProcID]int64{}
	for _, p := range top.Procs {
		bal[p] = 100
	}
	b := newBuilder(tb, top, bal)
	r := rand.New(rand.NewPCG(seed, 1))
	deliver := func(c spec.Channel) {
		if b.chans[c][0].marker {
			b.recvMarker(c.From, c.To)
		} else {
			b.recv(c.From, c.To)
		}
	}
	busy := func() []spec.Channel {
		var out []spec.Channel
		for _, c := range top.Chans {
			if len(b.chans[c]) > 0 {
				out = append(out, c)
			}
		}
		return out
	}
	next := 0
	for len(b.events) < events {
		if next < len(snapAt) && len(b.events) >= snapAt[next] {
			next++
			b.initiate(top.Procs[r.IntN(n)], spec.SnapID(next))
			continue
		}
		bs := busy()
		p, q := top.Procs[r.IntN(n)], top.Procs[r.IntN(n)]
		amt := int64(1 + r.IntN(20))
		switch {
		case len(bs) > 0 && (r.IntN(2) == 0 || p == q || b.state[p].Bal < amt):
			deliver(bs[r.IntN(len(bs))])
		case p != q && b.state[p].Bal >= amt:
			b.send(p, q, amt)
		}
	}
	for bs := busy(); len(bs) > 0; bs = busy() {
		deliver(bs[0])
	}
	return b.trace()
}

// draw renders a's diagram of view v and returns it with its extent.
func draw(t *testing.T, a *Analysis, f Format, v View) ([]byte, Extent) {
	t.Helper()
	var buf bytes.Buffer
	ext, err := a.Draw(&buf, f, v)
	require.NoError(t, err)
	return buf.Bytes(), ext
}

// texts maps each element of class c to its text, in document order.
func texts(t *testing.T, doc []byte, c string) []string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var out []string
	in := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			in = element{attrs: map[string]string{"class": attr(tok, "class")}}.hasClass(c)
			if in {
				out = append(out, "")
			}
		case xml.CharData:
			if in {
				out[len(out)-1] += string(tok)
			}
		case xml.EndElement:
			in = false
		}
	}
}

func attr(se xml.StartElement, name string) string {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err, s)
	return n
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, s)
	return f
}

// checkLegend checks that the legend lists exactly the categories drawn
// and that every element is drawn as its category's entry says: the
// same stroke width and dash, and the same colour, or, for a category
// drawn in its snapshot's colour, its snapshot's. It returns the
// categories listed.
func checkLegend(t *testing.T, a *Analysis, els []element) map[string]bool {
	t.Helper()
	legend := map[string]element{}
	for _, e := range withClass(els, "legend-item") {
		legend[e.attrs["data-cat"]] = e
	}
	drawn := map[string]bool{}
	for _, e := range els {
		cat := e.attrs["data-cat"]
		if cat == "" || e.hasClass("legend-item") {
			continue
		}
		drawn[cat] = true
		l, ok := legend[cat]
		if !assert.True(t, ok, "category %s is drawn but not in the legend", cat) {
			continue
		}
		assert.Equal(t, l.attrs["stroke-width"], e.attrs["stroke-width"], "%s: width as the legend says", cat)
		assert.Equal(t, l.attrs["stroke-dasharray"], e.attrs["stroke-dasharray"], "%s: dash as the legend says", cat)
		want := l.attrs["stroke"]
		for _, c := range categories {
			if c.id == cat && c.stroke == "" {
				s, err := strconv.ParseUint(e.attrs["data-snap"], 10, 64)
				require.NoError(t, err)
				want = SnapColor(a.snapIndex(spec.SnapID(s)))
			}
		}
		assert.Equal(t, want, e.attrs["stroke"], "%s: colour as the legend says", cat)
	}
	if len(withClass(els, "clipped")) > 0 {
		drawn[noteClipped.id] = true
	}
	listed := map[string]bool{}
	for cat := range legend {
		listed[cat] = true
		assert.True(t, drawn[cat], "the legend lists %s, which is not drawn", cat)
	}
	return listed
}

// diagramTraces are every trace of traces/ and the builder's.
func diagramTraces(t *testing.T) map[string]spec.Trace {
	out := map[string]spec.Trace{"twoBank": twoBank(t), "tokenRing": tokenRing(t), "nonFIFO": nonFIFO(t)}
	for _, dir := range []string{"conforms", "rejects"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "traces", dir, "*.jsonl"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			out[dir+"/"+filepath.Base(f)] = readTraceFile(t, filepath.Join("traces", dir, filepath.Base(f)))
		}
	}
	return out
}

func TestDiagramColumnsAreLamportTimes(t *testing.T) {
	a, err := Analyze(twoBank(t))
	require.NoError(t, err)
	// P1 and P2 send concurrently (column 1); P1 initiates (2); P2
	// receives the $30 (2), P1 the $20 (3); P2 the marker (3); P1 P2's
	// marker (4).
	assert.Equal(t, []int{1, 1, 2, 3, 2, 3, 4}, a.Lamport())
	els := parse(t, render(t, twoBank(t), SVG))
	dots := withClass(els, "event")
	require.Len(t, dots, 7)
	for i, d := range dots {
		assert.Equal(t, strconv.Itoa(a.Lamport()[i]), d.attrs["data-col"])
	}
	assert.Equal(t, dots[0].attrs["cx"], dots[1].attrs["cx"], "concurrent events share a column")
	assert.Equal(t, dots[2].attrs["cx"], dots[4].attrs["cx"])

	// On every trace and a long random run: a process's columns grow, a
	// receive is right of its send, and every column holds an event.
	traces := diagramTraces(t)
	traces["random"] = randomRun(t, 4, 3000, []int{1000, 1010, 2000}, 1)
	for name, tr := range traces {
		a, err := Analyze(tr)
		require.NoError(t, err)
		col := a.Lamport()
		last := map[spec.ProcID]int{}
		seen := map[int]bool{}
		top := 0
		for i, e := range tr.Events {
			assert.Greater(t, col[i], last[e.Proc], "%s: event %d", name, i+1)
			last[e.Proc] = col[i]
			seen[col[i]] = true
			top = max(top, col[i])
		}
		assert.Len(t, seen, top, "%s: no empty column", name)
		for _, m := range a.Messages {
			if m.Send >= 0 && m.Recv >= 0 {
				assert.Greater(t, col[m.Recv], col[m.Send], "%s: %s #%d", name, m.Chan, m.Seq)
			}
		}
		for _, m := range a.Markers {
			if m.Send >= 0 && m.Recv >= 0 {
				assert.Greater(t, col[m.Recv], col[m.Send], "%s: marker %d on %s", name, m.Snap, m.Chan)
			}
		}
		if name == "random" {
			assert.Less(t, top, len(tr.Events)/2, "concurrent events share columns: %d columns for %d events", top, len(tr.Events))
		}
	}
}

func TestDiagramLegendListsWhatIsDrawn(t *testing.T) {
	for name, tr := range diagramTraces(t) {
		a, err := Analyze(tr)
		require.NoError(t, err)
		for _, f := range []Format{SVG, HTML} {
			doc, _ := draw(t, a, f, View{})
			els := parse(t, doc)
			listed := checkLegend(t, a, els)
			assert.Len(t, withClass(els, "legend-cut"), len(a.Cuts), name)
			if name == "twoBank" {
				assert.Equal(t, map[string]bool{"app": true, "marker": true, "recorded": true}, listed, "no orphan, missing, spurious or lost entries")
			}
			if name == "nonFIFO" {
				assert.Equal(t, map[string]bool{"marker": true, "orphan": true}, listed, "its one message is the orphan")
			}
		}
	}
}

// The lost-marker trace: P2's marker to P1 is never delivered. It is
// drawn as the legend's entry for it says, dotted, without an arrowhead,
// stopping between the process lines after the run's last event, not
// landing on P1's line.
func TestDiagramLostMarker(t *testing.T) {
	tr := readTraceFile(t, "traces/rejects/SnapshotsComplete-lost-marker.jsonl")
	a, err := Analyze(tr)
	require.NoError(t, err)
	doc, _ := draw(t, a, SVG, View{})
	els := parse(t, doc)
	listed := checkLegend(t, a, els)
	assert.True(t, listed["lost-marker"])
	markers := withClass(els, "marker")
	require.Len(t, markers, 2)
	var lost []element
	for _, m := range markers {
		if m.attrs["data-cat"] == "lost-marker" {
			lost = append(lost, m)
		} else {
			assert.Equal(t, "marker", m.attrs["data-cat"])
			assert.NotEmpty(t, m.attrs["marker-end"], "a delivered marker lands with an arrowhead")
		}
	}
	require.Len(t, lost, 1)
	m := lost[0]
	assert.Equal(t, "P2->P1", m.attrs["data-chan"])
	assert.Equal(t, catLostMark.dash, m.attrs["stroke-dasharray"], "dotted")
	assert.Empty(t, m.attrs["marker-end"], "no arrowhead: it never arrives")
	lines := map[string]float64{}
	for _, l := range withClass(els, "proc-line") {
		lines[l.attrs["data-proc"]] = atof(t, l.attrs["y1"])
	}
	y2 := atof(t, m.attrs["y2"])
	assert.Greater(t, y2, lines["P1"], "it stops short of P1's line")
	assert.Less(t, y2, lines["P2"])
	for _, e := range withClass(els, "event") {
		assert.Greater(t, atof(t, m.attrs["x2"]), atof(t, e.attrs["cx"]), "it ends after the run's last event")
	}
	assert.Contains(t, string(doc), "marker of snapshot 1 on P2-&gt;P1, NOT RECEIVED by the end of the trace")
}

// concurrent-snapshots: messages in flight at both snapshots' cuts are
// drawn with one stroke per snapshot, in each snapshot's colour.
func TestDiagramMessageOfSeveralSnapshots(t *testing.T) {
	tr := readTraceFile(t, "traces/conforms/concurrent-snapshots.jsonl")
	a, err := Analyze(tr)
	require.NoError(t, err)
	require.Len(t, a.Cuts, 2)
	doc, _ := draw(t, a, SVG, View{})
	els := parse(t, doc)
	checkLegend(t, a, els)
	type key struct{ ch, seq string }
	strokes := map[key]map[string]string{} // snapshot -> colour
	var base []element
	for _, e := range els {
		if e.hasClass("msg") || e.hasClass("msg-band") {
			k := key{e.attrs["data-chan"], e.attrs["data-seq"]}
			if strokes[k] == nil {
				strokes[k] = map[string]string{}
			}
			if e.hasClass("msg") && e.attrs["data-snap"] == "0" {
				continue // classified by no snapshot
			}
			_, dup := strokes[k][e.attrs["data-snap"]]
			assert.False(t, dup, "one stroke per snapshot")
			strokes[k][e.attrs["data-snap"]] = e.attrs["stroke"]
			if e.hasClass("msg") {
				base = append(base, e)
			}
		}
	}
	several := 0
	for _, m := range a.Messages {
		k := key{m.Chan.String(), strconv.FormatUint(m.Seq, 10)}
		require.Len(t, strokes[k], len(m.Status), "%s #%d: a stroke per snapshot that classifies it", m.Chan, m.Seq)
		for s, st := range m.Status {
			want := SnapColor(a.snapIndex(s))
			if st.Fault() {
				want = red
			}
			assert.Equal(t, want, strokes[k][strconv.FormatUint(uint64(s), 10)], "%s #%d, snapshot %d", m.Chan, m.Seq, s)
		}
		if len(m.Status) > 1 {
			several++
		}
	}
	require.Positive(t, several, "the trace has a message recorded by both snapshots")
	assert.Len(t, withClass(els, "msg-band"), several)
	// A band runs beside its message, parallel.
	for _, band := range withClass(els, "msg-band") {
		for _, m := range base {
			if m.attrs["data-chan"] != band.attrs["data-chan"] || m.attrs["data-seq"] != band.attrs["data-seq"] {
				continue
			}
			dx1, dy1 := atof(t, m.attrs["x2"])-atof(t, m.attrs["x1"]), atof(t, m.attrs["y2"])-atof(t, m.attrs["y1"])
			dx2, dy2 := atof(t, band.attrs["x2"])-atof(t, band.attrs["x1"]), atof(t, band.attrs["y2"])-atof(t, band.attrs["y1"])
			assert.InDelta(t, 0, dx1*dy2-dy1*dx2, 0.02*(dx1*dx1+dy1*dy1), "parallel")
			assert.NotEqual(t, m.attrs["x1"]+m.attrs["y1"], band.attrs["x1"]+band.attrs["y1"], "beside, not on top")
		}
	}
}

// Overlapping cuts differ in colour and dash, and each is labelled at
// every process.
func TestDiagramCutsDistinguishable(t *testing.T) {
	tr := readTraceFile(t, "traces/conforms/concurrent-snapshots.jsonl")
	els := parse(t, render(t, tr, SVG))
	cuts := withClass(els, "cut")
	require.Len(t, cuts, 2)
	assert.NotEqual(t, cuts[0].attrs["stroke"], cuts[1].attrs["stroke"])
	assert.NotEqual(t, cuts[0].attrs["stroke-dasharray"], cuts[1].attrs["stroke-dasharray"])
	legend := withClass(els, "legend-cut")
	require.Len(t, legend, 2)
	for i := range cuts {
		assert.Equal(t, cuts[i].attrs["stroke"], legend[i].attrs["stroke"])
		assert.Equal(t, cuts[i].attrs["stroke-dasharray"], legend[i].attrs["stroke-dasharray"])
	}
	labels := texts(t, render(t, tr, SVG), "cut-label")
	assert.Len(t, labels, 2*len(tr.Header.Topology.Procs))
	assert.ElementsMatch(t, []string{"S1", "S1", "S1", "S2", "S2", "S2"}, labels)
}

// Every application message is labelled with its number and amount.
func TestDiagramLabels(t *testing.T) {
	for name, tr := range diagramTraces(t) {
		a, err := Analyze(tr)
		require.NoError(t, err)
		doc, _ := draw(t, a, SVG, View{})
		var want []string
		for _, m := range a.Messages {
			want = append(want, fmt.Sprintf("#%d (%d)", m.Seq, m.Amount))
		}
		assert.ElementsMatch(t, want, texts(t, doc, "msg-label"), name)
	}
	assert.Contains(t, texts(t, render(t, twoBank(t), SVG), "msg-label"), "#1 (30)")
}

// A snapshot's neighbourhood of a long run stays within a few screens,
// whatever the run's length, and a window shows exactly its columns.
func TestDiagramSnapAndWindow(t *testing.T) {
	tr := randomRun(t, 5, 20000, []int{9000, 9005, 15000}, 7)
	a, err := Analyze(tr)
	require.NoError(t, err)
	col := a.Lamport()
	_, full := draw(t, a, SVG, View{})
	assert.Equal(t, 1, full.From)
	assert.Equal(t, full.Columns, full.To)
	assert.Less(t, full.Width, 100+dx*(full.Columns+3), "the width follows the columns")

	for _, s := range []spec.SnapID{1, 2, 3} {
		doc, ext := draw(t, a, SVG, View{Snap: s})
		els := parse(t, doc)
		assert.LessOrEqual(t, ext.Width, 4*1920, "snapshot %d: %s, within four screens", s, ext)
		assert.Less(t, ext.To-ext.From, 100, "snapshot %d: %s", s, ext)
		cuts := withClass(els, "cut")
		require.Len(t, cuts, 1)
		assert.Equal(t, fmt.Sprint(s), cuts[0].attrs["data-snap"])
		for _, m := range withClass(els, "marker") {
			assert.Equal(t, fmt.Sprint(s), m.attrs["data-snap"], "only the snapshot's markers")
		}
		// Its recording points are all inside.
		c := a.Cuts[a.snapIndex(s)]
		for p, r := range c.Rec {
			require.GreaterOrEqual(t, r, 0, "%s recorded", p)
			assert.True(t, ext.From <= col[r] && col[r] <= ext.To, "snapshot %d: %s's recording point, column %d, in %s", s, p, col[r], ext)
		}
		checkLegend(t, a, els)
		assert.Len(t, withClass(els, "legend-cut"), 1)
		// Every message the cut classifies is drawn.
		n := 0
		for _, m := range a.Messages {
			if m.Status[s] != "" {
				n++
			}
		}
		drawnFor := 0
		for _, e := range els {
			if (e.hasClass("msg") || e.hasClass("msg-band")) && e.attrs["data-snap"] == fmt.Sprint(s) {
				drawnFor++
			}
		}
		assert.Equal(t, n, drawnFor, "snapshot %d", s)
	}

	from, to := full.Columns/2, full.Columns/2+30
	doc, ext := draw(t, a, HTML, View{From: from, To: to})
	assert.Equal(t, Extent{From: from, To: to, Columns: full.Columns, Width: ext.Width, Height: ext.Height}, ext)
	els := parse(t, doc)
	want := 0
	for _, c := range col {
		if from <= c && c <= to {
			want++
		}
	}
	dots := withClass(els, "event")
	assert.Len(t, dots, want, "the events of columns %d..%d", from, to)
	for _, d := range dots {
		c := atoi(t, d.attrs["data-col"])
		assert.True(t, from <= c && c <= to, "column %d", c)
	}
	assert.NotEmpty(t, withClass(els, "clipped"), "messages crossing the window's edges are cut off")
	for _, e := range withClass(els, "clipped") {
		if e.attrs["marker-end"] != "" {
			assert.Equal(t, left+dx/2, atoi(t, e.attrs["x1"]), "only an arrow cut off at its start keeps its head")
		}
	}
	listed := checkLegend(t, a, els)
	assert.True(t, listed[noteClipped.id])
	assert.Contains(t, string(doc), fmt.Sprintf("columns %d..%d of %d", from, to, full.Columns))

	// A window before every snapshot draws no cut, no marker, no legend
	// entry for them.
	doc, _ = draw(t, a, SVG, View{From: 1, To: 10})
	els = parse(t, doc)
	assert.Empty(t, withClass(els, "cut"))
	assert.Empty(t, withClass(els, "legend-cut"))
	assert.Empty(t, withClass(els, "marker"))
	assert.Contains(t, string(doc), "columns 1..10 of")
	assert.Contains(t, string(doc), "no snapshot&#39;s cut in these columns")
	checkLegend(t, a, els)

	for _, tc := range []struct {
		v    View
		want string
	}{
		{View{Snap: 9}, "no snapshot 9 in the trace (it names 1, 2, 3)"},
		{View{From: full.Columns + 1}, "starts after the run's last column"},
		{View{From: 10, To: 5}, "window 10:5 is empty"},
		{View{From: -1}, "columns start at 1"},
	} {
		var buf bytes.Buffer
		_, err := a.Draw(&buf, SVG, tc.v)
		require.Error(t, err, "%+v", tc.v)
		assert.Contains(t, err.Error(), tc.want)
		assert.Equal(t, err, a.CheckView(tc.v))
		assert.Zero(t, buf.Len(), "nothing written")
	}
	assert.NoError(t, a.CheckView(View{Snap: 2, From: 1, To: full.Columns + 10}), "a window past the end ends at the run's end")
}

// The HTML page zooms and pans with inline script and asks for nothing
// outside itself.
func TestDiagramHTMLZoomsAndPans(t *testing.T) {
	doc := render(t, readTraceFile(t, "traces/conforms/concurrent-snapshots.jsonl"), HTML)
	els := parse(t, doc)
	var zooms []string
	for _, e := range els {
		if e.name == "button" {
			zooms = append(zooms, e.attrs["data-zoom"])
		}
		assert.Empty(t, e.attrs["src"], "%s: nothing loaded", e.name)
		assert.NotEqual(t, "link", e.name)
		if h := e.attrs["href"]; h != "" {
			assert.True(t, strings.HasPrefix(h, "#"), "%s href %s", e.name, h)
		}
	}
	assert.Equal(t, []string{"in", "out", "fit", "reset"}, zooms)
	require.Len(t, withClass(els, "proc-line"), 3)
	var viewport, script, svg bool
	for _, e := range els {
		viewport = viewport || e.attrs["id"] == "viewport"
		script = script || e.name == "script"
		svg = svg || (e.name == "svg" && e.attrs["id"] == "diagram")
	}
	assert.True(t, viewport && script && svg)
	assert.Contains(t, string(doc), zoomJS, "the script is inline")
	for _, u := range regexp.MustCompile(`(https?:)?//[a-z0-9.-]+\.[a-z]+/[^"' )]*`).FindAllString(string(doc), -1) {
		assert.Contains(t, []string{"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xhtml"}, u, "only XML namespaces, no requests")
	}
	assert.NotContains(t, zoomJS, "]]>", "the script stays inside its CDATA section")
	assert.Contains(t, string(doc), `svg[data-focus="2"] [data-snap]:not([data-snap="2"])`, "a clicked cut highlights its snapshot")
	for _, fn := range []string{"wheel", "pointermove", "keydown", "viewBox"} {
		assert.Contains(t, zoomJS, fn)
	}

	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("node not found: the script's syntax is not checked")
		return
	}
	js := filepath.Join(t.TempDir(), "zoom.js")
	require.NoError(t, os.WriteFile(js, []byte(zoomJS), 0o644))
	out, err := exec.Command(node, "--check", js).CombinedOutput()
	assert.NoError(t, err, "node --check zoom.js: %s", out)
}

// benchRun is a run of about 100,000 events, built once.
var benchRun spec.Trace

func hundredK(b *testing.B) spec.Trace {
	if benchRun.Header.Topology == nil {
		benchRun = randomRun(b, 5, 100000, []int{20000, 20003, 50000, 80000, 80001}, 3)
	}
	return benchRun
}

// BenchmarkDiagram100k draws the whole of a 100,000-event run, analysis
// included.
func BenchmarkDiagram100k(b *testing.B) {
	tr := hundredK(b)
	b.ResetTimer()
	for b.Loop() {
		require.NoError(b, Diagram(tr, io.Discard, HTML, View{}))
	}
}

// BenchmarkDiagram100kSnap draws one snapshot's neighbourhood of the
// same run, analysis included.
func BenchmarkDiagram100kSnap(b *testing.B) {
	tr := hundredK(b)
	b.ResetTimer()
	for b.Loop() {
		require.NoError(b, Diagram(tr, io.Discard, HTML, View{Snap: 3}))
	}
}
