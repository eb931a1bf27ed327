package conformance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/spec/spectest"
)

// checker is what the lockstep harness needs of *rapid.T (and of the
// recorder the mutant tests use).
type checker interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// FailDir is where failing lockstep runs are written as trace files:
// $MARKERWAVE_FAIL_DIR, else testdata/failures.
func FailDir() string {
	if d := os.Getenv("MARKERWAVE_FAIL_DIR"); d != "" {
		return d
	}
	return filepath.Join("testdata", "failures")
}

// lockstep drives real impl/core nodes (through a coretest.Net, which holds the
// in-flight frames of every channel) and the model side by side: every
// implementation step is taken in the model too, and after it the
// abstraction of the nodes and the network must be the model's state.
type lockstep struct {
	t       checker
	name    string // for the failure trace file
	net     *coretest.Net
	cfg     *model.Config
	st      *model.State
	budget  map[spec.ProcID]int
	amounts []int64
	steps   int
	failing bool
	// last is the last step taken (an event, or a release of completed
	// snapshots): after a state mismatch, the first divergent step, since
	// the states were compared after every earlier one.
	last string
	// drained: finish has drained the network in lockstep.
	drained bool
}

// drainLimit bounds the deliveries of a failing run's drain.
const drainLimit = 100000

func newLockstep(t checker, name string, net *coretest.Net, amounts []int64, budget map[spec.ProcID]int, initiator map[spec.SnapID]spec.ProcID) *lockstep {
	t.Helper()
	k := model.Constants{Topo: net.Topo, InitBal: net.InitBal, Amount: amounts, Budget: budget, Initiator: initiator}
	cfg, err := model.NewConfig(k, model.VariantSpec, spec.Invariants, nil)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	l := &lockstep{t: t, name: name, net: net, cfg: cfg, st: model.Init(cfg), budget: budget, amounts: amounts}
	l.check()
	return l
}

// fail reports a failure that is not a divergent event (a state
// mismatch, a refused or extra step, a failing end-of-run check): the
// implementation is drained alone first, and the drained run is written.
func (l *lockstep) fail(format string, args ...any) {
	l.t.Helper()
	l.report(true, fmt.Sprintf(format, args...))
}

// report writes the failing run as a trace file that markerwave audit
// replays, and fails the test with msg, the property audit names on that
// file, its report, and the command to replay it.
//
// With drain (unless finish drained the run already), the implementation
// runs on alone first (drainAlone), and the drained run, marked drained
// (spec.Header.Drained) and carrying the snapshots the nodes completed
// (spec.Trace.Recorded), is what is written and checked: a state mismatch
// shows in it as the property it breaks (a wrong recording, a snapshot
// that cannot complete), found by Replay and the run properties (CheckRun)
// alone, exactly as audit finds it. Without drain (a step the model cannot
// take, which the trace already holds), the run so far is written as it is.
func (l *lockstep) report(drain bool, msg string) {
	l.t.Helper()
	if l.failing { // a failure while dumping
		l.t.Fatalf("%s", msg)
	}
	l.failing = true
	var b strings.Builder
	fmt.Fprintf(&b, "after %d steps: %s", l.steps, msg)
	drained, kind := l.drained, "run so far"
	if l.drained {
		kind = "drained run"
	}
	if drain && !l.drained {
		drained = l.drainAlone(&b)
		kind = "drained run"
		if !drained {
			kind = "run so far"
		}
	}
	tr := l.net.Trace("lockstep failure (" + kind + "): " + msg)
	tr.Header.Budget, tr.Header.Drained = l.budget, drained
	rep := Replay(tr, Options{})
	prop := string(rep.Property())
	if prop == "" {
		prop = "none: the " + kind + " conforms"
	}
	fmt.Fprintf(&b, "\nproperty: %s\naudit of the %s:\n  %s", prop, kind, strings.ReplaceAll(strings.TrimRight(rep.String(), "\n"), "\n", "\n  "))
	path := filepath.Join(FailDir(), strings.NewReplacer("/", "_", " ", "_").Replace(l.name)+".jsonl")
	err := os.MkdirAll(FailDir(), 0o755)
	if err == nil {
		err = spec.WriteTraceFile(path, tr)
	}
	if err != nil {
		l.t.Fatalf("%s\n(could not write the trace: %v)", b.String(), err)
	}
	replay := path
	if !filepath.IsAbs(path) {
		replay = filepath.Join("conformance", path) // from the module root
	}
	l.t.Fatalf("%s\nfailing run (%s) written to %s\nreplay it: go run ./cmd/markerwave audit %s", b.String(), kind, path, replay)
}

// drainAlone delivers the implementation's frames, channel by channel in
// topology order, until no frame can be delivered (coretest.Net.DrainDropping),
// the model taking each step too, and writes what happened to b. It
// reports whether the run ended drained: every channel empty, or blocked.
//
// A channel is blocked, its frames stranded, when its receiver refuses
// its head (the frame is dropped), or when its head is not the model's
// head of that channel (a marker the implementation lost or mislabelled):
// delivering past it would be a step the spec cannot take, and the replay
// would stop there on a message mismatch instead of reaching the end of
// the run, where a snapshot left incomplete is a liveness failure
// (SnapshotsComplete) and a completed one is checked by CheckRun. If the
// model cannot take a delivered step (the implementation's event itself
// diverges), the drain stops there: that step is the verdict.
func (l *lockstep) drainAlone(b *strings.Builder) bool {
	n := len(l.net.Events)
	var stop *Divergence
	admit := func(c spec.Channel, f wire.Frame) bool {
		q := l.st.Chan[l.cfg.ChanIndex(c.From, c.To)]
		if len(q) == 0 {
			return false
		}
		switch h := q[0]; f.Kind {
		case wire.KindMarker:
			return h.Kind == model.KindMarker && l.cfg.Snap[h.Snap] == f.Snap
		case wire.KindApp:
			amt, err := core.AmountOf(l.net.Apps[c.To], f.Payload)
			return err == nil && h.Kind == model.KindApp && h.Seq == f.Seq && h.Amt == amt
		}
		return false
	}
	took := func(ev spec.Event) bool {
		next, d := step(l.cfg, l.st, ev)
		if d != nil {
			d.Action = ev.String()
			stop = d
			return false
		}
		l.st = next
		return true
	}
	refused, ok := l.net.DrainDropping(drainLimit, admit, took)
	fmt.Fprintf(b, "\nthe implementation drained alone (every channel delivered FIFO while its head is the model's): %d more steps", len(l.net.Events)-n)
	for _, r := range refused {
		q := l.net.Queues[r.Chan]
		if r.Err != nil {
			fmt.Fprintf(b, "\n  %s, dropped; %s blocked", r, r.Chan)
		} else {
			head := "none"
			if mq := l.st.Chan[l.cfg.ChanIndex(r.Chan.From, r.Chan.To)]; len(mq) > 0 {
				head = model.FormatMsg(l.cfg, mq[0])
			}
			fmt.Fprintf(b, "\n  %s (the model's head: %s); %s blocked", r, head, r.Chan)
			q = q[1:]
		}
		if len(q) > 0 {
			fmt.Fprintf(b, ", %d frames stranded behind", len(q))
		}
	}
	switch {
	case stop != nil:
		fmt.Fprintf(b, "\n  stopped: the model cannot take %s (%s: %s): written undrained", stop.Action, stop.Property, stop.Detail)
	case !ok:
		fmt.Fprintf(b, "\n  the network did not drain within %d deliveries: written undrained", drainLimit)
	}
	return ok
}

// take has the model take the implementation's step ev.
func (l *lockstep) take(ev spec.Event) {
	l.t.Helper()
	next, d := step(l.cfg, l.st, ev)
	if d == nil {
		d = checkInvariants(l.cfg, next)
	}
	if d != nil {
		l.report(false, fmt.Sprintf("step %s: %s: %s (model: %s; implementation: %s)", ev, d.Property, d.Detail, d.Expected, d.Reported))
	}
	l.st = next
	l.steps++
	l.last = fmt.Sprintf("step %d, %s", l.steps, ev)
}

// release has the nodes hand out their completed local snapshots (coretest.Net.Take).
func (l *lockstep) release() {
	l.net.Take()
	l.last = "the release of completed snapshots (Take) after step " + fmt.Sprint(l.steps)
}

// send has c.From send a on c unless the model refuses because c.From
// has spent its budget; the implementation must refuse exactly when the
// model's SendApp is not enabled. It reports whether a send was
// attempted.
func (l *lockstep) send(c spec.Channel, a int64) bool {
	l.t.Helper()
	_, refused := model.SendApp(l.cfg, l.st, c.From, c.To, a)
	if spentBudget(refused) {
		return false
	}
	p := l.cfg.Topo.ProcIndex(c.From)
	before := l.net.Nodes[c.From].State()
	st, err := l.net.SendAmount(c.From, c.To, a)
	ev := st.Event
	switch {
	case refused == nil && err != nil:
		l.fail("SendApp(%s, %s, %d) is enabled in the model (%s), the implementation refused: %v", c.From, c.To, a, fmtLocal(c.From, l.st.Proc[p]), err)
	case refused != nil && err == nil:
		l.fail("%v; the implementation sent: %s", refused, ev)
	case refused != nil:
		if !errors.Is(err, core.ErrApp) {
			l.fail("%v; the implementation refused with %v, want an application refusal", refused, err)
		}
		if after := l.net.Nodes[c.From].State(); after != before {
			l.fail("a refused send changed %s: %v -> %v", c.From, before, after)
		}
		return true
	}
	l.take(ev)
	return true
}

// spentBudget reports whether the model refused a SendApp because its
// sender has spent its budget (the conjunct proc[p].sent < Budget[p]).
func spentBudget(refused error) bool {
	var ne *model.NotEnabled
	return errors.As(refused, &ne) && ne.Conjunct == model.BudgetSpent
}

// deliver hands frame i (0: the head) of c to its receiver. An
// application message that overtakes another (i > 0, a broken network)
// must be refused by its seq, and then nothing happens.
func (l *lockstep) deliver(c spec.Channel, i int) {
	l.t.Helper()
	f := l.net.Queues[c][i]
	st, err := l.net.DeliverAt(c, i)
	ev := st.Event
	if err != nil && i > 0 && f.Kind == wire.KindApp && errors.Is(err, core.ErrSeq) {
		return
	}
	if err != nil {
		l.fail("delivering %s on %s: the implementation refused: %v", f, c, err)
	}
	if want := map[wire.Kind]spec.Action{wire.KindApp: spec.RecvApp, wire.KindMarker: spec.RecvMarker}[f.Kind]; ev.Action != want || ev.Chan() != c {
		l.fail("delivering %s on %s gave event %s", f, c, ev)
	}
	l.take(ev)
}

// initiate has snapshot s's initiator initiate it; the implementation
// must refuse exactly when the model's Initiate(s) is not enabled.
func (l *lockstep) initiate(s spec.SnapID) {
	l.t.Helper()
	p := l.cfg.Topo.Procs[l.cfg.Initiator[l.cfg.SnapIndex(s)]]
	_, refused := model.Initiate(l.cfg, l.st, s)
	st, err := l.net.Initiate(p, s)
	ev := st.Event
	switch {
	case refused == nil && err != nil:
		l.fail("Initiate(%d) is enabled in the model, %s refused: %v", s, p, err)
	case refused != nil && err == nil:
		l.fail("%v; %s initiated again: %s", refused, p, ev)
	case refused != nil:
		if !errors.Is(err, core.ErrDuplicateSnap) {
			l.fail("%v; %s refused with %v, want ErrDuplicateSnap", refused, p, err)
		}
		return
	}
	l.take(ev)
}

// completed counts the local snapshots completed and not yet taken.
func (l *lockstep) completed() int {
	k := 0
	for _, nd := range l.net.Nodes {
		for _, s := range l.cfg.Snap {
			if nd.Phase(s) == core.Complete {
				k++
			}
		}
	}
	return k
}

// part is p's local snapshot of s as the implementation holds it: the
// node's view while s is active or complete there, the part taken from it
// (Net.Parts) once released.
func (l *lockstep) part(s spec.SnapID, p spec.ProcID) (core.LocalSnapshot, bool) {
	if l.net.Nodes[p].Phase(s) == core.Released {
		part, ok := l.net.Parts[s][p]
		return part, ok
	}
	return l.net.Nodes[p].Snapshot(s)
}

// check compares the abstraction of the nodes and the network with the
// model: proc, chan, recorded, recProc, recChan, recMsgs, the ghost
// counters nSent and Len(got) through the nodes' next seqs, and the ghost
// cut cutSent and Len(cutGot) through each recorded process's local
// snapshot part (its NextSend and NextRecv, active or released). A mismatch
// names the first divergent step (the states agreed after every earlier
// one), each differing variable with the property it bears on
// (varProperty), and, from the drained run, the property broken.
func (l *lockstep) check() {
	l.t.Helper()
	if diff := l.mismatches(); len(diff) > 0 {
		at := l.last
		if at == "" {
			at = "the initial state"
		}
		lines := make([]string, len(diff))
		for i, m := range diff {
			lines[i] = fmt.Sprintf("%s  [bears on %s]", m.text, m.prop)
		}
		l.fail("the implementation's state is not the model's\n  first divergent step: %s\n  %s", at, strings.Join(lines, "\n  "))
	}
}

// A mismatch is one model variable the implementation's abstraction
// disagrees on.
type mismatch struct {
	v    string        // the variable: proc, chan, nSent, Len(got), recorded, recProc, recChan, recMsgs, cutSent, Len(cutGot)
	prop spec.Property // the property it bears on (varProperty)
	text string
}

// varProperty is the property of tla/ChandyLamport.tla a mismatch in
// model variable v bears on (for chan: whether the markers in flight
// differ; for recProc: whether the recorded balance differs):
//
//   - proc[p], the process's state: State (the step's effect; take
//     usually catches it first, from the event's After);
//   - chan[c], the frames in flight: SnapshotsComplete when the markers
//     differ (a marker the model sent that the network lacks, or carries
//     under another snapshot's id, is never received as the model's: its
//     snapshot cannot complete, a liveness failure); otherwise Message
//     (an application message lost, duplicated or reordered: the channel
//     is not reliable FIFO);
//   - nSent[c], Len(got[c]), message numbering: Message;
//   - recorded[s], who recorded s: ConsistentCut (where the cut lies);
//   - recProc[s][p], the recorded local state: Conservation when its
//     balance differs (the recorded money does not add up), otherwise
//     ChandyLamportTheorem (a state the run could not pass through there);
//   - recChan[s][c], whether c records for s, and recMsgs[s][c], what it
//     recorded: ExactChannelState (the window of the channel's recording
//     and its content);
//   - cutSent[s][c] and Len(cutGot[s][c]), the ghost cut (compared with a
//     recorded process's local snapshot part: NextSend-1 on its outgoing
//     channels, NextRecv-1 on its incoming ones): ConsistentCut, the
//     property defined on them (ExactChannelState's window is defined on
//     them too). They are also where core.Restore resumes each channel's
//     numbering from a checkpoint (LocalSnapshot.Checkpoint), and what the
//     runtime's collector checks recorded channels against. The trace's
//     recorded lines carry them (spec.ChanCut), so the drained run's
//     audit sees a mismatch here that changes nothing else: Replay
//     compares them with the model's ghost cut when the snapshot
//     completes, CheckRun with the events, both naming ConsistentCut.
//
// The mapping says where to look. The property a failure reports comes
// from the drained run (report), and may differ: a channel that stops
// recording at the wrong marker (recChan) makes its node refuse the real
// marker later as a duplicate, so the drained run shows the snapshot
// never completing (SnapshotsComplete) before any recorded state is wrong.
func varProperty(v string, markersDiffer, balDiffers bool) spec.Property {
	switch v {
	case "proc":
		return spec.CheckState
	case "chan":
		if markersDiffer {
			return spec.PropSnapshotsComplete
		}
		return spec.CheckMessage
	case "nSent", "Len(got)":
		return spec.CheckMessage
	case "recorded":
		return spec.PropConsistentCut
	case "recProc":
		if balDiffers {
			return spec.PropConservation
		}
		return spec.PropChandyLamportTheorem
	case "recChan", "recMsgs":
		return spec.PropExactChannelState
	case "cutSent", "Len(cutGot)":
		return spec.PropConsistentCut
	}
	return spec.CheckState
}

// mismatches lists the model variables the implementation's abstraction
// disagrees on, in order: every process's state, every channel's frames
// and message numbering, then for each snapshot its processes'
// recordings and its channels'.
func (l *lockstep) mismatches() []mismatch {
	var out []mismatch
	bad := func(v string, prop spec.Property, format string, args ...any) {
		out = append(out, mismatch{v: v, prop: prop, text: fmt.Sprintf(format, args...)})
	}
	l.procMismatches(bad)
	for ci, c := range l.cfg.Topo.Chans {
		l.chanMismatches(bad, ci, c)
	}
	for si, s := range l.cfg.Snap {
		for i, p := range l.cfg.Topo.Procs {
			l.recordedMismatches(bad, s, si, i, p)
		}
		for ci, c := range l.cfg.Topo.Chans {
			l.recChanMismatches(bad, s, si, ci, c)
		}
	}
	return out
}

// procMismatches compares every process's state with the model's proc.
func (l *lockstep) procMismatches(bad func(v string, prop spec.Property, format string, args ...any)) {
	for i, p := range l.cfg.Topo.Procs {
		if got := l.net.Nodes[p].State(); got != l.st.Proc[i] {
			bad("proc", varProperty("proc", false, false), "proc[%s]: model %+v, implementation %+v", p, l.st.Proc[i], got)
		}
	}
}

// chanMismatches compares channel c (index ci) with the model: its
// frames in the network with chan[c], its sender's next send seq with
// nSent[c], its receiver's next receive seq with Len(got[c]).
func (l *lockstep) chanMismatches(bad func(v string, prop spec.Property, format string, args ...any), ci int, c spec.Channel) {
	cfg, st, net := l.cfg, l.st, l.net
	got := l.queueMsgs(bad, c)
	if fmtChan(cfg, got) != fmtChan(cfg, st.Chan[ci]) {
		bad("chan", varProperty("chan", fmtMarkers(cfg, got) != fmtMarkers(cfg, st.Chan[ci]), false),
			"chan[%s]: model %s, network %s", c, fmtChan(cfg, st.Chan[ci]), fmtChan(cfg, got))
	}
	if ns, _ := net.Nodes[c.From].NextSendSeq(c.To); ns-1 != st.NSent[ci] {
		bad("nSent", varProperty("nSent", false, false), "nSent[%s]: model %d, %s's next send seq %d", c, st.NSent[ci], c.From, ns)
	}
	if nr, _ := net.Nodes[c.To].NextRecvSeq(c.From); nr-1 != uint64(len(st.Got[ci])) {
		bad("Len(got)", varProperty("Len(got)", false, false), "Len(got[%s]): model %d, %s's next receive seq %d", c, len(st.Got[ci]), c.To, nr)
	}
}

// queueMsgs is the model's view of the frames in flight on c, each frame
// that has none (a payload that does not decode, a marker of an unknown
// snapshot, a frame of another kind) reported as a chan mismatch.
func (l *lockstep) queueMsgs(bad func(v string, prop spec.Property, format string, args ...any), c spec.Channel) []model.Msg {
	var got []model.Msg
	for _, f := range l.net.Queues[c] {
		switch f.Kind {
		case wire.KindApp:
			amt, err := core.AmountOf(l.net.Apps[c.To], f.Payload)
			if err != nil {
				bad("chan", spec.CheckMessage, "chan[%s]: frame %s: %v", c, f, err)
			}
			got = append(got, model.AppMsgOf(amt, f.Seq))
		case wire.KindMarker:
			si := l.cfg.SnapIndex(f.Snap)
			if si < 0 {
				bad("chan", spec.PropSnapshotsComplete, "chan[%s]: marker of unknown snapshot %d", c, f.Snap)
			}
			got = append(got, model.MarkerOf(si))
		default:
			bad("chan", spec.CheckMessage, "chan[%s]: frame of kind %d", c, f.Kind)
		}
	}
	return got
}

// recordedMismatches compares whether p (process i) recorded snapshot s
// (index si) with the model's recorded[s], and if both say it did, its
// recorded state with recProc[s][p] and its cut seqs with the ghost cut
// (cutMismatches).
func (l *lockstep) recordedMismatches(bad func(v string, prop spec.Property, format string, args ...any), s spec.SnapID, si, i int, p spec.ProcID) {
	st := l.st
	ph := l.net.Nodes[p].Phase(s)
	if rec := ph != core.Unknown; rec != st.Recorded[si].Has(i) {
		bad("recorded", varProperty("recorded", false, false), "recorded[%d]: model has %s: %t, %s is %s", s, p, st.Recorded[si].Has(i), p, ph)
		return
	}
	if ph == core.Unknown {
		return
	}
	part, ok := l.part(s, p)
	ls := part.State
	if want := st.RecProc[si][i]; !ok || part.Proc != p || ls != want {
		bad("recProc", varProperty("recProc", false, !ok || part.Proc != p || ls.Bal != want.Bal), "recProc[%d][%s]: model %+v, implementation %+v", s, p, want, ls)
	}
	l.cutMismatches(bad, s, si, p, part, ok)
}

// recChanMismatches compares the recording of channel c (index ci) for
// snapshot s (index si), as its receiver's local snapshot part holds it
// (idle and empty if the receiver has not recorded s), with the model's
// recChan[s][c] and recMsgs[s][c].
func (l *lockstep) recChanMismatches(bad func(v string, prop spec.Property, format string, args ...any), s spec.SnapID, si, ci int, c spec.Channel) {
	st := l.st
	nd := l.net.Nodes[c.To]
	recChan := varProperty("recChan", false, false)
	status, msgs := core.Idle.String(), []spec.AppMsg(nil)
	if nd.Phase(s) != core.Unknown {
		part, _ := l.part(s, c.To)
		r, ok := part.Chan(c)
		if !ok {
			bad("recChan", recChan, "recChan[%d][%s]: missing from %s's local snapshot", s, c, c.To)
		}
		status, msgs = r.Status.String(), r.AppMsgs()
	}
	if want := st.RecChan[si][ci].String(); status != want {
		bad("recChan", recChan, "recChan[%d][%s]: model %s, implementation %s", s, c, want, status)
	}
	if !slices.Equal(msgs, st.RecMsgs[si][ci]) {
		bad("recMsgs", varProperty("recMsgs", false, false), "recMsgs[%d][%s]: model %s, implementation %s", s, c, spec.FormatMsgs(st.RecMsgs[si][ci]), spec.FormatMsgs(msgs))
	}
}

// cutMismatches compares p's cut seqs for snapshot s, as its local
// snapshot part holds them (NextSend per outgoing channel, NextRecv per
// incoming one: what core.LocalSnapshot.Checkpoint hands Restore), with
// the model's ghost cut: on every outgoing channel c, NextSend-1 must be
// cutSent[s][c], the number of messages p had sent on c when it recorded;
// on every incoming channel c, NextRecv-1 must be Len(cutGot[s][c]), the
// number it had received. ok is false when p has no part for s although
// both agree it recorded s.
func (l *lockstep) cutMismatches(bad func(v string, prop spec.Property, format string, args ...any), s spec.SnapID, si int, p spec.ProcID, part core.LocalSnapshot, ok bool) {
	cfg, st := l.cfg, l.st
	if !ok {
		bad("cutSent", varProperty("cutSent", false, false), "cutSent[%d][*]: %s recorded snapshot %d but has no local snapshot part holding its cut seqs", s, p, s)
		return
	}
	for _, c := range cfg.Topo.Out(p) {
		ci := cfg.ChanIndex(c.From, c.To)
		next, found := uint64(0), false
		for _, cs := range part.NextSend {
			if cs.Chan == c {
				next, found = cs.Next, true
				break
			}
		}
		switch want := st.CutSent[si][ci]; {
		case !found:
			bad("cutSent", varProperty("cutSent", false, false), "cutSent[%d][%s]: model %d, %s's local snapshot has no next send seq for %s (restore cannot resume it)", s, c, want, p, c)
		case next == 0 || next-1 != want:
			bad("cutSent", varProperty("cutSent", false, false), "cutSent[%d][%s]: model %d, %s's local snapshot has next send seq %d (restore resumes %s at it)", s, c, want, p, next, c)
		}
	}
	for _, c := range cfg.Topo.In(p) {
		ci := cfg.ChanIndex(c.From, c.To)
		want := uint64(len(st.CutGot[si][ci]))
		r, found := part.Chan(c)
		switch {
		case !found:
			bad("Len(cutGot)", varProperty("Len(cutGot)", false, false), "Len(cutGot[%d][%s]): model %d, %s's local snapshot has no recording of %s (restore cannot resume it)", s, c, want, p, c)
		case r.NextRecv == 0 || r.NextRecv-1 != want:
			bad("Len(cutGot)", varProperty("Len(cutGot)", false, false), "Len(cutGot[%d][%s]): model %d, %s's local snapshot has next receive seq %d (restore resumes %s at it)", s, c, want, p, r.NextRecv, c)
		}
	}
}

// fmtMarkers renders the markers of a channel's contents, in order.
func fmtMarkers(cfg *model.Config, q []model.Msg) string {
	var ms []model.Msg
	for _, m := range q {
		if m.Kind == model.KindMarker {
			ms = append(ms, m)
		}
	}
	return fmtChan(cfg, ms)
}

// finish drains the network in lockstep (pick chooses the next channel),
// then checks that every initiated snapshot completed and the run
// properties of CheckRun on the recorded states the nodes report, and
// replays the run (in execution order and merged from the per-process
// logs by vector clocks) with Replay.
func (l *lockstep) finish(pick func([]spec.Channel) spec.Channel) {
	l.t.Helper()
	for cs := l.net.Busy(); len(cs) > 0; cs = l.net.Busy() {
		l.deliver(pick(cs), 0)
		l.check()
	}
	l.drained = true
	if s := model.SnapshotDone(l.cfg, l.st); s >= 0 {
		l.fail("drained, but snapshot %d is not complete in the model", l.cfg.Snap[s])
	}
	rec := l.net.Recorded()
	for s := range rec {
		if !model.Complete(l.cfg, l.st, l.cfg.SnapIndex(s)) {
			l.fail("the implementation completed snapshot %d, the model did not", s)
		}
	}
	end := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}}
	for p, nd := range l.net.Nodes {
		end.Procs[p] = nd.State()
	}
	if vs := CheckRun(Run{Topo: l.net.Topo, InitBal: l.net.InitBal, Budget: l.budget, Events: l.net.Events, Recorded: rec, End: &end}); len(vs) > 0 {
		l.fail("run properties: %v", vs)
	}
	tr := l.net.Trace("")
	tr.Header.Budget, tr.Header.Drained = l.budget, true
	if r := Replay(tr, Options{}); !r.OK() {
		l.fail("replay of the run: %s", r)
	}
	merged, err := spec.MergeCausal(l.net.Topo, l.net.Logs)
	if err != nil {
		l.fail("merging the per-process logs: %v", err)
	}
	tr.Events = merged
	if r := Replay(tr, Options{}); !r.OK() {
		l.fail("replay of the causally merged logs: %s", r)
	}
}

// drawLockstep draws a topology, an application (a bank with random
// balances, or a token ring), budgets and snapshots with initiators.
func drawLockstep(t *rapid.T, name string) *lockstep {
	topo := spectest.Topology(t, rapid.IntRange(2, 6).Draw(t, "procs"))
	budget := map[spec.ProcID]int{}
	for _, p := range topo.Procs {
		budget[p] = rapid.IntRange(0, 40).Draw(t, "budget "+string(p))
	}
	var (
		net     *coretest.Net
		err     error
		amounts []int64
	)
	if rapid.IntRange(0, 3).Draw(t, "app") == 0 {
		net, err = coretest.NewToken(topo, rapid.SampledFrom(topo.Procs).Draw(t, "holder"))
		amounts = []int64{1}
	} else {
		bal := map[spec.ProcID]int64{}
		for _, p := range topo.Procs {
			bal[p] = rapid.Int64Range(0, 100).Draw(t, "bal "+string(p))
		}
		net, err = coretest.NewBank(topo, bal)
		amounts = []int64{1, 5, 20, 30}
	}
	if err != nil {
		t.Fatalf("net: %v", err)
	}
	ids := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 9), 1, 3, rapid.ID[uint64]).Draw(t, "snaps")
	initiator := map[spec.SnapID]spec.ProcID{}
	for _, s := range ids {
		initiator[spec.SnapID(s)] = rapid.SampledFrom(topo.Procs).Draw(t, fmt.Sprintf("initiator %d", s))
	}
	return newLockstep(t, name, net, amounts, budget, initiator)
}

// TestLockstep drives random runs of real impl/core nodes over random
// strongly connected topologies with random sends, deliveries (FIFO),
// initiations of concurrent snapshots and releases of completed ones, the
// model taking every step alongside; then drains and checks every
// snapshot. Soak: go test ./conformance -run TestLockstep
// -rapid.checks=20000 -rapid.steps=200.
func TestLockstep(t *testing.T) {
	var st lockstepStats
	defer func() {
		t.Logf("%d runs, %d events, %d completed snapshots, %d recorded in-flight messages", st.runs, st.events, st.snaps, st.recMsgs)
	}()
	rapid.Check(t, lockstepProp(t.Name(), false, &st))
}

type lockstepStats struct{ runs, events, snaps, recMsgs int }

// lockstepProp is one random lockstep run. nonFIFO lets deliveries take
// any frame of a channel, not just its head: a broken network, for
// testing that the harness catches what it must.
func lockstepProp(name string, nonFIFO bool, st *lockstepStats) func(*rapid.T) {
	return func(rt *rapid.T) {
		l := drawLockstep(rt, name)
		rt.Repeat(map[string]func(*rapid.T){
			"send": func(rt *rapid.T) {
				var cs []spec.Channel
				for _, c := range l.net.Topo.Chans {
					if _, refused := model.SendApp(l.cfg, l.st, c.From, c.To, l.amounts[0]); !spentBudget(refused) {
						cs = append(cs, c)
					}
				}
				if len(cs) == 0 {
					rt.Skip("every budget spent")
				}
				l.send(rapid.SampledFrom(cs).Draw(rt, "chan"), rapid.SampledFrom(l.amounts).Draw(rt, "amount"))
			},
			"deliver": func(rt *rapid.T) {
				cs := l.net.Busy()
				if len(cs) == 0 {
					rt.Skip("nothing in flight")
				}
				c := rapid.SampledFrom(cs).Draw(rt, "deliver")
				i := 0
				if nonFIFO {
					i = rapid.IntRange(0, len(l.net.Queues[c])-1).Draw(rt, "position")
				}
				l.deliver(c, i)
			},
			"initiate": func(rt *rapid.T) {
				var fresh []spec.SnapID
				for si, s := range l.cfg.Snap {
					if !model.Initiated(l.cfg, l.st, si) {
						fresh = append(fresh, s)
					}
				}
				if len(fresh) == 0 || rapid.IntRange(0, 9).Draw(rt, "again") == 0 {
					fresh = l.cfg.Snap // may be refused: already initiated
				}
				l.initiate(rapid.SampledFrom(fresh).Draw(rt, "snap"))
			},
			"take": func(rt *rapid.T) {
				if l.completed() == 0 {
					rt.Skip("nothing to take")
				}
				l.release()
			},
			"": func(*rapid.T) { l.check() },
		})
		l.finish(func(cs []spec.Channel) spec.Channel { return rapid.SampledFrom(cs).Draw(rt, "drain") })
		st.runs++
		st.events += len(l.net.Events)
		for _, g := range l.net.Recorded() {
			st.snaps++
			for _, ms := range g.Chans {
				st.recMsgs += len(ms)
			}
		}
	}
}
