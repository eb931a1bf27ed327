package export

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// The categories of a barrier trace's diagram, beside catApp (records,
// here) and catMarker (barriers).
var (
	catRecord    = category{"record", "record, emit or hand-over to the step that takes it, labelled source#number", ink, "1.5", ""}
	catBarrier   = category{"barrier", "barrier, dashed", "", "1.5", "6 4"}
	catLogged    = category{"logged", "record logged by its receiver as channel state (taken after it recorded, before the input's barrier): thick", "", "3.5", ""}
	catOvertaken = category{"overtaken", "record the sender's unaligned barrier overtook, persisted as channel state: thick, dashed", "", "3.5", "5 2"}
	catBlocked   = category{"blocked", "input blocked by alignment: from its barrier's arrival until the node records (shaded)", "", "10", ""}
	catRestore   = category{"restore", "restore: every node restarts from the snapshot, each edge holding its channel state", grey, "2", "4 2"}
	catLeftover  = category{"pending", "record or barrier not taken by the end of the run or before a restore: dotted, stops short of the receiver's line", grey, "1.5", "2 3"}

	barrierCategories = []category{catRecord, catBarrier, catLogged, catOvertaken, catBlocked, catRestore, catLeftover}
)

// barrierColor is the snapshot's colour in a barrier diagram (one
// snapshot per run).
var barrierColor = SnapColor(0)

// bItem is an item in flight on an edge as the diagram replays the
// trace: where it was put on the edge, what it is, and whether it is
// channel state (overtaken) when taken.
type bItem struct {
	col       int
	barrier   bool
	rec       spec.BarrierRecord
	overtaken bool
	restored  bool
}

// barrierDrawing is a barrier trace's diagram being drawn.
type barrierDrawing struct {
	tr    *spec.BarrierTrace
	col   []int // each event's column: its Lamport time
	last  int
	lane  map[string]int
	buf   strings.Builder
	used  map[string]bool
	notes []string // what the diagram could not draw, for people
}

// BarrierDiagram writes a space-time diagram of barrier trace tr in
// format f: a lane per node, steps as dots in columns of causal depth
// (Lamport time: one more than the node's previous step and than the
// step that put the item taken on its edge), records and barriers as
// arrows from the step that put them on an edge to the step that took
// them (an unaligned barrier, put at the head of its edge's queue,
// crosses the records it overtakes), the records logged or overtaken as
// channel state drawn thick, each aligned input blocked from its
// barrier's arrival until its node recorded shaded, the cut through
// every node's recording step, and each restore as a line across the
// lanes. It returns the diagram's extent and notes for people.
func BarrierDiagram(tr *spec.BarrierTrace, w io.Writer, f Format) (Extent, []string, error) {
	d := &barrierDrawing{tr: tr, lane: map[string]int{}, used: map[string]bool{}}
	for i, n := range tr.Graph().Nodes {
		d.lane[n.Name] = i
	}
	d.body()
	ext := Extent{From: 1, To: d.last, Columns: d.last, Width: d.width(), Height: d.height()}
	if err := writeDiagram(w, f, d); err != nil {
		return Extent{}, nil, err
	}
	return ext, d.summary(), nil
}

func (d *barrierDrawing) x(col int) float64 { return float64(left + col*dx) }
func (d *barrierDrawing) y(node string) float64 {
	return float64(top + d.lane[node]*dy)
}

func (d *barrierDrawing) width() int {
	longest := len(d.caption())
	for _, c := range barrierCategories {
		longest = max(longest, len(c.label))
	}
	return max(int(d.x(d.last+1)), left+50+7*longest+20)
}

func (d *barrierDrawing) legendTop() int { return top + (len(d.tr.Graph().Nodes)-1)*dy + 45 }

func (d *barrierDrawing) height() int {
	n := 1 // the cut
	for _, c := range barrierCategories {
		if d.used[c.id] {
			n++
		}
	}
	return d.legendTop() + n*legendLine + 10
}

func (d *barrierDrawing) caption() string {
	h := d.tr.Header
	return fmt.Sprintf("%s barriers on %s and %s, %s", h.Graph.Mode, plural(len(h.Graph.Nodes), "node"),
		plural(len(h.Graph.Edges), "edge"), plural(len(d.tr.Events), "step"))
}

// attrs are the stroke attributes of category c, noting it used.
func (d *barrierDrawing) attrs(c category) string {
	d.used[c.id] = true
	stroke := c.stroke
	if stroke == "" {
		stroke = barrierColor
	}
	return fmt.Sprintf(`data-cat="%s" stroke="%s" stroke-width="%s"`, c.id, stroke, c.width) + dashAttr(c.dash)
}

// arrow draws an item's arrow from column c1 on lane a to the step at
// column c2 on lane b (c2 0: never taken, it stops short at column
// stop, halfway to b).
func (d *barrierDrawing) arrow(w *strings.Builder, class string, c category, a string, c1 int, b string, c2, stop int, label, title string) {
	x1, y1 := d.x(c1), d.y(a)
	x2, y2 := d.x(c2), d.y(b)
	if c2 == 0 {
		x2, y2 = d.x(stop), (y1+y2)/2
		c = catLeftover
	} else {
		x2, y2 = shorten(x1, y1, x2, y2)
	}
	col := barrierColor
	if c.stroke != "" {
		col = c.stroke
	}
	d.used[head(col)] = true
	fmt.Fprintf(w, `<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s" %s marker-end="url(#%s)"><title>%s</title></line>`+"\n",
		class, num(x1), num(y1), num(x2), num(y2), d.attrs(c), head(col), esc(title))
	if label != "" {
		fmt.Fprintf(w, `<text class="msg-label" x="%s" y="%s" font-size="9" fill="%s">%s</text>`+"\n", num((x1+x2)/2+3), num((y1+y2)/2-3), ink, esc(label))
	}
}

// barrierReplay is the state of body's replay of a barrier trace: the
// queues of items in flight on each edge, where each node's last step
// is, and what the diagram draws, gathered step by step.
type barrierReplay struct {
	q         map[string][]bItem
	nodeLast  map[string]int
	recorded  map[string]int               // node -> its recording step's column
	barrierAt map[string]int               // edge -> its barrier's arrival column
	ends      map[string]spec.BarrierEvent // edge key -> its ends
	floor     int                          // a restore's column: every later step is after it

	arrows, shades, restores []string
}

// body replays the trace's queues to place every step and arrow, then
// draws the lanes, the shading, the cut, the arrows and the steps.
func (d *barrierDrawing) body() {
	d.col = make([]int, len(d.tr.Events))
	r := &barrierReplay{q: map[string][]bItem{}, nodeLast: map[string]int{}, recorded: map[string]int{},
		barrierAt: map[string]int{}, ends: map[string]spec.BarrierEvent{}}
	for _, e := range d.tr.Header.Graph.Edges {
		r.ends[spec.BarrierEdgeKey(e.From, e.To)] = spec.BarrierEvent{From: e.From, To: e.To}
	}
	for i := range d.tr.Events {
		d.place(r, i)
	}
	r.arrows = append(r.arrows, d.pending(r, d.last+1)...)
	d.lanes()
	for _, s := range r.shades {
		d.buf.WriteString(s)
	}
	d.cut(r.recorded)
	for _, s := range append(r.restores, r.arrows...) {
		d.buf.WriteString(s)
	}
	d.steps()
}

// place puts step i in its column, replays what it does to the queues,
// and gathers what it draws: the arrow of the item it took, the restore
// line, the blocked inputs' shading.
func (d *barrierDrawing) place(r *barrierReplay, i int) {
	ev := d.tr.Events[i]
	c := max(r.nodeLast[ev.Node], r.floor) + 1
	taken := d.takeHead(r, i)
	if taken != nil {
		c = max(c, taken.col+1)
	}
	if ev.Action == spec.BarrierRestore {
		c = d.last + 1
		for _, n := range d.tr.Graph().Nodes {
			r.nodeLast[n.Name] = c
		}
		r.floor = c
	}
	d.col[i] = c
	d.last = max(d.last, c)
	r.nodeLast[ev.Node] = c
	d.replay(r, i, c)
	if taken != nil {
		r.arrows = append(r.arrows, d.itemArrow(*taken, ev, c, 0))
	}
	if ev.Action == spec.BarrierTimeoutOut {
		overtakeQueued(r.q, ev) // recorded before: its cut stays there
		return
	}
	if ev.Part != nil {
		r.recorded[ev.Node] = c
		d.sendBarriers(r.q, ev, c)
		r.shades = append(r.shades, d.blocked(ev.Node, r.barrierAt, c, ev)...)
	}
}

// takeHead takes the item Process or RecvBarrier step i takes off the
// head of its edge's queue, nil for another step or if the head is not
// what the step takes (noted).
func (d *barrierDrawing) takeHead(r *barrierReplay, i int) *bItem {
	ev := d.tr.Events[i]
	if ev.Action != spec.BarrierProcess && ev.Action != spec.BarrierRecvBarrier {
		return nil
	}
	key := spec.BarrierEdgeKey(ev.From, ev.To)
	if len(r.q[key]) == 0 || r.q[key][0].barrier != (ev.Action == spec.BarrierRecvBarrier) {
		d.notes = append(d.notes, fmt.Sprintf("step %d (%s %s): not the head of its edge's queue as the trace tells it; drawn without its arrow", i+1, ev.Action, key))
		return nil
	}
	it := r.q[key][0]
	r.q[key] = r.q[key][1:]
	return &it
}

// replay does to the queues what step i, at column c, puts on them: an
// emitted record, a processed record sent on, a barrier's arrival, or a
// restore (the items in flight rolled back, each edge its channel state).
func (d *barrierDrawing) replay(r *barrierReplay, i, c int) {
	ev, evs := d.tr.Events[i], d.tr.Events
	key := spec.BarrierEdgeKey(ev.From, ev.To)
	switch ev.Action {
	case spec.BarrierEmit:
		r.q[key] = append(r.q[key], bItem{col: c, rec: *ev.Rec})
	case spec.BarrierProcess:
		if j := d.sentOn(i); j >= 0 {
			out := spec.BarrierEdgeKey(evs[j].From, evs[j].To)
			r.q[out] = append(r.q[out], bItem{col: c, rec: *evs[j].Rec})
		}
	case spec.BarrierRecvBarrier:
		r.barrierAt[key] = c
	case spec.BarrierRestore:
		g := d.tr.Graph()
		r.restores = append(r.restores, fmt.Sprintf(`<line class="restore" x1="%s" y1="%d" x2="%s" y2="%s" %s><title>restore: every node restarts from the snapshot</title></line>`+"\n",
			num(d.x(c)), top-20, num(d.x(c)), num(d.y(g.Nodes[len(g.Nodes)-1].Name)+20), d.attrs(catRestore)))
		r.arrows = append(r.arrows, d.pending(r, c)...) // rolled back
		r.q = d.restoredQueues(c)
	}
}

// pending draws the items still in flight, stopping short at column
// stop: at the end of the run, or rolled back by a restore.
func (d *barrierDrawing) pending(r *barrierReplay, stop int) []string {
	var arrows []string
	for _, key := range slices.Sorted(maps.Keys(r.q)) {
		for _, it := range r.q[key] {
			arrows = append(arrows, d.itemArrow(it, r.ends[key], 0, stop))
		}
	}
	return arrows
}

// lanes draws each node's lane and its label.
func (d *barrierDrawing) lanes() {
	for _, n := range d.tr.Graph().Nodes {
		y := d.y(n.Name)
		fmt.Fprintf(&d.buf, `<line class="proc-line" data-proc="%s" x1="%d" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"><title>%s %s</title></line>`+"\n",
			esc(n.Name), left, num(y), num(d.x(d.last)+dx/2), num(y), ink, n.Kind, esc(n.Name))
		fmt.Fprintf(&d.buf, `<text class="proc-label" x="%d" y="%s" text-anchor="end" font-weight="bold">%s</text>`+"\n", left-10, num(y+4), esc(n.Name))
	}
}

// steps draws every step but the restores (drawn as lines) as a dot in
// its column, a barrier step's hollow.
func (d *barrierDrawing) steps() {
	for i, ev := range d.tr.Events {
		if ev.Action == spec.BarrierRestore {
			continue
		}
		if isSwitch(ev) {
			d.timeoutMark(i, ev)
			continue
		}
		fill, stroke := ink, ink
		if ev.Action == spec.BarrierInject || ev.Action == spec.BarrierRecvBarrier {
			fill, stroke = "white", barrierColor
		}
		fmt.Fprintf(&d.buf, `<circle class="event" data-index="%d" data-col="%d" data-proc="%s" data-action="%s" cx="%s" cy="%s" r="5" fill="%s" stroke="%s" stroke-width="2"><title>%s</title></circle>`+"\n",
			i+1, d.col[i], esc(ev.Node), ev.Action, num(d.x(d.col[i])), num(d.y(ev.Node)), fill, stroke, esc(stepTitle(i, ev, d.col[i])))
	}
}

// isSwitch reports whether ev is a switch: a Timeout, or a TimeoutOut
// (the barrier, queued behind a full output buffer, overtakes it).
func isSwitch(ev spec.BarrierEvent) bool {
	return ev.Action == spec.BarrierTimeout || ev.Action == spec.BarrierTimeoutOut
}

// timeoutMark draws Timeout or TimeoutOut step i: a hollow diamond where the node's
// alignment timed out and it switched to unaligned, labelled "switch".
func (d *barrierDrawing) timeoutMark(i int, ev spec.BarrierEvent) {
	x, y := d.x(d.col[i]), d.y(ev.Node)
	fmt.Fprintf(&d.buf, `<polygon class="event timeout" data-index="%d" data-col="%d" data-proc="%s" data-action="%s" points="%s,%s %s,%s %s,%s %s,%s" fill="white" stroke="%s" stroke-width="2"><title>%s</title></polygon>`+"\n",
		i+1, d.col[i], esc(ev.Node), ev.Action, num(x), num(y-7), num(x+7), num(y), num(x), num(y+7), num(x-7), num(y), barrierColor, esc(stepTitle(i, ev, d.col[i])))
	fmt.Fprintf(&d.buf, `<text class="switch-label" x="%s" y="%s" text-anchor="middle" font-size="11" fill="%s">switch</text>`+"\n", num(x), num(y-11), barrierColor)
}

// sentOn is the step that takes the record Process step i sent on, -1
// if none does (before a restore): the trace does not name the output a
// Process sends on, so the diagram finds it where it is taken, the
// first later Process off an output of the step's node of a record with
// the same source and number.
func (d *barrierDrawing) sentOn(i int) int {
	ev := d.tr.Events[i]
	for j := i + 1; j < len(d.tr.Events); j++ {
		later := d.tr.Events[j]
		if later.Action == spec.BarrierRestore {
			break
		}
		if later.Action == spec.BarrierProcess && later.From == ev.Node && later.Rec.Src == ev.Rec.Src && later.Rec.I == ev.Rec.I {
			return j
		}
	}
	return -1
}

// sendBarriers puts the barriers of the node that recorded in step ev
// on its outputs: behind the queued records (aligned, chandy-lamport),
// or at the head, the records it overtook marked (unaligned).
func (d *barrierDrawing) sendBarriers(q map[string][]bItem, ev spec.BarrierEvent, c int) {
	for _, e := range d.tr.Graph().Out(ev.Node) {
		key := e.Key()
		if !overtakes(d.tr.Header.Graph.Mode, ev) {
			q[key] = append(q[key], bItem{col: c, barrier: true})
			continue
		}
		for j := range q[key] {
			q[key][j].overtaken = len(ev.Part.Overtaken[key]) > 0
		}
		q[key] = append([]bItem{{col: c, barrier: true}}, q[key]...)
	}
}

// overtakeQueued moves the barrier of the node of TimeoutOut step ev
// ahead of the records queued before it on each output its part says it
// overtook records on, and marks those overtaken (persisted).
func overtakeQueued(q map[string][]bItem, ev spec.BarrierEvent) {
	for key := range ev.Part.Overtaken {
		at := slices.IndexFunc(q[key], func(it bItem) bool { return it.barrier })
		if at <= 0 {
			continue
		}
		for j := range at {
			q[key][j].overtaken = true
		}
		q[key] = slices.Concat([]bItem{q[key][at]}, q[key][:at], q[key][at+1:])
	}
}

// overtakes reports whether the barriers a node sends in step ev, in
// mode, overtake its queued output: unaligned, or a Timeout (the
// adaptive mode's switch, tla/BarrierAdaptive.tla).
func overtakes(mode string, ev spec.BarrierEvent) bool {
	return mode == spec.ModeUnaligned || ev.Action == spec.BarrierTimeout
}

// restoredQueues are the queues after a restore at column c: each
// edge's channel state (the records logged on it, then those overtaken
// on it), put there by the restore.
func (d *barrierDrawing) restoredQueues(c int) map[string][]bItem {
	q := map[string][]bItem{}
	part, logged := d.recordedBeforeRestore()
	for _, e := range d.tr.Graph().Edges {
		from, key := e.From, e.Key()
		var over []spec.BarrierRecord
		if p := part[from]; p != nil {
			over = p.Overtaken[key]
		}
		for _, r := range append(logged[key], over...) {
			q[key] = append(q[key], bItem{col: c, rec: r, restored: true})
		}
	}
	return q
}

// recordedBeforeRestore is what the run recorded up to its first restore:
// each node's part (its first), and the records logged on each edge.
func (d *barrierDrawing) recordedBeforeRestore() (map[string]*spec.BarrierPart, map[string][]spec.BarrierRecord) {
	part := map[string]*spec.BarrierPart{}
	logged := map[string][]spec.BarrierRecord{}
	for _, ev := range d.tr.Events {
		if ev.Part != nil && (part[ev.Node] == nil || ev.Action == spec.BarrierTimeoutOut) {
			part[ev.Node] = ev.Part // a TimeoutOut's is the node's part again, with what it overtook
		}
		if ev.Logged {
			key := spec.BarrierEdgeKey(ev.From, ev.To)
			logged[key] = append(logged[key], *ev.Rec)
		}
		if ev.Action == spec.BarrierRestore {
			break
		}
	}
	return part, logged
}

// itemArrow is the arrow of item it, taken by step ev at column c (0:
// never taken: it stops at column stop, the end of the run or the
// restore that rolled it back).
func (d *barrierDrawing) itemArrow(it bItem, ev spec.BarrierEvent, c, stop int) string {
	key := spec.BarrierEdgeKey(ev.From, ev.To)
	var b strings.Builder
	if it.barrier {
		d.arrow(&b, "marker", catBarrier, ev.From, it.col, ev.To, c, stop, "", "barrier on "+key)
	} else {
		cat, why := catRecord, ""
		switch {
		case it.overtaken:
			cat, why = catOvertaken, ": overtaken by the barrier, persisted as channel state"
		case ev.Logged:
			cat, why = catLogged, ": logged by the receiver as channel state"
		}
		if it.restored {
			why += " (put back by the restore)"
		}
		label := fmt.Sprintf("%s#%d", it.rec.Src, it.rec.I)
		if it.rec.Hops > 0 {
			label += fmt.Sprintf("·%d", it.rec.Hops)
		}
		d.arrow(&b, "msg", cat, ev.From, it.col, ev.To, c, stop, label, fmt.Sprintf("record <<%s, %d>> (hops %d) on %s, number %d there%s", it.rec.Src, it.rec.I, it.rec.Hops, key, it.rec.Seq, why))
	}
	return b.String()
}

// blocked shades, for an aligning node (aligned, adaptive) recording at
// column c, each input whose barrier arrived before: blocked from then
// until c, where alignment ended (for a Timeout: timed out, the node
// switching to unaligned).
func (d *barrierDrawing) blocked(node string, barrierAt map[string]int, c int, ev spec.BarrierEvent) []string {
	if mode := d.tr.Header.Graph.Mode; mode != spec.ModeAligned && mode != spec.ModeAdaptive {
		return nil
	}
	end := alignmentEnd(ev)
	var out []string
	for _, e := range d.tr.Graph().In(node) {
		key := e.Key()
		if at, ok := barrierAt[key]; ok && at < c {
			y := d.y(node)
			out = append(out, fmt.Sprintf(`<line class="blocked" data-edge="%s" x1="%s" y1="%s" x2="%s" y2="%s" %s opacity="0.25"><title>%s blocked by alignment from column %d to %d, %s</title></line>`+"\n",
				esc(key), num(d.x(at)), num(y), num(d.x(c)), num(y), d.attrs(catBlocked), esc(key), at, c, end))
		}
	}
	return out
}

// alignmentEnd says how the alignment ended at recording step ev.
func alignmentEnd(ev spec.BarrierEvent) string {
	if ev.Action == spec.BarrierTimeout {
		return "when its alignment timed out and it switched to unaligned"
	}
	return "until it recorded"
}

// cut draws the cut through every node's recording step (at the end of
// its lane for a node that never recorded).
func (d *barrierDrawing) cut(recorded map[string]int) {
	var pts []string
	for _, n := range d.tr.Graph().Nodes {
		x := d.x(d.last) + dx/2
		if c, ok := recorded[n.Name]; ok {
			x = d.x(c) + dx/3
		}
		y := d.y(n.Name)
		pts = append(pts, fmt.Sprintf("%s,%s %s,%s", num(x), num(y-dy/3), num(x), num(y+dy/3)))
	}
	fmt.Fprintf(&d.buf, `<polyline class="cut-halo" data-snap="1" points="%s" fill="none" stroke="%s" stroke-width="%d" opacity="%s" stroke-linejoin="round"/>`+"\n",
		strings.Join(pts, " "), barrierColor, haloWidth, haloOpacity)
	fmt.Fprintf(&d.buf, `<polyline class="cut" data-snap="1" points="%s" fill="none" stroke="%s" stroke-width="4" opacity="0.7"><title>the cut: every node's recording step</title></polyline>`+"\n",
		strings.Join(pts, " "), barrierColor)
}

func stepTitle(i int, ev spec.BarrierEvent, col int) string {
	s := fmt.Sprintf("step %d, column %d: %s at %s", i+1, col, ev.Action, ev.Node)
	if ev.From != "" {
		s += " on " + spec.BarrierEdgeKey(ev.From, ev.To)
	}
	if ev.Rec != nil {
		s += fmt.Sprintf(", record <<%s, %d>> number %d", ev.Rec.Src, ev.Rec.I, ev.Rec.Seq)
	}
	if ev.Logged {
		s += ", logged as channel state"
	}
	return s + recordTitle(ev)
}

// recordTitle is what a recording step adds to its title: the switch
// (Timeout), the recording, the type reported (adaptive).
func recordTitle(ev spec.BarrierEvent) string {
	s := ""
	switch ev.Action {
	case spec.BarrierTimeout:
		s = "\nits alignment timed out: it switches to unaligned, its barrier overtaking its queued output (persisted)"
	case spec.BarrierTimeoutOut:
		return "\nthe timeout passed with its barrier still behind records in its output buffer: the barrier overtakes them (persisted), its snapshot now of type unaligned"
	}
	if ev.Part == nil {
		return s
	}
	s += "\nrecords its state here"
	if ev.Part.Type != "" {
		s += ", reporting a snapshot of type " + ev.Part.Type
	}
	return s
}

func (d *barrierDrawing) svg(w *bufio.Writer) {
	W, H := d.width(), d.height()
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" id="diagram" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(w, "<title>%s</title>\n<defs>", esc(d.caption()))
	for _, id := range slices.Sorted(maps.Keys(d.used)) {
		if strings.HasPrefix(id, "arrow-") {
			fmt.Fprintf(w, `<marker id="%s" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#%s"/></marker>`, id, strings.TrimPrefix(id, "arrow-"))
		}
	}
	w.WriteString("</defs>\n" + `<rect width="100%" height="100%" fill="white"/>` + "\n")
	w.WriteString(d.buf.String())
	y := d.legendTop()
	w.WriteString(`<g class="legend">` + "\n")
	fmt.Fprintf(w, `<g class="legend-entry"><line class="legend-cut" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="4" opacity="0.7"/><text x="%d" y="%d">the cut: each node's recording step</text></g>`+"\n", left, y, left+40, y, barrierColor, left+50, y+4)
	for _, c := range barrierCategories {
		if d.used[c.id] {
			y += legendLine
			fmt.Fprintf(w, `<g class="legend-entry"><line class="legend-item" x1="%d" y1="%d" x2="%d" y2="%d" %s/><text x="%d" y="%d">%s</text></g>`+"\n", left, y, left+40, y, d.attrs(c), left+50, y+4, esc(c.label))
		}
	}
	w.WriteString("</g>\n</svg>\n")
}

func (d *barrierDrawing) html(w *bufio.Writer) {
	writePage(w, d.caption(), "Time runs left to right in columns of causal depth (Lamport time). Hover over steps, arrows and the cut for details.", d.height(), d.svg, d.summary())
}

// writePage writes an XHTML page around a diagram: its caption, intro,
// the zoomable SVG (svg, height px high) and the summary's lines (the
// page of the barrier and sink diagrams).
func writePage(w *bufio.Writer, caption, intro string, height int, svg func(*bufio.Writer), summary []string) {
	w.WriteString("<!DOCTYPE html>\n" + `<html xmlns="http://www.w3.org/1999/xhtml" lang="en">` + "\n<head>\n" + `<meta charset="utf-8"/>` + "\n")
	fmt.Fprintf(w, "<title>%s</title>\n", esc(caption))
	fmt.Fprintf(w, "<style>body{font-family:sans-serif;margin:1em}#viewport{overflow:auto;border:1px solid #ccc;height:%dpx;max-height:80vh;touch-action:none}#viewport.zoomable{overflow:hidden;cursor:grab}</style>\n</head>\n<body>\n", height+2)
	fmt.Fprintf(w, "<h1>%s</h1>\n<p>%s</p>\n", esc(caption), esc(intro))
	w.WriteString(`<p class="controls"><button type="button" data-zoom="in">zoom in (+)</button> <button type="button" data-zoom="out">zoom out (-)</button> <button type="button" data-zoom="fit">fit (f)</button> <button type="button" data-zoom="reset">1:1 (0)</button></p>` + "\n" + `<div id="viewport" tabindex="0">` + "\n")
	svg(w)
	w.WriteString("</div>\n<ul>\n")
	for _, l := range summary {
		fmt.Fprintf(w, "<li>%s</li>\n", esc(l))
	}
	w.WriteString("</ul>\n<script>//<![CDATA[\n" + zoomJS + "//]]></script>\n</body>\n</html>\n")
}

// summary is what the diagram shows, in words: the channel state drawn
// and what could not be drawn.
func (d *barrierDrawing) summary() []string {
	var logged, over, restores int
	for _, ev := range d.tr.Events {
		if ev.Logged {
			logged++
		}
		if ev.Part != nil {
			for _, rs := range ev.Part.Overtaken {
				over += len(rs)
			}
		}
		if ev.Action == spec.BarrierRestore {
			restores++
		}
	}
	out := []string{fmt.Sprintf("channel state: %s logged by receivers, %s overtaken and persisted by senders; %s",
		plural(logged, "record"), plural(over, "record"), plural(restores, "restore"))}
	if sw := d.switched(); len(sw) > 0 {
		out = append(out, fmt.Sprintf("switched to unaligned (the diamonds: where an alignment timed out, or a barrier waiting in a full output buffer overtook it): %s", strings.Join(sw, ", ")))
	}
	return append(out, d.notes...)
}

// switched are the nodes that switched (a Timeout or TimeoutOut step),
// in the order they switched.
func (d *barrierDrawing) switched() []string {
	var sw []string
	for _, ev := range d.tr.Events {
		if isSwitch(ev) {
			sw = append(sw, ev.Node)
		}
	}
	return sw
}
