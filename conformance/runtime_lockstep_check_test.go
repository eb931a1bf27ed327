package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// nodeView is what check reads of one live node, on its goroutine.
type nodeView struct {
	state     spec.LocalState
	suspects  map[spec.ProcID]bool
	phase     map[spec.SnapID]core.Phase
	recording map[spec.SnapID]core.LocalSnapshot
}

func (l *rtLockstep) view(p spec.ProcID) nodeView {
	v := nodeView{suspects: map[spec.ProcID]bool{}, phase: map[spec.SnapID]core.Phase{}, recording: map[spec.SnapID]core.LocalSnapshot{}}
	l.inspect(p, func(cn *core.Node) {
		v.state = cn.State()
		for _, c := range l.cfg.Topo.In(p) {
			v.suspects[c.From] = cn.Suspected(c.From)
		}
		for _, s := range l.cfg.Snap {
			v.phase[s] = cn.Phase(s)
			if ls, ok := cn.Snapshot(s); ok {
				v.recording[s] = ls
			}
		}
	})
	return v
}

// check compares the runtime with the model: every live node's state,
// suspicions and recordings of the snapshots not aborted, and every
// channel's frames.
func (l *rtLockstep) check() {
	l.t.Helper()
	var diffs []string
	bad := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	for i, p := range l.cfg.Topo.Procs {
		if l.crashed[p] {
			continue
		}
		v := l.view(p)
		if v.state != l.st.Proc[i] {
			bad("proc[%s]: model %+v, runtime %+v", p, l.st.Proc[i], v.state)
		}
		for q, s := range v.suspects {
			if s != l.suspectedInModel(q) {
				bad("suspected: the model has %s: %t, %s suspects it: %t", q, l.suspectedInModel(q), p, s)
			}
		}
		l.checkRecordings(i, p, v, bad)
	}
	l.checkChans(bad)
	if len(diffs) > 0 {
		l.t.Fatalf("after %s the runtime is not the model:\n  %s", l.last, strings.Join(diffs, "\n  "))
	}
}

// checkRecordings compares p's recording of every snapshot the model has
// not aborted with the model's recorded, recProc, recChan and recMsgs.
func (l *rtLockstep) checkRecordings(i int, p spec.ProcID, v nodeView, bad func(string, ...any)) {
	for si, s := range l.cfg.Snap {
		ph := v.phase[s]
		switch {
		case model.Aborted(l.st, si):
		case (ph != core.Unknown) != l.st.Recorded[si].Has(i):
			bad("recorded[%d]: the model has %s: %t, %s is %s", s, p, l.st.Recorded[si].Has(i), p, ph)
		case ph == core.Aborted:
			bad("snapshot %d: %s aborted it, the spec has it %s", s, p, l.specVerdict(si))
		case ph == core.Released:
			l.mu.Lock()
			part, ok := l.parts[s][p]
			l.mu.Unlock()
			if !ok || part.Node.State != l.st.RecProc[si][i] || !model.Finished(l.cfg, l.st, si, i) {
				bad("snapshot %d: %s handed out its part (%+v, reported: %t); the model's recProc is %+v, Finished: %t",
					s, p, part.Node.State, ok, l.st.RecProc[si][i], model.Finished(l.cfg, l.st, si, i))
			}
		case ph != core.Unknown:
			l.checkRecording(si, i, p, v.recording[s], bad)
		}
	}
}

// checkRecording compares one snapshot's recording under way at p.
func (l *rtLockstep) checkRecording(si, i int, p spec.ProcID, ls core.LocalSnapshot, bad func(string, ...any)) {
	s := l.cfg.Snap[si]
	if ls.State != l.st.RecProc[si][i] {
		bad("recProc[%d][%s]: model %+v, runtime %+v", s, p, l.st.RecProc[si][i], ls.State)
	}
	for _, c := range l.cfg.Topo.In(p) {
		ci := l.cfg.ChanIndex(c.From, c.To)
		r, _ := ls.Chan(c)
		if r.Status.String() != l.st.RecChan[si][ci].String() || !slices.Equal(r.AppMsgs(), l.st.RecMsgs[si][ci]) {
			bad("recChan/recMsgs[%d][%s]: model %s %s, runtime %s %s", s, c, l.st.RecChan[si][ci], spec.FormatMsgs(l.st.RecMsgs[si][ci]), r.Status, spec.FormatMsgs(r.AppMsgs()))
		}
	}
}

// checkChans compares every channel's frames at the gate with the
// model's, markers of aborted snapshots and control frames aside.
func (l *rtLockstep) checkChans(bad func(string, ...any)) {
	for ci, c := range l.cfg.Topo.Chans {
		var got, want []model.Msg
		for _, env := range l.stepGate.queue(c) {
			switch env.Frame.Kind {
			case wire.KindMarker:
				if si := l.cfg.SnapIndex(env.Frame.Snap); !model.Aborted(l.st, si) {
					got = append(got, model.MarkerOf(si))
				}
			case wire.KindApp:
				amt, err := app.DecodeTransfer(env.Frame.Payload)
				if err != nil {
					bad("chan[%s]: a frame the bank cannot read: %v", c, err)
				}
				got = append(got, model.AppMsgOf(amt, env.Frame.Seq))
			}
		}
		for _, m := range l.st.Chan[ci] {
			if m.Kind != model.KindMarker || !model.Aborted(l.st, m.Snap) {
				want = append(want, m)
			}
		}
		if fmtChan(l.cfg, got) != fmtChan(l.cfg, want) {
			bad("chan[%s]: model %s, runtime %s", c, fmtChan(l.cfg, want), fmtChan(l.cfg, got))
		}
	}
}

// checkDraining compares Draining at live p with the spec: the peers a
// graceful stop waits for are p's in-neighbours that have neither said
// they are done (their done frame handled here) nor are suspected here;
// the snapshots, those p recorded and has not finished (Finished(s, p)),
// of those the spec has not aborted, and of the aborted ones those p
// still records (it aborts only what waits for a peer it hears).
func (l *rtLockstep) checkDraining(p spec.ProcID, done map[spec.Channel]bool) {
	l.t.Helper()
	dr, err := l.nodes[p].Draining()
	if err != nil {
		l.t.Fatalf("Draining at %s: %v", p, err)
	}
	peers, snaps := l.wantDrain(p, done)
	got := slices.Clone(dr.Snaps)
	slices.Sort(got)
	if !slices.Equal(dr.Peers, peers) || !slices.Equal(got, snaps) {
		l.t.Fatalf("after %s: %s's graceful stop waits for peers %v and snapshots %v; the spec's: peers %v (in-neighbours neither done nor suspected), snapshots %v (recorded, not finished)",
			l.last, p, dr.Peers, got, peers, snaps)
	}
	for _, q := range dr.Peers {
		if l.crashed[q] {
			l.seen["drain waits for a crashed peer not yet suspected"]++
		}
	}
	for _, c := range l.cfg.Topo.In(p) {
		if l.suspectedInModel(c.From) && !done[c] {
			l.seen["drain skips a suspected peer"]++
		}
	}
}

// wantDrain is what checkDraining expects at p: the peers, then the
// snapshots, in topology and id order.
func (l *rtLockstep) wantDrain(p spec.ProcID, done map[spec.Channel]bool) (peers []spec.ProcID, snaps []spec.SnapID) {
	for _, c := range l.cfg.Topo.In(p) {
		if !done[c] && !l.suspectedInModel(c.From) {
			peers = append(peers, c.From)
		}
	}
	i, v := l.cfg.Topo.ProcIndex(p), l.view(p)
	for si, s := range l.cfg.Snap {
		aborted := model.Aborted(l.st, si)
		if aborted && v.phase[s] == core.Active {
			l.seen["aborted elsewhere, still recorded here"]++
		}
		if aborted && v.phase[s] == core.Active || !aborted && l.st.Recorded[si].Has(i) && !model.Finished(l.cfg, l.st, si, i) {
			snaps = append(snaps, s)
		}
	}
	return peers, snaps
}

// stop is the graceful stop: every live node finishes (its done frame
// goes out behind what it sent), every frame to a live node is delivered,
// then Draining at every live node must wait for nothing but crashed
// peers not suspected there (none, after the fair end) and the snapshots
// it still records.
func (l *rtLockstep) stop(pick func([]spec.Channel) spec.Channel) {
	l.t.Helper()
	for _, p := range l.live() {
		if err := l.nodes[p].Finish(); err != nil {
			l.t.Fatalf("Finish %s: %v", p, err)
		}
	}
	l.finished = true
	done := map[spec.Channel]bool{}
	for cs := l.busyLive(); len(cs) > 0; cs = l.busyLive() {
		c := pick(cs)
		if q := l.stepGate.queue(c); q[0].Frame.Kind == wire.KindDone {
			done[c] = true
		}
		l.deliver(c)
	}
	for _, p := range l.live() {
		l.checkDraining(p, done)
	}
	l.seen["graceful stop"]++
}

// busyLive lists the channels with frames at the gate whose receiver is
// live.
func (l *rtLockstep) busyLive() []spec.Channel {
	var out []spec.Channel
	for _, c := range l.stepGate.busy() {
		if !l.crashed[c.To] {
			out = append(out, c)
		}
	}
	return out
}

// finish is the fair end of the behaviour (SpecFaults' fairness): every
// crashed process is suspected by the live nodes that hear it, and
// everything in flight to a live node is delivered; the runtime's aborts
// and the Collector's verdicts follow. Then SnapshotsEnd must hold: every
// initiated snapshot is complete or aborted, in the model (whose aborts
// are the runtime's) and in the Collector's verdicts.
func (l *rtLockstep) finish(pick func([]spec.Channel) spec.Channel) {
	l.t.Helper()
	for range 10000 {
		for _, q := range l.cfg.Topo.Procs {
			if l.crashed[q] && !l.suspectedInModel(q) {
				l.suspect(q)
			}
		}
		cs := l.busyLive()
		if len(cs) == 0 {
			break
		}
		l.deliver(pick(cs))
	}
	l.checkEnded()
}

// checkEnded is SnapshotsEnd at the fair end, in the model and in the
// Collector's verdicts.
func (l *rtLockstep) checkEnded() {
	l.t.Helper()
	if si := model.SnapshotEnded(l.cfg, l.st); si >= 0 {
		var why []string
		for _, q := range l.cfg.Topo.Procs {
			if _, err := model.Abort(l.cfg, l.st, l.cfg.Snap[si], q); err == nil {
				why = append(why, fmt.Sprintf("the spec's Abort(%d, %s) is enabled", l.cfg.Snap[si], q))
			}
		}
		l.t.Fatalf("SnapshotsEnd: at the end of a fair run the runtime has neither completed nor aborted snapshot %d (%s)", l.cfg.Snap[si], strings.Join(why, "; "))
	}
	for si, s := range l.cfg.Snap {
		if v, ok := l.verdict[s]; model.Initiated(l.cfg, l.st, si) && !ok {
			l.t.Fatalf("SnapshotsEnd: the Collector gives no verdict on snapshot %d (%s in the spec)", s, l.specVerdict(si))
		} else if ok {
			l.seen["verdict "+v]++
		}
	}
}

// TestRuntimeLockstepFaults: random runs of real runtime nodes (their
// goroutines, the Collector, the detector's suspicion and abort path,
// Finish and Draining) on random strongly connected topologies (rings,
// rings with chords and back-edges, complete graphs), with a crash, true
// and false suspicions and a graceful stop, in lockstep with
// model/faults.go (see rtLockstep). The fixed inputs (checkCovering)
// must reach every kind of step and verdict, on non-complete topologies.
func TestRuntimeLockstepFaults(t *testing.T) {
	checkCovering(t, rtLockstepSeeds, runtimeLockstepFaults,
		"non-complete topology", "detect", "false suspicion", "node abort", "collected complete", "collected aborted",
		"marker of an aborted snapshot", "send to a suspected peer refused", "drain skips a suspected peer",
		"drain waits for a crashed peer not yet suspected", "suspected after its part", "graceful stop")
}

// rtLockstepSeeds is how many fixed inputs TestRuntimeLockstepFaults
// runs.
const rtLockstepSeeds = 40

// runtimeLockstepFaults is one run of TestRuntimeLockstepFaults.
func runtimeLockstepFaults(rt *rapid.T, seen map[string]int, _ string) {
	l := drawRTLockstep(rt, seen)
	defer l.close()
	rt.Repeat(map[string]func(*rapid.T){
		// Deliveries are drawn three times as often as the rest, and
		// crashes and suspicions a quarter as often (rare), so that
		// snapshots get to complete before a fault ends them.
		"send":     l.drawSend,
		"deliver":  l.drawDeliver,
		"deliver2": l.drawDeliver,
		"deliver3": l.drawDeliver,
		"initiate": l.drawInitiate,
		"crash":    rarely(l.drawCrash),
		"suspect":  rarely(l.drawSuspect),
		// A suspicion of a process whose part is in and whose markers
		// all arrived, while the snapshot is pending: WaitsFor is false,
		// so it must not abort the snapshot.
		"suspect finished": l.drawSuspectFinished,
		"draining": func(rt *rapid.T) {
			if live := l.live(); len(live) > 0 {
				l.checkDraining(rapid.SampledFrom(live).Draw(rt, "draining at"), nil)
			}
		},
	})
	pick := func(cs []spec.Channel) spec.Channel { return rapid.SampledFrom(cs).Draw(rt, "drain") }
	l.finish(pick)
	l.stop(pick)
}

// rarely runs f on one draw in four.
func rarely(f func(*rapid.T)) func(*rapid.T) {
	return func(rt *rapid.T) {
		if rapid.IntRange(0, 3).Draw(rt, "rarely") != 0 {
			rt.Skip("not this time")
		}
		f(rt)
	}
}

// drawSuspectFinished suspects a process that no pending snapshot waits
// for although it recorded for one (WaitsFor false), if there is one.
func (l *rtLockstep) drawSuspectFinished(rt *rapid.T) {
	var qs []spec.ProcID
	for qi, q := range l.cfg.Topo.Procs {
		if l.suspectedInModel(q) || len(l.hearers(q)) == 0 {
			continue
		}
		for si := range l.cfg.Snap {
			if model.Pending(l.cfg, l.st, si) && l.st.Recorded[si].Has(qi) && !model.WaitsFor(l.cfg, l.st, si, qi) {
				qs = append(qs, q)
				break
			}
		}
	}
	if len(qs) == 0 {
		rt.Skip("no process has finished its part of a pending snapshot")
	}
	l.seen["suspected after its part"]++
	l.suspect(rapid.SampledFrom(qs).Draw(rt, "suspect finished"))
}

func (l *rtLockstep) drawSend(rt *rapid.T) {
	var cs []spec.Channel
	for _, c := range l.cfg.Topo.Chans {
		// A transfer to a process the spec suspects, from a node that
		// cannot hear it (so cannot know), is not drawn (rtLockstep).
		if !l.crashed[c.From] && (!l.suspectedInModel(c.To) || l.cfg.Topo.HasChan(spec.Channel{From: c.To, To: c.From})) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		rt.Skip("no live sender")
	}
	l.send(rapid.SampledFrom(cs).Draw(rt, "chan"), rapid.SampledFrom(l.amounts).Draw(rt, "amount"))
}

func (l *rtLockstep) drawDeliver(rt *rapid.T) {
	cs := l.busyLive()
	if len(cs) == 0 {
		rt.Skip("nothing in flight to a live node")
	}
	l.deliver(rapid.SampledFrom(cs).Draw(rt, "deliver"))
}

func (l *rtLockstep) drawInitiate(rt *rapid.T) {
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
}

func (l *rtLockstep) drawCrash(rt *rapid.T) {
	p := rapid.SampledFrom(l.cfg.Topo.Procs).Draw(rt, "crash")
	if _, err := model.Crash(l.cfg, l.st, p); err != nil {
		rt.Skip("Crash not enabled")
	}
	l.crash(p)
}

func (l *rtLockstep) drawSuspect(rt *rapid.T) {
	q := rapid.SampledFrom(l.cfg.Topo.Procs).Draw(rt, "suspect")
	if l.suspectedInModel(q) || len(l.hearers(q)) == 0 {
		rt.Skip("already suspected, or no live node hears it")
	}
	l.suspect(q)
}
