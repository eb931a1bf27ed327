package export

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// A sink trace's diagram (spec.SinkTrace, tla/BarrierSink.tla seen from
// the sink): two lanes, the sink's and the store's, and one column per
// step in the trace's order. The sink's lane holds what the sink decides
// or learns (PreCommit, the sink's part of RecvBarrierSV; Complete,
// CompleteCkpt; ReportLoss, ReportLossV), the store's what happens to a
// transaction in the store (Commit, Abort, StoreAbort). A Restore
// (RestoreSV) is a divider across both lanes, the settling steps it owes
// after it shaded. A rejected trace's divergence, as the audit finds it
// (SinkMark), is ringed in red.

// SinkMark is where an audit of a sink trace diverges, for the diagram
// to mark: the step (from 1; 0 for the end of the trace, a drained run
// leaving a complete checkpoint unsettled), the property it names and
// why.
type SinkMark struct {
	Step     int
	Property string
	Detail   string
}

// sinkLaneOf is the lane each sink trace action is drawn on: 0 the
// sink's, 1 the store's; the Restore spans both.
var sinkLaneOf = map[string]int{
	spec.SinkPreCommit: 0, spec.SinkComplete: 0, spec.SinkReportLoss: 0, spec.SinkRestore: 0,
	spec.SinkCommit: 1, spec.SinkAbort: 1, spec.SinkStoreAbort: 1,
}

// sinkKinds are the steps' legend entries and colours, in the legend's
// order.
var sinkKinds = []struct{ action, colour, label string }{
	{spec.SinkPreCommit, palette[0], "PreCommit: the sink pre-commits its open transaction for a checkpoint (durable, invisible), with its records"},
	{spec.SinkComplete, palette[2], "Complete: the checkpoint is complete (CompleteCkpt)"},
	{spec.SinkCommit, palette[1], "Commit: the transaction's records become visible in the store"},
	{spec.SinkAbort, grey, "Abort: the restore drops the transaction (RestoreSV's Resolve)"},
	{spec.SinkStoreAbort, palette[3], "StoreAbort: the store aborted the transaction on its own (a timeout, an administrator)"},
	{spec.SinkReportLoss, red, "ReportLoss: the sink reports a complete checkpoint's transaction lost (ReportLossV)"},
}

// Sink diagram geometry: wider columns than the other diagrams', for the
// steps' slanted labels above the sink's lane and below the store's.
const (
	sinkDx     = 64
	sinkTop    = 150 // the sink's lane: room for the labels above it
	sinkLaneDy = 90
)

// sinkDrawing is a sink trace's diagram being drawn.
type sinkDrawing struct {
	tr     *spec.SinkTrace
	mark   *SinkMark
	settle []bool // each step: a settling step of the restore before it
	buf    strings.Builder
}

// SinkDiagram writes a diagram of sink trace tr in format f: the sink's
// and the store's lanes, a column per step labelled with its action, its
// transaction (and a PreCommit's checkpoint and records count) or its
// checkpoint, each restore a divider with the steps it settles shaded,
// and mark's step, if mark is not nil, ringed in red. It returns the
// diagram's extent and notes for people.
func SinkDiagram(tr *spec.SinkTrace, mark *SinkMark, w io.Writer, f Format) (Extent, []string, error) {
	d := &sinkDrawing{tr: tr, mark: mark, settle: settlingSteps(tr.Events)}
	d.body()
	n := len(tr.Events)
	ext := Extent{From: 1, To: n, Columns: n, Width: d.width(), Height: d.height(), PerStep: true}
	if err := writeDiagram(w, f, d); err != nil {
		return Extent{}, nil, err
	}
	return ext, d.summary(), nil
}

// settlingSteps marks the steps that settle a restore's transactions:
// the Commit, Abort and ReportLoss steps right after a Restore (the
// audit checks they are the ones RestoreSV owes; the diagram shows them).
func settlingSteps(evs []spec.SinkEvent) []bool {
	out := make([]bool, len(evs))
	in := false
	for i, ev := range evs {
		switch ev.Action {
		case spec.SinkRestore:
			in = true
		case spec.SinkCommit, spec.SinkAbort, spec.SinkReportLoss:
			out[i] = in
		default:
			in = false
		}
	}
	return out
}

// SinkStepLabel is the label a sink trace step is drawn with: its
// action, its transaction ("t4") or checkpoint, a PreCommit's checkpoint
// and records count.
func SinkStepLabel(ev spec.SinkEvent) string {
	switch {
	case ev.Action == spec.SinkPreCommit:
		return fmt.Sprintf("PreCommit t%d ckpt %d, %s", ev.Txn.Txn, ev.Ckpt, plural(len(ev.Txn.Recs), "record"))
	case ev.Action == spec.SinkRestore:
		return fmt.Sprintf("Restore, ckpt %d next", ev.Ckpt)
	case ev.Txn != nil:
		return fmt.Sprintf("%s t%d", ev.Action, ev.Txn.Txn)
	}
	return fmt.Sprintf("%s ckpt %d", ev.Action, ev.Ckpt)
}

func (d *sinkDrawing) x(col int) float64  { return float64(left + col*sinkDx) }
func (d *sinkDrawing) y(lane int) float64 { return float64(sinkTop + lane*sinkLaneDy) }

func (d *sinkDrawing) width() int {
	longest := len(d.caption())
	for _, k := range sinkKinds {
		longest = max(longest, len(k.label))
	}
	return max(int(d.x(len(d.tr.Events)+2)), left+50+7*longest+20)
}

func (d *sinkDrawing) legendTop() int { return int(d.y(1)) + 130 }

func (d *sinkDrawing) height() int {
	return d.legendTop() + (len(sinkKinds)+2)*legendLine + 10
}

func (d *sinkDrawing) caption() string {
	h := d.tr.Header
	return fmt.Sprintf("two-phase-commit sink, %s (max_ckpt %d, max_restores %d, max_aborts %d)",
		plural(len(d.tr.Events), "step"), h.MaxCkpt, h.MaxRestores, h.MaxAborts)
}

// body draws the lanes, the restores' dividers and shading, the steps
// and the divergence's mark.
func (d *sinkDrawing) body() {
	end := d.x(len(d.tr.Events) + 1)
	for lane, name := range []string{"sink", "store"} {
		y := d.y(lane)
		fmt.Fprintf(&d.buf, `<line class="proc-line" data-proc="%s" x1="%d" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"/>`+"\n", name, left, num(y), num(end), num(y), ink)
		fmt.Fprintf(&d.buf, `<text class="proc-label" x="%d" y="%s" text-anchor="end" font-weight="bold">%s</text>`+"\n", left-10, num(y+4), name)
	}
	for i, ev := range d.tr.Events {
		if d.settle[i] {
			d.shadeSettling(i)
		}
		if ev.Action == spec.SinkRestore {
			d.divider(i, ev)
			continue
		}
		d.step(i, ev)
	}
	d.divergence()
}

// shadeSettling shades settling step i's column across both lanes.
func (d *sinkDrawing) shadeSettling(i int) {
	x := d.x(i + 1)
	fmt.Fprintf(&d.buf, `<rect class="settle" data-index="%d" x="%s" y="%s" width="%d" height="%d" fill="%s" opacity="0.12"><title>step %d settles a transaction for the restore before it (RestoreSV's Resolve)</title></rect>`+"\n",
		i+1, num(x-sinkDx/2), num(d.y(0)-20), sinkDx, sinkLaneDy+40, grey, i+1)
}

// divider draws Restore step i: a dashed line across both lanes.
func (d *sinkDrawing) divider(i int, ev spec.SinkEvent) {
	x := d.x(i + 1)
	fmt.Fprintf(&d.buf, `<line class="event restore" data-index="%d" data-action="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="4 2"><title>%s</title></line>`+"\n",
		i+1, ev.Action, num(x), num(d.y(0)-25), num(x), num(d.y(1)+25), ink, esc(d.title(i, ev)))
	d.label(i, ev, 0)
}

// step draws step i as a dot on its lane, in its kind's colour, with its
// label.
func (d *sinkDrawing) step(i int, ev spec.SinkEvent) {
	lane := sinkLaneOf[ev.Action]
	fmt.Fprintf(&d.buf, `<circle class="event" data-index="%d" data-action="%s" cx="%s" cy="%s" r="6" fill="%s" stroke="%s" stroke-width="1.5"><title>%s</title></circle>`+"\n",
		i+1, ev.Action, num(d.x(i+1)), num(d.y(lane)), sinkColour(ev.Action), ink, esc(d.title(i, ev)))
	d.label(i, ev, lane)
}

// label writes step i's label, slanted: above the sink's lane, below the
// store's.
func (d *sinkDrawing) label(i int, ev spec.SinkEvent, lane int) {
	x, y, angle := d.x(i+1), d.y(0)-14, -40
	if lane == 1 {
		y, angle = d.y(1)+18, 40
	}
	fmt.Fprintf(&d.buf, `<text class="step-label" data-index="%d" x="%s" y="%s" font-size="11" transform="rotate(%d %s %s)">%s</text>`+"\n",
		i+1, num(x), num(y), angle, num(x), num(y), esc(SinkStepLabel(ev)))
}

// title is step i's hover text: its number, its trace line, what it
// names.
func (d *sinkDrawing) title(i int, ev spec.SinkEvent) string {
	s := fmt.Sprintf("step %d (trace line %d): %s", i+1, at(d.tr.Lines, i), SinkStepLabel(ev))
	if ev.Txn != nil {
		s += fmt.Sprintf("\ntransaction %d of checkpoint %d, records %s", ev.Txn.Txn, ev.Txn.Ckpt, sinkRecs(ev.Txn.Recs))
	}
	if d.settle[i] {
		s += "\nsettled by the restore before it"
	}
	return s
}

// divergence rings the marked step in red, or draws a red line at the
// end of the trace for a divergence there.
func (d *sinkDrawing) divergence() {
	m := d.mark
	if m == nil {
		return
	}
	why := fmt.Sprintf("the audit diverges here: %s: %s", m.Property, m.Detail)
	if m.Step < 1 || m.Step > len(d.tr.Events) {
		x := d.x(len(d.tr.Events) + 1)
		fmt.Fprintf(&d.buf, `<line class="divergence" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="3"><title>%s (at the end of the trace)</title></line>`+"\n",
			num(x), num(d.y(0)-25), num(x), num(d.y(1)+25), red, esc(why))
		d.markText(x)
		return
	}
	x, y := d.x(m.Step), d.y(sinkLaneOf[d.tr.Events[m.Step-1].Action])
	fmt.Fprintf(&d.buf, `<circle class="divergence" data-index="%d" cx="%s" cy="%s" r="13" fill="none" stroke="%s" stroke-width="3"><title>%s</title></circle>`+"\n",
		m.Step, num(x), num(y), red, esc(why))
	d.markText(x)
}

// markText labels the divergence, between the lanes at x.
func (d *sinkDrawing) markText(x float64) {
	fmt.Fprintf(&d.buf, `<text class="divergence-label" x="%s" y="%s" text-anchor="start" font-size="11" fill="%s">diverges: %s</text>`+"\n",
		num(x+8), num((d.y(0)+d.y(1))/2+4), red, esc(d.mark.Property))
}

// sinkColour is action's colour.
func sinkColour(action string) string {
	for _, k := range sinkKinds {
		if k.action == action {
			return k.colour
		}
	}
	return ink
}

// sinkRecs renders records as S1#1, S1#2.
func sinkRecs(rs []spec.BarrierRecord) string {
	if len(rs) == 0 {
		return "none listed"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s#%d", r.Src, r.I)
	}
	return strings.Join(parts, ", ")
}

// at is lines[i], 0 if there is none.
func at(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}

func (d *sinkDrawing) svg(w *bufio.Writer) {
	W, H := d.width(), d.height()
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" id="diagram" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(w, "<title>%s</title>\n", esc(d.caption()))
	w.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	w.WriteString(d.buf.String())
	d.legend(w)
	w.WriteString("</svg>\n")
}

// legend lists every kind of step, the restore's divider and shading,
// and the divergence's ring.
func (d *sinkDrawing) legend(w *bufio.Writer) {
	y := d.legendTop()
	w.WriteString(`<g class="legend">` + "\n")
	for _, k := range sinkKinds {
		fmt.Fprintf(w, `<g class="legend-entry"><circle cx="%d" cy="%d" r="6" fill="%s" stroke="%s" stroke-width="1.5"/><text x="%d" y="%d">%s</text></g>`+"\n", left+20, y, k.colour, ink, left+50, y+4, esc(k.label))
		y += legendLine
	}
	fmt.Fprintf(w, `<g class="legend-entry"><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="4 2"/><rect x="%d" y="%d" width="30" height="16" fill="%s" opacity="0.12"/><text x="%d" y="%d">Restore (RestoreSV): a divider; the steps that settle its transactions after it, shaded</text></g>`+"\n",
		left+5, y-8, left+5, y+8, ink, left+10, y-8, grey, left+50, y+4)
	y += legendLine
	fmt.Fprintf(w, `<g class="legend-entry"><circle cx="%d" cy="%d" r="8" fill="none" stroke="%s" stroke-width="3"/><text x="%d" y="%d">where the audit against tla/BarrierSink.tla diverges (a rejected trace)</text></g>`+"\n", left+20, y, red, left+50, y+4)
	w.WriteString("</g>\n")
}

func (d *sinkDrawing) html(w *bufio.Writer) {
	writePage(w, d.caption(), "One column per step, in the trace's order. Hover over a step for its transaction and records.", d.height(), d.svg, d.summary())
}

// summary is what the diagram shows, in words: the steps of each kind,
// the restores, and the divergence if marked.
func (d *sinkDrawing) summary() []string {
	count := map[string]int{}
	for _, ev := range d.tr.Events {
		count[ev.Action]++
	}
	var kinds []string
	for _, k := range append(sinkKinds, struct{ action, colour, label string }{action: spec.SinkRestore}) {
		kinds = append(kinds, fmt.Sprintf("%d %s", count[k.action], k.action))
	}
	out := []string{"steps: " + strings.Join(kinds, ", ")}
	if m := d.mark; m != nil {
		where := "at the end of the trace"
		if m.Step >= 1 && m.Step <= len(d.tr.Events) {
			where = fmt.Sprintf("at step %d (trace line %d), %s, ringed in red", m.Step, at(d.tr.Lines, m.Step-1), SinkStepLabel(d.tr.Events[m.Step-1]))
		}
		out = append(out, fmt.Sprintf("the audit diverges %s: %s", where, m.Property))
	}
	return out
}
