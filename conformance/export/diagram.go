package export

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// Format is a diagram's file format.
type Format int

const (
	// SVG is a standalone SVG image.
	SVG Format = iota
	// HTML is an XHTML page holding the SVG, zoomable and pannable, and a
	// table of the snapshots.
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

// cutDashes are the cuts' dash patterns, by snapshot number: with the
// colour they tell overlapping cuts apart.
var cutDashes = []string{"", "10 4", "3 3", "10 3 3 3"}

// SnapColor is the colour snapshot number k (0-based, in id order) is
// drawn in.
func SnapColor(k int) string { return palette[k%len(palette)] }

// cutDash is the dash pattern of snapshot number k's cut.
func cutDash(k int) string { return cutDashes[k%len(cutDashes)] }

// Geometry.
const (
	dx          = 56 // between consecutive columns
	dy          = 80 // between process lines
	left        = 80 // room for process names
	top         = 50 // room for cut labels
	legendLine  = 20
	bandGap     = 4.5 // between the stacked strokes of a message
	haloWidth   = 16  // of the faint band along a cut
	haloOpacity = "0.15"
	tickEvery   = 5 // columns between the time axis's labels
)

// category is a kind of line the diagram draws, with its legend entry:
// every element of the category is drawn with its stroke (the
// snapshot's colour when stroke is ""), width and dash, and its data-cat
// attribute is the category's id.
type category struct {
	id, label, stroke, width, dash string
}

var (
	catApp      = category{"app", "application message, send to receive, labelled #number (amount)", ink, "1.5", ""}
	catMarker   = category{"marker", "marker, dashed, in its snapshot's colour", "", "1.5", "6 4"}
	catRecorded = category{"recorded", "in flight at the cut, recorded in the channel state: thick, in the snapshot's colour, one stroke per snapshot", "", "3.5", ""}
	catPending  = category{"pending", "in flight at the cut, its channel still recording at the end of the trace: thick, dashed, in the snapshot's colour", "", "3.5", "5 2"}
	catOrphan   = category{"orphan", "orphan: received before the receiver's cut, sent after the sender's (inconsistent cut)", red, "2.5", ""}
	catMissing  = category{"missing", "missing: in flight at the cut but not recorded", red, "2.5", "8 3"}
	catSpurious = category{"spurious", "spurious: in the recorded channel state but not in flight at the cut", red, "2.5", spuriousDash}
	catLost     = category{"lost", "message not received by the end of the trace: grey, dotted, stops short of the receiver's line", grey, "1.5", "2 3"}
	catLostMark = category{"lost-marker", "marker not received by the end of the trace: dotted, in its snapshot's colour, stops short of the receiver's line", "", "1.5", "2 3"}

	// categories is the legend's order.
	categories = []category{catApp, catMarker, catLostMark, catRecorded, catPending, catOrphan, catMissing, catSpurious, catLost}
)

// noteClipped is the legend's note on lines cut off at the edge of the
// columns shown (class clipped, in their own category's stroke).
var noteClipped = category{id: "clipped", label: "an arrow ending at the diagram's edge continues outside the columns shown (hover for its events)"}

// spuriousDash is the dash pattern of spurious messages.
const spuriousDash = "1 3"

// statusCat is the category of a message whose status for a snapshot is
// st.
func statusCat(st Status) category {
	switch st {
	case Orphan:
		return catOrphan
	case Missing:
		return catMissing
	case Spurious:
		return catSpurious
	case Recorded:
		return catRecorded
	case Pending:
		return catPending
	}
	return catApp
}

// rank orders statuses by seriousness: a message's first stroke shows
// its most serious status.
var rank = map[Status]int{Orphan: 5, Missing: 4, Spurious: 3, Recorded: 2, Pending: 1}

// Diagram analyzes tr and writes its space-time diagram, as view v
// chooses, in format f (see Analysis.Draw).
func Diagram(tr spec.Trace, w io.Writer, f Format, v View) error {
	a, err := Analyze(tr)
	if err != nil {
		return err
	}
	_, err = a.Draw(w, f, v)
	return err
}

// Draw writes a self-contained space-time diagram of the run: one
// horizontal line per process, events as dots in columns of causal
// depth (Lamport time; concurrent events share a column; hover for the
// event), application messages as arrows from send to receive labelled
// with their number and amount, markers as dashed arrows in their
// snapshot's colour, and each snapshot's cut as a line in its colour and
// dash pattern through every process's recording point, labelled at
// each; a time axis, and a legend of the categories present. View v
// picks the columns and the snapshots drawn; arrows reaching outside the
// columns are cut off at the edge.
//
// A message in flight at a cut and recorded in the channel state is
// drawn thick in the snapshot's colour, one stroke per snapshot that
// records it; orphan messages (received before the receiver's cut, sent
// after the sender's), missing ones (in flight at the cut but not
// recorded, red, dashed) and spurious ones (recorded but not in flight,
// red, dotted) are red: the statuses of spec's cut analysis
// (spec.MsgStatus), as the audit verdict names them. A message or
// marker not received by the end of the trace stops short of its
// receiver's line, dotted.
//
// When the trace carries the implementation's report of a snapshot
// (spec.Trace.Recorded), the report decides what was recorded, and the
// snapshot's total in the legend is the reported one, with the total the
// events imply beside it when the two differ. Without a report the
// recorded state is the one the events imply.
//
// The HTML page zooms (wheel, buttons, + and -) and pans (drag, arrow
// keys) with a few lines of inline script, requests nothing, and
// highlights a snapshot when its legend entry is clicked.
//
// Elements carry classes and attributes for tools and tests: proc-line,
// event (data-col: its column), msg (with app and a status: orphan,
// missing, spurious, recorded, pending), msg-band (a further snapshot's
// stroke of a message), msg-label, marker, cut, cut-label, legend-cut
// and legend-item; data-cat names an element's category, data-* the
// process, channel, sequence or snapshot.
func (a *Analysis) Draw(w io.Writer, f Format, v View) (Extent, error) {
	l, err := newLayout(a, v)
	if err != nil {
		return Extent{}, err
	}
	d := &drawing{layout: l, used: map[string]bool{}}
	d.body()
	ext := Extent{From: l.from, To: l.to, Columns: l.last, Width: d.width(), Height: d.height()}
	if err := writeDiagram(w, f, d); err != nil {
		return Extent{}, err
	}
	return ext, nil
}

// renderer is a diagram drawn (a trace's, or a barrier trace's), ready
// to be written in either format.
type renderer interface {
	svg(w *bufio.Writer)
	html(w *bufio.Writer)
}

// writeDiagram writes r to w as format f.
func writeDiagram(w io.Writer, f Format, r renderer) error {
	bw := bufio.NewWriter(w)
	switch f {
	case SVG:
		bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
		r.svg(bw)
	case HTML:
		r.html(bw)
	default:
		return fmt.Errorf("export: unknown diagram format %d", f)
	}
	return bw.Flush()
}

// drawing is one diagram being drawn: the layout, the SVG body drawn
// so far and the categories it used (the legend lists those).
type drawing struct {
	*layout
	buf  bytes.Buffer
	used map[string]bool
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// num renders a coordinate with at most one decimal.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func (d *drawing) y(p spec.ProcID) float64 {
	i := d.a.Top.ProcIndex(p)
	if i < 0 {
		i = 0
	}
	return float64(top + i*dy)
}

// axisY is the y of the time axis, under the last process line.
func (d *drawing) axisY() int { return top + (len(d.a.Top.Procs)-1)*dy + 35 }

// legendTop is the y of the legend's first line.
func (d *drawing) legendTop() int { return d.axisY() + 35 }

// legendItems lists the legend's entries: the cuts drawn, then the
// categories used.
func (d *drawing) legendItems() []category {
	var out []category
	for _, c := range append(categories, noteClipped) {
		if d.used[c.id] {
			out = append(out, c)
		}
	}
	return out
}

func (d *drawing) width() int {
	w := int(d.xMax()) + dx/2
	// Room for the legend's longest line, about 7px a character.
	longest := len(d.caption())
	for _, c := range d.legendItems() {
		longest = max(longest, len(c.label))
	}
	for _, k := range d.cuts {
		longest = max(longest, len("cut of "+d.a.Cuts[k].Summary()))
	}
	return max(w, left+50+7*longest+20)
}

func (d *drawing) height() int {
	return d.legendTop() + (len(d.cuts)+len(d.legendItems()))*legendLine + 10
}

// snapIndex is the index in a.Cuts of snapshot s, -1 if none.
func (a *Analysis) snapIndex(s spec.SnapID) int {
	for k, c := range a.Cuts {
		if c.Snap == s {
			return k
		}
	}
	return -1
}

// snapColor is snapshot s's colour, grey if it is not drawn.
func (d *drawing) snapColor(s spec.SnapID) string {
	if k := d.a.snapIndex(s); k >= 0 && d.drawn[s] {
		return SnapColor(k)
	}
	return grey
}

// stroke is the colour category c is drawn in for snapshot s.
func (d *drawing) stroke(c category, s spec.SnapID) string {
	if c.stroke != "" {
		return c.stroke
	}
	return d.snapColor(s)
}

// lineAttrs are the stroke attributes of category c for snapshot s,
// noting c as used.
func (d *drawing) lineAttrs(c category, s spec.SnapID) string {
	d.used[c.id] = true
	return fmt.Sprintf(`data-cat="%s" stroke="%s" stroke-width="%s"`, c.id, d.stroke(c, s), c.width) + dashAttr(c.dash)
}

// dashAttr is the stroke-dasharray attribute of dash pattern dash, none
// for a solid line ("").
func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

// head is the arrowhead id of colour col.
func head(col string) string { return "arrow-" + strings.TrimPrefix(col, "#") }

func eventTitle(k int, e spec.Event, col int) string {
	s := fmt.Sprintf("event %d, %s step %d, column %d: %s\nafter: bal=%d sent=%d rcvd=%d\nvc: %v",
		k+1, string(e.Proc), e.Seq, col, e.String(), e.After.Bal, e.After.Sent, e.After.Rcvd, e.VC)
	if e.Action == spec.RecvMarker {
		if e.First {
			s += "\nfirst marker: records its state"
		} else {
			s += "\nlater marker: closes the channel's recording"
		}
	}
	return s
}

// body draws, in order: the process lines, the time axis, the cuts
// (under everything else), the markers, the application messages and
// the events on top.
func (d *drawing) body() {
	d.procLines()
	d.axis()
	for _, k := range d.cuts {
		d.cut(k, d.a.Cuts[k])
	}
	for _, m := range d.a.Markers {
		if d.drawn[m.Snap] {
			d.marker(m)
		}
	}
	for _, m := range d.a.Messages {
		d.message(m)
	}
	d.events()
}

// procLines draws each process's line across the columns shown, and its
// label.
func (d *drawing) procLines() {
	b := &d.buf
	x1, x2 := d.xMin(), d.xMax()
	for _, p := range d.a.Top.Procs {
		y := d.y(p)
		fmt.Fprintf(b, `<line class="proc-line" data-proc="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"><title>process %s</title></line>`+"\n",
			esc(string(p)), num(x1), num(y), num(x2), num(y), ink, esc(string(p)))
		fmt.Fprintf(b, `<text class="proc-label" x="%d" y="%s" text-anchor="end" font-weight="bold">%s</text>`+"\n", left-10, num(y+4), esc(string(p)))
	}
}

// events draws each event in the columns shown as a dot, a snapshot's
// events hollow in its colour.
func (d *drawing) events() {
	for k, e := range d.a.Trace.Events {
		if !d.shown(k) {
			continue
		}
		fill, stroke := ink, ink
		if e.Action == spec.Initiate || e.Action == spec.RecvMarker {
			fill, stroke = "white", d.snapColor(e.Snap)
		}
		fmt.Fprintf(&d.buf, `<circle class="event" data-index="%d" data-col="%d" data-proc="%s" data-action="%s" cx="%s" cy="%s" r="5" fill="%s" stroke="%s" stroke-width="2"><title>%s</title></circle>`+"\n",
			k+1, d.col[k], esc(string(e.Proc)), esc(string(e.Action)), num(d.x(k)), num(d.y(e.Proc)), fill, stroke, esc(eventTitle(k, e, d.col[k])))
	}
}

// axis draws the time axis: a tick and label at the first and last
// column shown and at every tickEvery-th column.
func (d *drawing) axis() {
	b := &d.buf
	y := float64(d.axisY())
	fmt.Fprintf(b, `<g class="axis" font-size="10" fill="%s"><text x="%d" y="%s" text-anchor="end">column</text>`+"\n", grey, left-10, num(y+4))
	for c := d.from; c <= d.to; c++ {
		if c != d.from && c != d.to && c%tickEvery != 0 {
			continue
		}
		x := d.xCol(c)
		fmt.Fprintf(b, `<line class="tick" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/><text class="tick-label" x="%s" y="%s" text-anchor="middle">%d</text>`+"\n",
			num(x), num(y-12), num(x), num(y-6), grey, num(x), num(y+4), c)
	}
	b.WriteString("</g>\n")
}

// cut draws cut c, the k-th: a line in its colour and dash through every
// process's recording point (at the run's end for a process that has not
// recorded), labelled at each; clamped to the columns shown.
func (d *drawing) cut(k int, c Cut) {
	b := &d.buf
	color := SnapColor(k)
	var pts, notes []string
	type label struct {
		x, y float64
		text string
	}
	var labels []label
	for _, p := range d.a.Top.Procs {
		y := d.y(p)
		x := d.xEnd()
		text := fmt.Sprintf("S%d", c.Snap)
		if r := c.Rec[p]; r >= 0 {
			x = d.x(r) + dx/3
			notes = append(notes, fmt.Sprintf("%s recorded at event %d (column %d)", string(p), r+1, d.col[r]))
		} else {
			notes = append(notes, fmt.Sprintf("%s has not recorded", string(p)))
			text += " not recorded"
		}
		x = min(max(x, d.xMin()), d.xMax())
		pts = append(pts, fmt.Sprintf("%s,%s %s,%s", num(x), num(y-dy/3), num(x), num(y+dy/3)))
		labels = append(labels, label{x + 3, y - dy/3 + 2, text})
	}
	dash := dashAttr(cutDash(k))
	notes = append(notes, c.reportNotes()...)
	fmt.Fprintf(b, `<polyline class="cut-halo" data-snap="%d" points="%s" fill="none" stroke="%s" stroke-width="%d" opacity="%s" stroke-linejoin="round"/>`+"\n",
		c.Snap, strings.Join(pts, " "), color, haloWidth, haloOpacity)
	fmt.Fprintf(b, `<polyline class="cut" data-snap="%d" points="%s" fill="none" stroke="%s" stroke-width="4" opacity="0.7"%s><title>%s</title></polyline>`+"\n",
		c.Snap, strings.Join(pts, " "), color, dash, esc(fmt.Sprintf("cut of %s\n%s", c.Summary(), strings.Join(notes, "\n"))))
	for _, lb := range labels {
		fmt.Fprintf(b, `<text class="cut-label" data-snap="%d" x="%s" y="%s" fill="%s" font-size="10" font-weight="bold">%s</text>`+"\n", c.Snap, num(lb.x), num(lb.y), color, esc(lb.text))
	}
}

// line draws one arrow or stroke from (x1, y1) to (x2, y2), clipped to
// the columns shown: class and extra attributes, the category and
// snapshot of its stroke, whether it lands (arrowhead) and its title.
// A line cut off at an edge gets the class clipped and loses its
// arrowhead. It reports whether anything was drawn and where the
// visible part's middle is.
func (d *drawing) line(class, attrs string, c category, s spec.SnapID, x1, y1, x2, y2 float64, lands bool, title string) (mx, my float64, ok bool) {
	seg, cut1, cut2, ok := d.clip(x1, y1, x2, y2)
	if !ok {
		return 0, 0, false
	}
	if cut1 || cut2 {
		class += " clipped"
		d.used[noteClipped.id] = true
	}
	end := ""
	if lands && !cut2 {
		d.used[head(d.stroke(c, s))] = true
		end = fmt.Sprintf(` marker-end="url(#%s)"`, head(d.stroke(c, s)))
	}
	fmt.Fprintf(&d.buf, `<line class="%s"%s x1="%s" y1="%s" x2="%s" y2="%s" %s%s><title>%s</title></line>`+"\n",
		class, attrs, num(seg[0]), num(seg[1]), num(seg[2]), num(seg[3]), d.lineAttrs(c, s), end, esc(title))
	return (seg[0] + seg[2]) / 2, (seg[1] + seg[3]) / 2, true
}

// ends is where an arrow from event send to event recv of channel ch is
// drawn: from the send (the left edge of the run if none) to the
// receive, shortened by a dot's radius; without a receive to the run's
// end, halfway to the receiver's line.
func (d *drawing) ends(ch spec.Channel, send, recv int) (x1, y1, x2, y2 float64) {
	x1, y1 = d.xMin(), d.y(ch.From) // never sent: from the left edge
	if send >= 0 {
		x1 = d.x(send)
	}
	y2 = d.y(ch.To)
	if recv >= 0 {
		x2, y2 = shorten(x1, y1, d.x(recv), y2)
	} else {
		x2, y2 = d.xEnd(), (y1+y2)/2
	}
	return x1, y1, x2, y2
}

// shorten moves (x2, y2) towards (x1, y1) by the radius of an event dot,
// so that arrowheads end at the dot's edge.
func shorten(x1, y1, x2, y2 float64) (float64, float64) {
	ddx, ddy := x2-x1, y2-y1
	dd := math.Hypot(ddx, ddy)
	if dd < 20 {
		return x2, y2
	}
	const r = 7
	return x2 - ddx*r/dd, y2 - ddy*r/dd
}

// marker draws marker m, dashed in its snapshot's colour; dotted and
// stopping short of the receiver's line if it was never received.
func (d *drawing) marker(m Marker) {
	x1, y1, x2, y2 := d.ends(m.Chan, m.Send, m.Recv)
	c, what := catMarker, fmt.Sprintf("received at event %d", m.Recv+1)
	if m.Recv < 0 {
		c, what = catLostMark, "NOT RECEIVED by the end of the trace"
	}
	d.line("marker", fmt.Sprintf(` data-snap="%d" data-chan="%s"`, m.Snap, esc(m.Chan.String())), c, m.Snap, x1, y1, x2, y2, m.Recv >= 0,
		fmt.Sprintf("marker of snapshot %d on %s, %s", m.Snap, m.Chan, what))
}

// snapStatus is a message's status for one snapshot.
type snapStatus struct {
	snap spec.SnapID
	st   Status
}

// statuses lists m's statuses for the snapshots drawn, the most serious
// first, then by snapshot.
func (d *drawing) statuses(m Message) []snapStatus {
	var out []snapStatus
	for _, s := range slices.Sorted(maps.Keys(m.Status)) {
		if d.drawn[s] {
			out = append(out, snapStatus{s, m.Status[s]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].st] > rank[out[j].st] })
	return out
}

// message draws application message m from send to receive, styled by
// its most serious status, then one further stroke beside it per other
// snapshot that classifies it, and its label.
func (d *drawing) message(m Message) {
	x1, y1, x2, y2 := d.ends(m.Chan, m.Send, m.Recv)
	sts := d.statuses(m)
	c, s, class := catApp, spec.SnapID(0), "msg app"
	switch {
	case len(sts) > 0:
		c, s = statusCat(sts[0].st), sts[0].snap
		class += " " + string(sts[0].st)
	case m.Recv < 0:
		c = catLost
	}
	attrs := fmt.Sprintf(` data-chan="%s" data-seq="%d" data-snap="%d"`, esc(m.Chan.String()), m.Seq, s)
	mx, my, ok := d.line(class, attrs, c, s, x1, y1, x2, y2, m.Recv >= 0, m.title(d.a))
	if !ok {
		return
	}
	// Further strokes, parallel, one per other snapshot.
	nx, ny := normal(x1, y1, x2, y2)
	for j, ss := range sts[min(1, len(sts)):] {
		off := bandGap * float64(j+1)
		d.line("msg-band "+string(ss.st), fmt.Sprintf(` data-chan="%s" data-seq="%d" data-snap="%d"`, esc(m.Chan.String()), m.Seq, ss.snap),
			statusCat(ss.st), ss.snap, x1+nx*off, y1+ny*off, x2+nx*off, y2+ny*off, false,
			fmt.Sprintf("%s message #%d: %s for snapshot %d", m.Chan, m.Seq, ss.st, ss.snap))
	}
	fmt.Fprintf(&d.buf, `<text class="msg-label" data-chan="%s" data-seq="%d" x="%s" y="%s" text-anchor="middle" font-size="10" fill="%s" stroke="white" stroke-width="3" paint-order="stroke">#%d (%d)</text>`+"\n",
		esc(m.Chan.String()), m.Seq, num(mx), num(my-4), ink, m.Seq, m.Amount)
}

// normal is the unit normal of the segment, pointing up-right of its
// direction, (0, 1) if it has no length.
func normal(x1, y1, x2, y2 float64) (float64, float64) {
	l := math.Hypot(x2-x1, y2-y1)
	if l == 0 {
		return 0, 1
	}
	return (y2 - y1) / l, -(x2 - x1) / l
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
		s += ", NOT RECEIVED by the end of the trace"
	}
	for _, snap := range slices.Sorted(maps.Keys(m.Status)) {
		if note, ok := statusNotes[m.Status[snap]]; ok {
			s += fmt.Sprintf("\nsnapshot %d: %s", snap, strings.ReplaceAll(note, "{state}", a.stateWord(snap)))
		}
	}
	return s
}

// statusNotes say, in a message's title, what its status for a snapshot
// means; {state} stands for the word for the snapshot's state
// (stateWord).
var statusNotes = map[Status]string{
	Orphan:   "ORPHAN, received before the receiver's cut but sent after the sender's",
	Missing:  "MISSING, in flight at the cut but not in the {state} channel state",
	Spurious: "SPURIOUS, in the {state} channel state but not in flight at the cut",
	Recorded: "in flight at the cut, in the {state} channel state",
	Pending:  "in flight at the cut, channel still recording",
}

func (d *drawing) caption() string {
	s := fmt.Sprintf("markerwave space-time diagram: %s, %s, %s", plural(len(d.a.Top.Procs), "process"), plural(len(d.a.Trace.Events), "event"), plural(len(d.a.Cuts), "snapshot"))
	if d.from != 1 || d.to != d.last {
		s += fmt.Sprintf("; columns %d..%d of %d", d.from, d.to, d.last)
	}
	return s + d.drawnNote()
}

// drawnNote says, when not every snapshot is drawn, which are.
func (d *drawing) drawnNote() string {
	switch {
	case len(d.cuts) == 0 && len(d.a.Cuts) > 0:
		return "; no snapshot's cut in these columns"
	case len(d.cuts) != len(d.a.Cuts):
		var ids []string
		for _, k := range d.cuts {
			ids = append(ids, fmt.Sprint(d.a.Cuts[k].Snap))
		}
		return "; drawn: snapshot " + strings.Join(ids, ", ")
	}
	return ""
}

// plural renders "1 process", "2 processes", "3 events".
func plural(n int, what string) string {
	switch {
	case n == 1:
		return "1 " + what
	case strings.HasSuffix(what, "s"):
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
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
	s += c.totalNote()
	if len(c.Aborted) > 0 {
		var by []string
		for _, e := range c.Aborted {
			by = append(by, fmt.Sprintf("%s (%s suspected)", string(e.Proc), string(e.Peer)))
		}
		s += "; aborted by " + strings.Join(by, ", ")
	}
	return s
}

// totalNote is Summary's account of the cut's total: reported, recorded,
// or none (incomplete).
func (c Cut) totalNote() string {
	switch {
	case c.Reported != nil && c.Complete:
		rt, et := c.Reported.Total(), c.Recorded.Total()
		s := fmt.Sprintf(": complete, reported total %d", rt)
		if rt != et {
			return s + fmt.Sprintf(", the events imply %d", et)
		}
		if !c.Recorded.Equal(*c.Reported) {
			return s + ", the events imply the same total from another state"
		}
		return s
	case c.Reported != nil:
		return fmt.Sprintf(": incomplete in the events, reported total %d", c.Reported.Total())
	case c.Complete:
		return fmt.Sprintf(": complete, recorded total %d", c.Recorded.Total())
	}
	return ": incomplete"
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

// svg writes the SVG document: the header and arrowheads, the body, the
// legend.
func (d *drawing) svg(w *bufio.Writer) {
	W, H := d.width(), d.height()
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" id="diagram" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(w, "<title>%s</title>\n", esc(d.caption()))
	w.WriteString(`<defs>`)
	var heads []string
	for id := range d.used {
		if strings.HasPrefix(id, "arrow-") {
			heads = append(heads, id)
		}
	}
	sort.Strings(heads)
	for _, id := range heads {
		fmt.Fprintf(w, `<marker id="%s" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#%s"/></marker>`, id, strings.TrimPrefix(id, "arrow-"))
	}
	w.WriteString("</defs>\n")
	w.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	d.buf.WriteTo(w)
	d.legend(w)
	w.WriteString("</svg>\n")
}

// legend writes the legend: each cut drawn, then each category used,
// its swatch drawn with the category's own stroke (a snapshot-coloured
// category's in the first drawn snapshot's colour).
func (d *drawing) legend(w *bufio.Writer) {
	y := d.legendTop()
	w.WriteString(`<g class="legend">` + "\n")
	item := func(gattrs, attrs, label string) {
		fmt.Fprintf(w, `<g class="legend-entry"%s><line x1="%d" y1="%d" x2="%d" y2="%d" %s/><text x="%d" y="%d">%s</text></g>`+"\n",
			gattrs, left, y, left+40, y, attrs, left+50, y+4, esc(label))
		y += legendLine
	}
	for _, k := range d.cuts {
		c := d.a.Cuts[k]
		fmt.Fprintf(w, `<line class="legend-halo" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%d" opacity="%s"/>`+"\n",
			left, y, left+40, y, SnapColor(k), haloWidth-4, haloOpacity)
		attrs := fmt.Sprintf(`class="legend-cut" data-snap="%d" stroke="%s" stroke-width="4" opacity="0.7"`, c.Snap, SnapColor(k)) + dashAttr(cutDash(k))
		item(fmt.Sprintf(` data-snap="%d"`, c.Snap), attrs, "cut of "+c.Summary())
	}
	var first spec.SnapID
	if len(d.cuts) > 0 {
		first = d.a.Cuts[d.cuts[0]].Snap
	}
	for _, c := range d.legendItems() {
		if c == noteClipped {
			legendClipped(w, c, y)
			y += legendLine
			continue
		}
		attrs := fmt.Sprintf(`class="legend-item" data-cat="%s" stroke="%s" stroke-width="%s"`, c.id, d.stroke(c, first), c.width) + dashAttr(c.dash)
		item("", attrs, c.label)
	}
	w.WriteString("</g>\n")
}

// legendClipped writes the legend entry of category c, noteClipped, at
// height y: a stroke cut short by a bar at the edge of the columns shown.
func legendClipped(w *bufio.Writer, c category, y int) {
	fmt.Fprintf(w, `<g class="legend-entry"><line class="legend-item" data-cat="%s" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text></g>`+"\n",
		c.id, left, y+6, left+40, y-6, ink, left+40, y-9, left+40, y+9, grey, left+50, y+4, esc(c.label))
}

//go:embed zoom.js
var zoomJS string

func (d *drawing) html(w *bufio.Writer) {
	w.WriteString("<!DOCTYPE html>\n")
	w.WriteString(`<html xmlns="http://www.w3.org/1999/xhtml" lang="en">` + "\n<head>\n")
	w.WriteString(`<meta charset="utf-8"/>` + "\n")
	w.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1"/>` + "\n")
	fmt.Fprintf(w, "<title>%s</title>\n", esc(d.caption()))
	fmt.Fprintf(w, "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}.bad{color:%s;font-weight:bold}"+
		"#viewport{overflow:auto;border:1px solid #ccc;height:%dpx;max-height:80vh;touch-action:none}#viewport.zoomable{overflow:hidden;cursor:grab}#viewport:focus{outline:2px solid #1f77b4}"+
		".legend-entry{cursor:pointer}", red, d.height()+2)
	for _, k := range d.cuts {
		s := d.a.Cuts[k].Snap
		fmt.Fprintf(w, `svg[data-focus="%d"] [data-snap]:not([data-snap="%d"]){opacity:.12}`, s, s)
	}
	w.WriteString("</style>\n</head>\n<body>\n")
	fmt.Fprintf(w, "<h1>%s</h1>\n", esc(d.caption()))
	w.WriteString("<p>Time runs left to right in columns of causal depth (Lamport time): events in one column are concurrent. Hover over events, arrows and cuts for details; click a cut in the legend to highlight its snapshot.</p>\n")
	w.WriteString(`<p class="controls"><button type="button" data-zoom="in">zoom in (+)</button> <button type="button" data-zoom="out">zoom out (-)</button> <button type="button" data-zoom="fit">fit (f)</button> <button type="button" data-zoom="reset">1:1 (0)</button> drag or arrow keys to pan, wheel to zoom</p>` + "\n")
	w.WriteString(`<div id="viewport" tabindex="0">` + "\n")
	d.svg(w)
	w.WriteString("</div>\n<h2>Snapshots</h2>\n<table>\n<tr><th>snapshot</th><th>recording points</th><th>orphans</th><th>in flight, recorded</th><th>missing</th><th>spurious</th></tr>\n")
	for _, k := range d.cuts {
		d.a.htmlSnapshotRow(w, d.a.Cuts[k])
	}
	w.WriteString("</table>\n")
	if len(d.a.Problems) > 0 {
		w.WriteString("<h2>Problems</h2>\n<ul>\n")
		for _, p := range d.a.Problems {
			fmt.Fprintf(w, `<li class="bad">%s</li>`+"\n", esc(p))
		}
		w.WriteString("</ul>\n")
	}
	w.WriteString("<script>//<![CDATA[\n")
	w.WriteString(zoomJS)
	w.WriteString("//]]></script>\n</body>\n</html>\n")
}

// htmlSnapshotRow writes cut c's row of the snapshot table: its summary,
// recording points, and messages by status.
func (a *Analysis) htmlSnapshotRow(w *bufio.Writer, c Cut) {
	var recs []string
	for _, p := range a.Top.Procs {
		if r := c.Rec[p]; r >= 0 {
			recs = append(recs, fmt.Sprintf("%s@%d", string(p), r+1))
		} else {
			recs = append(recs, string(p)+"@-")
		}
	}
	byStatus := a.messagesByStatus(c)
	cell := func(st Status) string { return statusCell(st, byStatus[st]) }
	fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td>%s%s%s%s</tr>\n", esc(c.Summary()), esc(strings.Join(recs, " ")), cell(Orphan), cell(Recorded), cell(Missing), cell(Spurious))
}

// messagesByStatus names (channel#seq) the messages of each status for
// cut c's snapshot, the spurious ones from the cut's report.
func (a *Analysis) messagesByStatus(c Cut) map[Status][]string {
	byStatus := map[Status][]string{}
	for _, m := range a.Messages {
		if st := m.Status[c.Snap]; st != "" && st != Spurious {
			byStatus[st] = append(byStatus[st], fmt.Sprintf("%s#%d", m.Chan, m.Seq))
		}
	}
	for _, m := range c.Spurious {
		byStatus[Spurious] = append(byStatus[Spurious], fmt.Sprintf("%s#%d", m.Chan, m.Msg.Seq))
	}
	return byStatus
}

// statusCell is the snapshot table's cell of the messages named of status
// st: "none", or their names, marked bad for a fault.
func statusCell(st Status, names []string) string {
	if len(names) == 0 {
		return "<td>none</td>"
	}
	cls := ""
	if st.Fault() {
		cls = ` class="bad"`
	}
	return fmt.Sprintf("<td%s>%s</td>", cls, esc(strings.Join(names, ", ")))
}
