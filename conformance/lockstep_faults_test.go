package conformance

import (
	"errors"
	"fmt"
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

// faultLockstep drives real impl/core nodes through crashes, suspicions
// and aborts alongside model/faults.go (tla/ChandyLamportFaults.tla), the
// way lockstep does for the failure-free spec: every step the
// implementation takes, the model takes too and must find enabled, and
// after it the nodes and the network must be the model's state.
//
// The spec's failure detector and aborts are global (suspected and
// abortedBy are system variables); the implementation's are per node. The
// harness maps one to the other: a Detect(q) or FalseSuspect(q) of the
// model is a Suspect(q) at every live node but q, an Abort(s, q) an Abort
// at every live node (a node that already handed its part out refuses
// with ErrReleased: it expects no more markers of s). A crashed node takes
// no more steps; what was sent to it stays in the network, as in the
// model. Aborts caused by a live (falsely suspected) process are not
// driven: that process cannot know that the others suspect it, so it
// would receive the aborted snapshot's markers where the global spec
// drops them (impl/runtime's false-suspicion test covers that case).
type faultLockstep struct {
	t       *rapid.T
	net     *coretest.Net
	cfg     *model.Config
	st      *model.State
	amounts []int64
	crashed map[spec.ProcID]bool
	last    string
}

// faultInvariants are the faults spec's safety properties that hold
// without recovery: they are checked after every step.
var faultInvariants = []spec.Property{
	spec.PropFaultTypeOK, spec.PropMoneyConserved, spec.PropExactlyOnce,
	spec.PropTheoremUnlessAborted, spec.PropAbortSound,
	spec.PropConsistentCut, spec.PropExactChannelState,
}

func drawFaultLockstep(t *rapid.T) *faultLockstep {
	topo := spectest.Topology(t, rapid.IntRange(2, 5).Draw(t, "procs"))
	bal, budget := map[spec.ProcID]int64{}, map[spec.ProcID]int{}
	for _, p := range topo.Procs {
		bal[p] = rapid.Int64Range(0, 60).Draw(t, "bal "+string(p))
		budget[p] = rapid.IntRange(0, 20).Draw(t, "budget "+string(p))
	}
	net, err := coretest.NewBank(topo, bal)
	if err != nil {
		t.Fatalf("net: %v", err)
	}
	ids := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 9), 1, 3, rapid.ID[uint64]).Draw(t, "snaps")
	initiator := map[spec.SnapID]spec.ProcID{}
	for _, s := range ids {
		initiator[spec.SnapID(s)] = rapid.SampledFrom(topo.Procs).Draw(t, fmt.Sprintf("initiator %d", s))
	}
	k := model.Constants{Topo: topo, InitBal: net.InitBal, Amount: []int64{1, 5, 20}, Budget: budget, Initiator: initiator,
		MaxCrash: rapid.IntRange(1, 2).Draw(t, "max crashes"), FalseSuspicion: true}
	cfg, err := model.NewConfig(k, model.VariantFaults, faultInvariants, nil)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	l := &faultLockstep{t: t, net: net, cfg: cfg, st: model.Init(cfg), amounts: k.Amount, crashed: map[spec.ProcID]bool{}}
	l.check()
	return l
}

// live lists the processes that have not crashed.
func (l *faultLockstep) live() []spec.ProcID {
	var out []spec.ProcID
	for _, p := range l.cfg.Topo.Procs {
		if !l.crashed[p] {
			out = append(out, p)
		}
	}
	return out
}

// apply takes the model's step next (err: refused) after the
// implementation's step described by what.
func (l *faultLockstep) apply(what string, next *model.State, err error) {
	l.t.Helper()
	if err != nil {
		l.t.Fatalf("after %s: the implementation took %s, the model refuses: %v", l.last, what, err)
	}
	l.st = next
	l.last = what
	for _, name := range faultInvariants {
		if f, _ := model.InvariantByName(name); !f(l.cfg, l.st) {
			l.t.Fatalf("after %s: %s is violated", what, name)
		}
	}
	l.check()
}

// send has c.From send a to c.To; the implementation must refuse exactly
// when SendAppF is not enabled, naming the suspicion when that is why,
// and a refused send changes nothing.
func (l *faultLockstep) send(c spec.Channel, a int64) {
	l.t.Helper()
	next, refused := model.SendAppF(l.cfg, l.st, c.From, c.To, a)
	var ne *model.NotEnabled
	if errors.As(refused, &ne) && ne.Conjunct == model.BudgetSpent {
		return // the model's bound on the run, not a rule of the algorithm
	}
	nd := l.net.Nodes[c.From]
	fingerprint := func() string {
		seq, _ := nd.NextSendSeq(c.To)
		return fmt.Sprintf("%+v, next seq %d", nd.State(), seq)
	}
	before := fingerprint()
	st, err := l.net.SendAmount(c.From, c.To, a)
	switch {
	case refused == nil && err != nil:
		l.t.Fatalf("SendAppF(%s, %s, %d) is enabled, the implementation refused: %v", c.From, c.To, a, err)
	case refused != nil && err == nil:
		l.t.Fatalf("%v; the implementation sent: %s", refused, st.Event)
	case refused != nil:
		want := core.ErrApp
		if ne.Conjunct == model.ReceiverSuspected {
			want = core.ErrSuspected
		}
		if !errors.Is(err, want) {
			l.t.Fatalf("%v; the implementation refused with %v, want %v", refused, err, want)
		}
		if after := fingerprint(); after != before {
			l.t.Fatalf("a refused send changed %s: %s, then %s", c.From, before, after)
		}
		return
	}
	l.apply(st.Event.String(), next, nil)
}

// deliver delivers the head of c to its live receiver: RecvAppF, or for a
// marker RecvMarkerF, or DropMarker when its snapshot is aborted.
func (l *faultLockstep) deliver(c spec.Channel) {
	l.t.Helper()
	f := l.net.Queues[c][0]
	st, err := l.net.Deliver(c)
	if err != nil {
		l.t.Fatalf("delivering %s on %s: the implementation refused: %v", f, c, err)
	}
	var (
		next   *model.State
		merr   error
		action = spec.RecvApp
	)
	switch {
	case f.Kind == wire.KindApp:
		next, merr = model.RecvAppF(l.cfg, l.st, c.From, c.To)
	case model.Aborted(l.st, l.cfg.SnapIndex(f.Snap)):
		next, merr = model.DropMarker(l.cfg, l.st, c.From, c.To)
		action = spec.DropMarker
	default:
		next, merr = model.RecvMarkerF(l.cfg, l.st, c.From, c.To)
		action = spec.RecvMarker
	}
	if st.Event.Action != action || st.Event.Chan() != c {
		l.t.Fatalf("delivering %s on %s gave %s, the model takes %s", f, c, st.Event, action)
	}
	l.apply(st.Event.String(), next, merr)
}

// initiate has s's live initiator initiate it; the implementation refuses
// exactly when InitiateF(s) is not enabled.
func (l *faultLockstep) initiate(s spec.SnapID) {
	l.t.Helper()
	p := l.cfg.Topo.Procs[l.cfg.Initiator[l.cfg.SnapIndex(s)]]
	next, refused := model.InitiateF(l.cfg, l.st, s)
	st, err := l.net.Initiate(p, s)
	switch {
	case refused == nil && err != nil:
		l.t.Fatalf("InitiateF(%d) is enabled, %s refused: %v", s, p, err)
	case refused != nil && err == nil:
		l.t.Fatalf("%v; %s initiated: %s", refused, p, st.Event)
	case refused != nil:
		if !errors.Is(err, core.ErrDuplicateSnap) {
			l.t.Fatalf("%v; %s refused with %v, want ErrDuplicateSnap", refused, p, err)
		}
		return
	}
	l.apply(st.Event.String(), next, nil)
}

// crash crashes p: it takes no more steps.
func (l *faultLockstep) crash(p spec.ProcID) {
	l.t.Helper()
	next, err := model.Crash(l.cfg, l.st, p)
	l.crashed[p] = true
	l.apply(fmt.Sprintf("Crash(%s)", p), next, err)
}

// suspect is Detect(q) (q crashed) or FalseSuspect(q): every live node
// but q suspects q.
func (l *faultLockstep) suspect(q spec.ProcID) {
	l.t.Helper()
	detect := model.Detect
	if !l.crashed[q] {
		detect = model.FalseSuspect
	}
	next, err := detect(l.cfg, l.st, q)
	for _, p := range l.live() {
		if p == q {
			continue
		}
		st, serr := l.net.Suspect(p, q)
		if serr != nil {
			l.t.Fatalf("%s cannot suspect %s: %v", p, q, serr)
		}
		if st.Event.Action != spec.Suspect || st.Event.Peer != q || len(st.Out) != 0 {
			l.t.Fatalf("%s suspecting %s gave %s", p, q, st.Event)
		}
	}
	l.apply(fmt.Sprintf("Suspect(%s) at every live node", q), next, err)
}

// abort is Abort(s, q) for a crashed q: every live node aborts s (or has
// released its part already), releasing its recording.
func (l *faultLockstep) abort(s spec.SnapID, q spec.ProcID) {
	l.t.Helper()
	next, err := model.Abort(l.cfg, l.st, s, q)
	for _, p := range l.live() {
		phase := l.net.Nodes[p].Phase(s)
		st, aerr := l.net.Abort(p, s, q)
		switch {
		case phase == core.Released:
			if !errors.Is(aerr, core.ErrReleased) {
				l.t.Fatalf("%s, which released its part of %d, aborted it: %v", p, s, aerr)
			}
		case aerr != nil:
			l.t.Fatalf("%s cannot abort snapshot %d (%s there) for %s: %v", p, s, phase, q, aerr)
		case st.Event.Action != spec.Abort || st.Event.Snap != s || st.Event.Peer != q:
			l.t.Fatalf("%s aborting %d gave %s", p, s, st.Event)
		}
	}
	l.apply(fmt.Sprintf("Abort(%d, %s) at every live node", s, q), next, err)
}

// check compares the implementation with the model: every process's
// state, every channel's frames, each node's suspicions, and for every
// snapshot either its recording (not aborted) or that no live node holds
// any of it (aborted).
func (l *faultLockstep) check() {
	l.t.Helper()
	var diffs []string
	bad := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	l.checkProcs(bad)
	l.checkChans(bad)
	for si, s := range l.cfg.Snap {
		aborted := model.Aborted(l.st, si)
		for i, p := range l.cfg.Topo.Procs {
			l.checkSnapAt(bad, si, s, i, p, aborted)
		}
	}
	if len(diffs) > 0 {
		l.t.Fatalf("after %s the implementation is not the model:\n  %s", l.last, strings.Join(diffs, "\n  "))
	}
}

// checkProcs compares every process's state with the model's, and each
// live node's suspicions with the model's suspected.
func (l *faultLockstep) checkProcs(bad func(format string, args ...any)) {
	cfg, st, net := l.cfg, l.st, l.net
	for i, p := range cfg.Topo.Procs {
		if got := net.Nodes[p].State(); got != st.Proc[i] {
			bad("proc[%s]: model %+v, implementation %+v", p, st.Proc[i], got)
		}
		if l.crashed[p] {
			continue
		}
		for j, q := range cfg.Topo.Procs {
			if q != p && net.Nodes[p].Suspected(q) != st.Suspected.Has(j) {
				bad("suspected: model has %s: %t, %s suspects it: %t", q, st.Suspected.Has(j), p, net.Nodes[p].Suspected(q))
			}
		}
	}
}

// checkChans compares every channel's frames in the network with the
// model's chan.
func (l *faultLockstep) checkChans(bad func(format string, args ...any)) {
	cfg, st, net := l.cfg, l.st, l.net
	for ci, c := range cfg.Topo.Chans {
		var got []model.Msg
		for _, f := range net.Queues[c] {
			if f.Kind == wire.KindMarker {
				got = append(got, model.MarkerOf(cfg.SnapIndex(f.Snap)))
				continue
			}
			amt, _ := core.AmountOf(net.Apps[c.To], f.Payload)
			got = append(got, model.AppMsgOf(amt, f.Seq))
		}
		if fmtChan(cfg, got) != fmtChan(cfg, st.Chan[ci]) {
			bad("chan[%s]: model %s, network %s", c, fmtChan(cfg, st.Chan[ci]), fmtChan(cfg, got))
		}
	}
}

// checkSnapAt compares p's share of snapshot s (index si; p is process
// i): of an aborted snapshot a live p holds nothing, else p recorded s
// exactly when the model has it recorded, and what it recorded is the
// model's.
func (l *faultLockstep) checkSnapAt(bad func(format string, args ...any), si int, s spec.SnapID, i int, p spec.ProcID, aborted bool) {
	st := l.st
	nd := l.net.Nodes[p]
	ph := nd.Phase(s)
	switch {
	case aborted && !l.crashed[p]:
		if _, held := nd.Snapshot(s); held || (ph != core.Aborted && ph != core.Released) {
			bad("snapshot %d is aborted, %s still has it %s (recording held: %t)", s, p, ph, held)
		}
	case aborted:
	case (ph != core.Unknown) != st.Recorded[si].Has(i):
		bad("recorded[%d]: model has %s: %t, %s is %s", s, p, st.Recorded[si].Has(i), p, ph)
	case ph != core.Unknown:
		l.checkRecording(bad, si, s, i, p, ph)
	}
}

// checkRecording compares what p (process i, in phase ph of snapshot s,
// index si) recorded, active or released, with the model's recProc,
// recChan and recMsgs.
func (l *faultLockstep) checkRecording(bad func(format string, args ...any), si int, s spec.SnapID, i int, p spec.ProcID, ph core.Phase) {
	cfg, st, net := l.cfg, l.st, l.net
	part, ok := net.Nodes[p].Snapshot(s)
	if ph == core.Released {
		part, ok = net.Parts[s][p]
	}
	if !ok || part.State != st.RecProc[si][i] {
		bad("recProc[%d][%s]: model %+v, implementation %+v", s, p, st.RecProc[si][i], part.State)
	}
	for _, c := range cfg.Topo.In(p) {
		ci := cfg.ChanIndex(c.From, c.To)
		r, _ := part.Chan(c)
		if r.Status.String() != st.RecChan[si][ci].String() || !slices.Equal(r.AppMsgs(), st.RecMsgs[si][ci]) {
			bad("recChan/recMsgs[%d][%s]: model %s %s, implementation %s %s", s, c, st.RecChan[si][ci], spec.FormatMsgs(st.RecMsgs[si][ci]), r.Status, spec.FormatMsgs(r.AppMsgs()))
		}
	}
}

// busyLive lists the channels with frames whose receiver is live.
func (l *faultLockstep) busyLive() []spec.Channel {
	var out []spec.Channel
	for _, c := range l.net.Busy() {
		if !l.crashed[c.To] {
			out = append(out, c)
		}
	}
	return out
}

// finish runs the fair end of the behaviour (SpecFaults' fairness):
// every crashed process is detected, every pending snapshot whose cause
// crashed is aborted, and everything in flight to a live process is
// delivered. Then SnapshotsEnd must hold: every initiated snapshot is
// complete or aborted.
func (l *faultLockstep) finish(pick func([]spec.Channel) spec.Channel) {
	for range 10000 {
		for _, q := range l.cfg.Topo.Procs {
			if l.crashed[q] && !l.st.Suspected.Has(l.cfg.Topo.ProcIndex(q)) {
				l.suspect(q)
			}
		}
		for _, s := range l.cfg.Snap {
			for _, q := range l.cfg.Topo.Procs {
				if _, err := model.Abort(l.cfg, l.st, s, q); err == nil && l.crashed[q] {
					l.abort(s, q)
				}
			}
		}
		cs := l.busyLive()
		if len(cs) == 0 {
			break
		}
		l.deliver(pick(cs))
	}
	if s := model.SnapshotEnded(l.cfg, l.st); s >= 0 {
		l.t.Fatalf("SnapshotsEnd: snapshot %d is neither complete nor aborted at the end of a fair run", l.cfg.Snap[s])
	}
}

// TestLockstepFaults: random runs of real cores with crashes, true and
// false suspicions and aborts, in lockstep with model/faults.go, ending
// with the spec's fairness (SnapshotsEnd); the audit of each run's log
// conforms. It counts what it drove, and the runs on fixed inputs
// (checkCovering) must drive every fault step, so a harness that stopped
// exercising them would show.
func TestLockstepFaults(t *testing.T) {
	checkCovering(t, faultSeeds, lockstepFaults, "crash", "suspicion", "abort", "marker dropped", "send to a suspected peer")
}

// faultSeeds is how many fixed inputs TestLockstepFaults runs: enough
// that every fault step is reached, with a margin (the log says where
// each is first reached).
const faultSeeds = 40

// lockstepFaults is one run of TestLockstepFaults; seen counts the fault
// steps it drove.
func lockstepFaults(rt *rapid.T, seen map[string]int, _ string) {
	l := drawFaultLockstep(rt)
	before := len(l.net.Events)
	rt.Repeat(map[string]func(*rapid.T){
		"send": func(rt *rapid.T) {
			live := l.live()
			var cs []spec.Channel
			for _, c := range l.cfg.Topo.Chans {
				if !l.crashed[c.From] {
					cs = append(cs, c)
				}
			}
			if len(live) == 0 || len(cs) == 0 {
				rt.Skip("no live sender")
			}
			c := rapid.SampledFrom(cs).Draw(rt, "chan")
			if l.st.Suspected.Has(l.cfg.Topo.ProcIndex(c.To)) {
				seen["send to a suspected peer"]++
			}
			l.send(c, rapid.SampledFrom(l.amounts).Draw(rt, "amount"))
		},
		"deliver": func(rt *rapid.T) {
			cs := l.busyLive()
			if len(cs) == 0 {
				rt.Skip("nothing in flight to a live process")
			}
			l.deliver(rapid.SampledFrom(cs).Draw(rt, "deliver"))
		},
		"initiate": func(rt *rapid.T) {
			var ok []spec.SnapID
			for si, s := range l.cfg.Snap {
				if !l.crashed[l.cfg.Topo.Procs[l.cfg.Initiator[si]]] {
					ok = append(ok, s)
				}
			}
			if len(ok) == 0 {
				rt.Skip("every initiator crashed")
			}
			l.initiate(rapid.SampledFrom(ok).Draw(rt, "snap"))
		},
		"take": func(rt *rapid.T) { l.net.Take(); l.check() },
		"crash": func(rt *rapid.T) {
			p := rapid.SampledFrom(l.cfg.Topo.Procs).Draw(rt, "crash")
			if _, err := model.Crash(l.cfg, l.st, p); err != nil {
				rt.Skip("Crash not enabled")
			}
			seen["crash"]++
			l.crash(p)
		},
		"suspect": func(rt *rapid.T) {
			q := rapid.SampledFrom(l.cfg.Topo.Procs).Draw(rt, "suspect")
			if l.st.Suspected.Has(l.cfg.Topo.ProcIndex(q)) || len(l.live()) == 0 {
				rt.Skip("already suspected")
			}
			seen["suspicion"]++
			l.suspect(q)
		},
		"abort": func(rt *rapid.T) {
			var can [][2]int
			for si := range l.cfg.Snap {
				for qi, q := range l.cfg.Topo.Procs {
					if _, err := model.Abort(l.cfg, l.st, l.cfg.Snap[si], q); err == nil && l.crashed[q] {
						can = append(can, [2]int{si, qi})
					}
				}
			}
			if len(can) == 0 {
				rt.Skip("no abort enabled")
			}
			a := rapid.SampledFrom(can).Draw(rt, "abort")
			seen["abort"]++
			l.abort(l.cfg.Snap[a[0]], l.cfg.Topo.Procs[a[1]])
		},
	})
	l.finish(func(cs []spec.Channel) spec.Channel { return rapid.SampledFrom(cs).Draw(rt, "drain") })
	// The run's log, as markerwave audit reads it, conforms: the
	// replay (faultreplay.go) finds every step enabled in its node's
	// view, and the crashes where the crash rule puts them. The run
	// is drained if a node is left to suspect the crashed ones
	// (with none, the logs cannot tell a crash from a stop).
	l.net.Take()
	tr := l.net.Trace("")
	tr.Header.Drained = len(l.live()) > 0
	tr.Recorded = l.net.RecordedSnapshots()
	if r := Replay(tr, Options{}); !r.OK() {
		var b strings.Builder
		for _, e := range tr.Events {
			fmt.Fprintf(&b, "%s\n", e)
		}
		rt.Fatalf("the audit of the run's log does not conform:\n%s\nthe run's events:\n%s", r, b.String())
	}
	for _, ev := range l.net.Events[before:] {
		if ev.Action == spec.DropMarker {
			seen["marker dropped"]++
		}
	}
}
