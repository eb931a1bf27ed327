package export

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// element is one XML element of a diagram.
type element struct {
	name  string
	attrs map[string]string
}

func (e element) hasClass(c string) bool {
	for _, f := range strings.Fields(e.attrs["class"]) {
		if f == c {
			return true
		}
	}
	return false
}

// parse checks that doc is well-formed XML and returns its elements.
func parse(t *testing.T, doc []byte) []element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	var out []element
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the diagram is well-formed XML")
		if se, ok := tok.(xml.StartElement); ok {
			e := element{name: se.Name.Local, attrs: map[string]string{}}
			for _, a := range se.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
		}
	}
	return out
}

func withClass(els []element, c string) []element {
	var out []element
	for _, e := range els {
		if e.hasClass(c) {
			out = append(out, e)
		}
	}
	return out
}

func render(t *testing.T, tr spec.Trace, f Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Diagram(tr, &buf, f, View{}))
	if d := os.Getenv("MARKERWAVE_EXPORT_OUT"); d != "" {
		ext := map[Format]string{SVG: ".svg", HTML: ".html"}[f]
		name := strings.NewReplacer("/", "_").Replace(t.Name()) + ext
		require.NoError(t, os.WriteFile(filepath.Join(d, name), buf.Bytes(), 0o644))
	}
	return buf.Bytes()
}

func TestDiagramStructure(t *testing.T) {
	for name, tr := range map[string]spec.Trace{"twoBank": twoBank(t), "tokenRing": tokenRing(t)} {
		for _, f := range []Format{SVG, HTML} {
			els := parse(t, render(t, tr, f))
			sends, recvMarkers := 0, 0
			for _, e := range tr.Events {
				switch e.Action {
				case spec.SendApp:
					sends++
				case spec.RecvMarker:
					recvMarkers++
				}
			}
			lines := withClass(els, "proc-line")
			require.Len(t, lines, len(tr.Header.Topology.Procs), "%s: one line per process", name)
			for i, p := range tr.Header.Topology.Procs {
				assert.Equal(t, string(p), lines[i].attrs["data-proc"])
			}
			assert.Len(t, withClass(els, "event"), len(tr.Events), "%s: one dot per event", name)
			assert.Len(t, withClass(els, "msg"), sends, "%s: one arrow per message", name)
			markers := withClass(els, "marker")
			assert.Len(t, markers, recvMarkers, "%s: one dashed arrow per marker", name)
			for _, m := range markers {
				assert.NotEmpty(t, m.attrs["stroke-dasharray"], "markers are dashed")
			}
			cuts := withClass(els, "cut")
			require.Len(t, cuts, 1, "%s: the cut of snapshot 1", name)
			assert.Equal(t, "1", cuts[0].attrs["data-snap"])
			assert.Len(t, strings.Fields(cuts[0].attrs["points"]), 2*len(tr.Header.Topology.Procs), "the cut passes every process line")
			assert.Len(t, withClass(els, "legend-cut"), 1, "the legend names the snapshot")
			assert.Empty(t, withClass(els, "orphan"), "%s: a Chandy-Lamport run has no orphans", name)
			assert.Len(t, withClass(els, "recorded"), 1, "%s: the message in flight at the cut is highlighted", name)
			if f == HTML {
				assert.Equal(t, "html", els[0].name)
			} else {
				assert.Equal(t, "svg", els[0].name)
			}
		}
	}
}

func TestDiagramCutGoesThroughRecordingPoints(t *testing.T) {
	tr := twoBank(t)
	a, err := Analyze(tr)
	require.NoError(t, err)
	l, err := newLayout(a, View{})
	require.NoError(t, err)
	els := parse(t, render(t, tr, SVG))
	cut := withClass(els, "cut")[0]
	pts := strings.Fields(cut.attrs["points"])
	// P1 recorded at event 3 (index 2), P2 at event 6 (index 5).
	assert.True(t, strings.HasPrefix(pts[0], num(l.x(2)+dx/3)+","), pts[0])
	assert.True(t, strings.HasPrefix(pts[2], num(l.x(5)+dx/3)+","), pts[2])
}

func TestDiagramShowsOrphanInRed(t *testing.T) {
	els := parse(t, render(t, nonFIFO(t), SVG))
	orphans := withClass(els, "orphan")
	require.Len(t, orphans, 1)
	assert.Equal(t, red, orphans[0].attrs["stroke"])
	assert.Equal(t, "P1->P2", orphans[0].attrs["data-chan"])
	var titles []string
	d := xml.NewDecoder(bytes.NewReader(render(t, nonFIFO(t), SVG)))
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		if cd, ok := tok.(xml.CharData); ok {
			titles = append(titles, string(cd))
		}
	}
	assert.Contains(t, strings.Join(titles, "\n"), "ORPHAN", "the hover title says why it is red")
	assert.Contains(t, strings.Join(titles, "\n"), "RecvApp(P1, P2) 30#1", "events have hover titles with the event text")
}

func TestDiagramEscapesAndIncompleteSnapshots(t *testing.T) {
	// A trace cut short: the snapshot is incomplete, a message and a
	// marker are never received; the output is still well-formed.
	tr := twoBank(t)
	tr.Events = tr.Events[:4]
	tr.Header.Note = `<&">`
	for _, f := range []Format{SVG, HTML} {
		els := parse(t, render(t, tr, f))
		assert.Len(t, withClass(els, "msg"), 2)
		assert.Len(t, withClass(els, "marker"), 1, "the marker sent and not received")
		assert.Len(t, withClass(els, "cut"), 1)
	}
	var buf bytes.Buffer
	assert.Error(t, Diagram(spec.Trace{}, &buf, SVG, View{}), "no topology")
	_, err := FormatOf("x.png")
	assert.Error(t, err)
}

func TestDiagramReportedMissingMessage(t *testing.T) {
	tr := readTraceFile(t, "traces/rejects/ExactChannelState-missing-message.jsonl")
	doc := render(t, tr, SVG)
	els := parse(t, doc)
	missing := withClass(els, "missing")
	require.Len(t, missing, 1, "the $30 the report drops")
	assert.Equal(t, red, missing[0].attrs["stroke"])
	assert.NotEmpty(t, missing[0].attrs["stroke-dasharray"], "missing messages are dashed")
	assert.Equal(t, "P1->P2", missing[0].attrs["data-chan"])
	assert.Empty(t, withClass(els, "recorded"))
	assert.Contains(t, string(doc), "not in the reported channel state")
	assert.Contains(t, string(doc), "cut of snapshot 1 (initiator P2): complete, reported total 120, the events imply 150")
	parse(t, render(t, tr, HTML))
}

// TestDocsDiagramsUpToDate checks the README's diagrams are what
// `markerwave export --diagram docs/X.svg TRACE` writes today.
func TestDocsDiagramsUpToDate(t *testing.T) {
	for svg, trace := range map[string]string{
		"docs/token-ring.svg": "traces/conforms/token-ring.jsonl",
		"docs/orphan.svg":     "traces/rejects/ConsistentCut-orphan.jsonl",
	} {
		want, err := os.ReadFile(filepath.Join("..", "..", svg))
		require.NoError(t, err)
		var got bytes.Buffer
		require.NoError(t, Diagram(readTraceFile(t, trace), &got, SVG, View{}))
		if got.String() != string(want) {
			t.Errorf("%s is stale; regenerate it: go run ./cmd/markerwave export --diagram %s %s", svg, svg, trace)
		}
	}
}
