package export

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// Format is a diagram's file format.
type Format int

const (
	// SVG is a standalone SVG image.
	SVG Format = iota
	// HTML is an XHTML page holding the SVG and a table of the snapshots.
	HTML
)

// FormatOf picks the format from a file name: .svg, or .html/.htm.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		return SVG, nil
	case ".html", ".htm":
		return HTML, nil
	}
	return 0, fmt.Errorf("export: %s: diagram file must end in .svg or .html", path)
}

// Colours. Red is kept for orphan, missing and spurious messages.
const (
	red  = "#d62728"
	grey = "#999999"
	ink  = "#333333"
)

var palette = []string{"#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22"}

const (
	legendOrphan   = "orphan: received before the receiver's cut, sent after the sender's (inconsistent cut)"
	legendSpurious = "spurious: in the recorded channel state but not in flight at the cut"
	// spuriousDash is the dash pattern of spurious messages.
	spuriousDash = "1 3"
)

// SnapColor is the colour snapshot number k (0-based, in id order) is
// drawn in.
func SnapColor(k int) string { return palette[k%len(palette)] }

// Geometry.
const (
	dx         = 56 // between consecutive events
	dy         = 80 // between process lines
	left       = 80 // room for process names
	top        = 50 // room for cut labels
	legendLine = 20
)

// Diagram writes a self-contained space-time diagram of tr: one horizontal
// line per process, events as dots at x = their position in the trace's
// causal order (hover for the event), application messages as arrows from
// send to receive, markers as dashed arrows in their snapshot's colour, and
// each snapshot's cut as a line in its colour through every process's
// recording point, with a legend. Messages in flight at a cut and recorded
// in the channel state are drawn thick in the snapshot's colour; orphan
// messages (received before the receiver's cut, sent after the sender's),
// missing ones (in flight at the cut but not recorded, red, dashed) and
// spurious ones (recorded but not in flight, red, dotted) are red: the
// statuses of spec's cut analysis (spec.MsgStatus), as the audit verdict
// names them.
//
// When the trace carries the implementation's report of a snapshot
// (spec.Trace.Recorded), the report decides what was recorded, and the
// snapshot's total in the legend is the reported one, with the total the
// events imply beside it when the two differ. Without a report the
// recorded state is the one the events imply.
//
// Elements carry classes for tools and tests: proc-line, event, msg (with
// app and a status: orphan, missing, spurious, recorded, pending), marker,
// cut, and data-* attributes naming the process, channel, sequence or
// snapshot.
func Diagram(tr spec.Trace, w io.Writer, f Format) error {
	a, err := Analyze(tr)
	if err != nil {
		return err
	}
	var b strings.Builder
	switch f {
	case SVG:
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
		a.svg(&b)
	case HTML:
		a.html(&b)
	default:
		return fmt.Errorf("export: unknown diagram format %d", f)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (a *Analysis) x(k int) int { return left + (k+1)*dx }

func (a *Analysis) y(p spec.ProcID) int {
	i := a.Top.ProcIndex(p)
	if i < 0 {
		i = 0
	}
	return top + i*dy
}

func (a *Analysis) width() int {
	w := left + (len(a.Trace.Events)+2)*dx
	// Room for the legend's longest line, about 7px a character.
	longest := max(len(legendOrphan), len(legendSpurious))
	for _, c := range a.Cuts {
		longest = max(longest, len("cut of "+c.Summary()))
	}
	return max(w, left+50+7*longest+20)
}

// shorten moves (x2, y2) towards (x1, y1) by the radius of an event dot,
// so that arrowheads end at the dot's edge.
func shorten(x1, y1, x2, y2 int) (int, int) {
	ddx, ddy := float64(x2-x1), float64(y2-y1)
	d := math.Hypot(ddx, ddy)
	if d < 20 {
		return x2, y2
	}
	const r = 7
	return x2 - int(math.Round(ddx*r/d)), y2 - int(math.Round(ddy*r/d))
}

func (a *Analysis) snapColor(s spec.SnapID) string {
	for k, c := range a.Cuts {
		if c.Snap == s {
			return SnapColor(k)
		}
	}
	return grey
}

// anySpurious reports whether some snapshot's report holds a message that
// was not in flight at its cut; the legend explains spurious messages only
// then.
func (a *Analysis) anySpurious() bool {
	for _, c := range a.Cuts {
		if len(c.Spurious) > 0 {
			return true
		}
	}
	return false
}

func (a *Analysis) legendItems() int {
	n := len(a.Cuts) + 6
	if a.anySpurious() {
		n++
	}
	return n
}

func (a *Analysis) height() int {
	return top + (len(a.Top.Procs)-1)*dy + 50 + a.legendItems()*legendLine + 10
}

func eventTitle(k int, e spec.Event) string {
	s := fmt.Sprintf("event %d, %s step %d: %s\nafter: bal=%d sent=%d rcvd=%d\nvc: %v",
		k+1, string(e.Proc), e.Seq, e.String(), e.After.Bal, e.After.Sent, e.After.Rcvd, e.VC)
	if e.Action == spec.RecvMarker {
		if e.First {
			s += "\nfirst marker: records its state"
		} else {
			s += "\nlater marker: closes the channel's recording"
		}
	}
	return s
}

// svg writes the diagram, in order: the header and arrowheads, the
// process lines, the cuts (under everything else), the markers, the
// application messages, the events on top, and the legend.
func (a *Analysis) svg(b *strings.Builder) {
	W := a.width()
	a.svgHeader(b, W)
	for _, p := range a.Top.Procs {
		y := a.y(p)
		fmt.Fprintf(b, `<line class="proc-line" data-proc="%s" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5"><title>process %s</title></line>`+"\n",
			esc(string(p)), left, y, W-dx/2, y, ink, esc(string(p)))
		fmt.Fprintf(b, `<text class="proc-label" x="%d" y="%d" text-anchor="end" font-weight="bold">%s</text>`+"\n", left-10, y+4, esc(string(p)))
	}
	for k, c := range a.Cuts {
		a.svgCut(b, W, k, c)
	}
	for _, m := range a.Markers {
		a.svgMarker(b, W, m)
	}
	for _, m := range a.Messages {
		a.svgMessage(b, W, m)
	}
	for k, e := range a.Trace.Events {
		fill, stroke := ink, ink
		if e.Action == spec.Initiate || e.Action == spec.RecvMarker {
			fill, stroke = "white", a.snapColor(e.Snap)
		}
		fmt.Fprintf(b, `<circle class="event" data-index="%d" data-proc="%s" data-action="%s" cx="%d" cy="%d" r="5" fill="%s" stroke="%s" stroke-width="2"><title>%s</title></circle>`+"\n",
			k+1, esc(string(e.Proc)), esc(string(e.Action)), a.x(k), a.y(e.Proc), fill, stroke, esc(eventTitle(k, e)))
	}
	a.legend(b)
	b.WriteString("</svg>\n")
}

// svgHeader opens the SVG document of width W: its title, an arrowhead
// per colour, a white background.
func (a *Analysis) svgHeader(b *strings.Builder, W int) {
	H := a.height()
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(b, "<title>%s</title>\n", esc(a.caption()))
	b.WriteString(`<defs>`)
	arrowHead := func(id, color string) {
		fmt.Fprintf(b, `<marker id="%s" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="%s"/></marker>`, id, color)
	}
	arrowHead("arrow", ink)
	arrowHead("arrow-red", red)
	arrowHead("arrow-grey", grey)
	for k := range a.Cuts {
		arrowHead(fmt.Sprintf("arrow-s%d", k), SnapColor(k))
	}
	b.WriteString("</defs>\n")
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
}

// svgCut draws cut c, the k-th: a line in its colour through every
// process's recording point (at the right edge for a process that has not
// recorded; dotted if incomplete), with its label.
func (a *Analysis) svgCut(b *strings.Builder, W, k int, c Cut) {
	color := SnapColor(k)
	var pts []string
	var notes []string
	for _, p := range a.Top.Procs {
		y := a.y(p)
		x := W - dx
		if r := c.Rec[p]; r >= 0 {
			x = a.x(r) + dx/3
			notes = append(notes, fmt.Sprintf("%s recorded at event %d", string(p), r+1))
		} else {
			notes = append(notes, fmt.Sprintf("%s has not recorded", string(p)))
		}
		pts = append(pts, fmt.Sprintf("%d,%d %d,%d", x, y-dy/3, x, y+dy/3))
	}
	dash := ""
	if !c.Complete {
		dash = ` stroke-dasharray="2 3"`
	}
	notes = append(notes, c.reportNotes()...)
	fmt.Fprintf(b, `<polyline class="cut" data-snap="%d" points="%s" fill="none" stroke="%s" stroke-width="3" opacity="0.6"%s><title>%s</title></polyline>`+"\n",
		c.Snap, strings.Join(pts, " "), color, dash, esc(fmt.Sprintf("cut of snapshot %d\n%s", c.Snap, strings.Join(notes, "\n"))))
	first := a.Top.Procs[0]
	x := W - dx
	if r := c.Rec[first]; r >= 0 {
		x = a.x(r) + dx/3
	}
	fmt.Fprintf(b, `<text class="cut-label" data-snap="%d" x="%d" y="%d" text-anchor="middle" fill="%s" font-weight="bold">S%d</text>`+"\n", c.Snap, x, a.y(first)-dy/3-6, color, c.Snap)
}

// svgMarker draws marker m, dashed in its snapshot's colour.
func (a *Analysis) svgMarker(b *strings.Builder, W int, m Marker) {
	color, head := grey, "arrow-grey"
	for k, c := range a.Cuts {
		if c.Snap == m.Snap {
			color, head = SnapColor(k), fmt.Sprintf("arrow-s%d", k)
		}
	}
	x1, y1 := left, a.y(m.Chan.From)
	if m.Send >= 0 {
		x1 = a.x(m.Send)
	}
	x2, y2 := W-dx/2, a.y(m.Chan.To)
	what := "not received"
	if m.Recv >= 0 {
		x2, y2 = shorten(x1, y1, a.x(m.Recv), y2)
		what = fmt.Sprintf("received at event %d", m.Recv+1)
	}
	fmt.Fprintf(b, `<line class="marker" data-snap="%d" data-chan="%s" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4" marker-end="url(#%s)"><title>%s</title></line>`+"\n",
		m.Snap, esc(m.Chan.String()), x1, y1, x2, y2, color, head, esc(fmt.Sprintf("marker of snapshot %d on %s, %s", m.Snap, m.Chan, what)))
}

// msgStyle is how a message is drawn: its colour, arrowhead, width and
// extra attributes.
type msgStyle struct{ color, head, width, extra string }

// style is the style of a message whose worst status is st, for snapshot s.
func (a *Analysis) style(st Status, s spec.SnapID) msgStyle {
	switch st {
	case Orphan:
		return msgStyle{red, "arrow-red", "2.5", ""}
	case Missing:
		return msgStyle{red, "arrow-red", "2.5", ` stroke-dasharray="8 3"`}
	case Spurious:
		return msgStyle{red, "arrow-red", "2.5", ` stroke-dasharray="` + spuriousDash + `"`}
	case Recorded:
		y := msgStyle{ink, "arrow", "3.5", ""}
		for k, c := range a.Cuts {
			if c.Snap == s {
				y.color, y.head = SnapColor(k), fmt.Sprintf("arrow-s%d", k)
			}
		}
		return y
	case Pending:
		return msgStyle{ink, "arrow", "2.5", ""}
	}
	return msgStyle{ink, "arrow", "1.5", ""}
}

// svgMessage draws application message m from send to receive (to the
// right edge, dotted, if not received), styled by its worst status.
func (a *Analysis) svgMessage(b *strings.Builder, W int, m Message) {
	st, s := m.Worst()
	y := a.style(st, s)
	x1, y1 := left, a.y(m.Chan.From)
	if m.Send >= 0 {
		x1 = a.x(m.Send)
	}
	x2, y2 := W-dx/2, a.y(m.Chan.To)
	if m.Recv >= 0 {
		x2, y2 = shorten(x1, y1, a.x(m.Recv), y2)
	} else {
		y.color, y.head, y.extra = grey, "arrow-grey", ` stroke-dasharray="2 3"`
		if st.Fault() {
			y.color, y.head = red, "arrow-red"
		}
	}
	class := "msg app"
	if st != "" {
		class += " " + string(st)
	}
	fmt.Fprintf(b, `<line class="%s" data-chan="%s" data-seq="%d" data-snap="%d" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%s"%s marker-end="url(#%s)"><title>%s</title></line>`+"\n",
		class, esc(m.Chan.String()), m.Seq, s, x1, y1, x2, y2, y.color, y.width, y.extra, y.head, esc(m.title(a)))
}

func (m Message) title(a *Analysis) string {
	s := fmt.Sprintf("%s message #%d: %d", m.Chan, m.Seq, m.Amount)
	if m.Send >= 0 {
		s += fmt.Sprintf(", sent at event %d", m.Send+1)
	} else {
		s += ", never sent"
	}
	if m.Recv >= 0 {
		s += fmt.Sprintf(", received at event %d", m.Recv+1)
	} else {
		s += ", not received"
	}
	for _, snap := range sortedSnaps(m.Status) {
		switch m.Status[snap] {
		case Orphan:
			s += fmt.Sprintf("\nsnapshot %d: ORPHAN, received before the receiver's cut but sent after the sender's", snap)
		case Missing:
			s += fmt.Sprintf("\nsnapshot %d: MISSING, in flight at the cut but not in the %s channel state", snap, a.stateWord(snap))
		case Spurious:
			s += fmt.Sprintf("\nsnapshot %d: SPURIOUS, in the %s channel state but not in flight at the cut", snap, a.stateWord(snap))
		case Recorded:
			s += fmt.Sprintf("\nsnapshot %d: in flight at the cut, in the %s channel state", snap, a.stateWord(snap))
		case Pending:
			s += fmt.Sprintf("\nsnapshot %d: in flight at the cut, channel still recording", snap)
		}
	}
	return s
}

func (a *Analysis) caption() string {
	return fmt.Sprintf("markerwave space-time diagram: %d processes, %d events, %d snapshots", len(a.Top.Procs), len(a.Trace.Events), len(a.Cuts))
}

// stateWord names snapshot s's recorded state: "reported" if the trace
// carries a report of it, else "recorded" (the events').
func (a *Analysis) stateWord(s spec.SnapID) string {
	for _, c := range a.Cuts {
		if c.Snap == s && c.Reported != nil {
			return "reported"
		}
	}
	return "recorded"
}

// Summary describes a cut in one line: its initiator and its total. With
// a report of the snapshot that is the reported total, followed by the
// total the events imply when the cut is complete and the two differ;
// without one, the total the events imply, when the cut is complete.
func (c Cut) Summary() string {
	s := fmt.Sprintf("snapshot %d", c.Snap)
	if c.Initiator != "" {
		s += fmt.Sprintf(" (initiator %s)", string(c.Initiator))
	}
	switch {
	case c.Reported != nil && c.Complete:
		rt, et := c.Reported.Total(), c.Recorded.Total()
		s += fmt.Sprintf(": complete, reported total %d", rt)
		if rt != et {
			s += fmt.Sprintf(", the events imply %d", et)
		} else if !c.Recorded.Equal(*c.Reported) {
			s += ", the events imply the same total from another state"
		}
	case c.Reported != nil:
		s += fmt.Sprintf(": incomplete in the events, reported total %d", c.Reported.Total())
	case c.Complete:
		s += fmt.Sprintf(": complete, recorded total %d", c.Recorded.Total())
	default:
		s += ": incomplete"
	}
	return s
}

// reportNotes describes, for the cut's hover title, how the reported
// state differs from the one the events imply, and what it holds that was
// not in flight.
func (c Cut) reportNotes() []string {
	if c.Reported == nil {
		return nil
	}
	var out []string
	if c.Complete {
		if d := c.Recorded.Diff(*c.Reported); d != "" {
			out = append(out, "the events imply vs the implementation reported:")
			out = append(out, strings.Split(d, "\n")...)
		} else {
			out = append(out, "the reported state is the one the events imply")
		}
	}
	for _, m := range c.Spurious {
		out = append(out, fmt.Sprintf("reported %s, not in flight at the cut", m))
	}
	return out
}

func (a *Analysis) legend(b *strings.Builder) {
	y := top + (len(a.Top.Procs)-1)*dy + 50
	b.WriteString(`<g class="legend">` + "\n")
	item := func(draw, label string) {
		fmt.Fprintf(b, draw, left, y, left+40, y)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", left+50, y+4, esc(label))
		y += legendLine
	}
	for k, c := range a.Cuts {
		item(`<line class="legend-cut" data-snap="`+fmt.Sprint(c.Snap)+`" x1="%d" y1="%d" x2="%d" y2="%d" stroke="`+SnapColor(k)+`" stroke-width="3" opacity="0.6"/>`+"\n", "cut of "+c.Summary())
	}
	item(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="`+ink+`" stroke-width="1.5"/>`+"\n", "application message, send to receive")
	item(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="`+grey+`" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", "marker (dashed, in its snapshot's colour)")
	item(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="`+SnapColor(0)+`" stroke-width="3.5"/>`+"\n", "in flight at the cut, recorded in the channel state (snapshot's colour)")
	item(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="`+red+`" stroke-width="2.5"/>`+"\n", legendOrphan)
	item(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="`+red+`" stroke-width="2.5" stroke-dasharray="8 3"/>`+"\n", "missing: in flight at the cut but not recorded")
	if a.anySpurious() {
		item(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="`+red+`" stroke-width="2.5" stroke-dasharray="`+spuriousDash+`"/>`+"\n", legendSpurious)
	}
	item(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="`+grey+`" stroke-width="1.5" stroke-dasharray="2 3"/>`+"\n", "not received by the end of the trace")
	b.WriteString("</g>\n")
}

func (a *Analysis) html(b *strings.Builder) {
	b.WriteString("<!DOCTYPE html>\n")
	b.WriteString(`<html xmlns="http://www.w3.org/1999/xhtml" lang="en">` + "\n<head>\n")
	b.WriteString(`<meta charset="utf-8"/>` + "\n")
	fmt.Fprintf(b, "<title>%s</title>\n", esc(a.caption()))
	b.WriteString("<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}.scroll{overflow-x:auto}.bad{color:" + red + ";font-weight:bold}</style>\n")
	b.WriteString("</head>\n<body>\n")
	fmt.Fprintf(b, "<h1>%s</h1>\n", esc(a.caption()))
	b.WriteString("<p>Time runs left to right in the trace's causal order. Hover over events, arrows and cuts for details.</p>\n")
	b.WriteString(`<div class="scroll">` + "\n")
	a.svg(b)
	b.WriteString("</div>\n<h2>Snapshots</h2>\n<table>\n<tr><th>snapshot</th><th>recording points</th><th>orphans</th><th>in flight, recorded</th><th>missing</th><th>spurious</th></tr>\n")
	for _, c := range a.Cuts {
		a.htmlSnapshotRow(b, c)
	}
	b.WriteString("</table>\n")
	if len(a.Problems) > 0 {
		b.WriteString("<h2>Problems</h2>\n<ul>\n")
		for _, p := range a.Problems {
			fmt.Fprintf(b, `<li class="bad">%s</li>`+"\n", esc(p))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body>\n</html>\n")
}

// htmlSnapshotRow writes cut c's row of the snapshot table: its summary,
// recording points, and messages by status.
func (a *Analysis) htmlSnapshotRow(b *strings.Builder, c Cut) {
	var recs []string
	for _, p := range a.Top.Procs {
		if r := c.Rec[p]; r >= 0 {
			recs = append(recs, fmt.Sprintf("%s@%d", string(p), r+1))
		} else {
			recs = append(recs, string(p)+"@-")
		}
	}
	count := map[Status][]string{}
	for _, m := range a.Messages {
		if st := m.Status[c.Snap]; st != "" && st != Spurious {
			count[st] = append(count[st], fmt.Sprintf("%s#%d", m.Chan, m.Seq))
		}
	}
	for _, m := range c.Spurious {
		count[Spurious] = append(count[Spurious], fmt.Sprintf("%s#%d", m.Chan, m.Msg.Seq))
	}
	cell := func(st Status) string {
		if len(count[st]) == 0 {
			return "<td>none</td>"
		}
		cls := ""
		if st.Fault() {
			cls = ` class="bad"`
		}
		return fmt.Sprintf("<td%s>%s</td>", cls, esc(strings.Join(count[st], ", ")))
	}
	fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td>%s%s%s%s</tr>\n", esc(c.Summary()), esc(strings.Join(recs, " ")), cell(Orphan), cell(Recorded), cell(Missing), cell(Spurious))
}
