package conformance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
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

// lockstep drives real impl/core nodes (through a Net, which holds the
// in-flight frames of every channel) and the model side by side: every
// implementation step is taken in the model too, and after it the
// abstraction of the nodes and the network must be the model's state.
type lockstep struct {
	t       checker
	name    string // for the failure trace file
	net     *Net
	cfg     *model.Config
	st      *model.State
	budget  map[spec.ProcID]int
	amounts []int64
	steps   int
	failing bool
}

func newLockstep(t checker, name string, net *Net, amounts []int64, budget map[spec.ProcID]int, initiator map[spec.SnapID]spec.ProcID) *lockstep {
	t.Helper()
	k := model.Constants{Topo: net.Topo, InitBal: net.InitBal, Amount: amounts, Budget: budget, Initiator: initiator}
	cfg, err := model.NewConfig(k, model.VariantSpec, Invariants, nil)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	l := &lockstep{t: t, name: name, net: net, cfg: cfg, st: model.Init(cfg), budget: budget, amounts: amounts}
	l.check()
	return l
}

// fail writes the run so far as a trace file that markerwave audit
// replays, and fails the test.
func (l *lockstep) fail(format string, args ...any) {
	l.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if l.failing { // a failure while dumping
		l.t.Fatalf("%s", msg)
	}
	l.failing = true
	path := filepath.Join(FailDir(), strings.NewReplacer("/", "_", " ", "_").Replace(l.name)+".jsonl")
	tr := l.net.Trace("lockstep failure: " + msg)
	tr.Header.Budget = l.budget
	err := os.MkdirAll(FailDir(), 0o755)
	if err == nil {
		err = WriteTraceFile(path, tr)
	}
	if err != nil {
		l.t.Fatalf("after %d steps: %s\n(could not write the trace: %v)", l.steps, msg, err)
	}
	replay := path
	if !filepath.IsAbs(path) {
		replay = filepath.Join("conformance", path) // from the module root
	}
	l.t.Fatalf("after %d steps: %s\nfailing run written to %s\nreplay it: go run ./cmd/markerwave audit %s", l.steps, msg, path, replay)
}

// take has the model take the implementation's step ev.
func (l *lockstep) take(ev spec.Event) {
	l.t.Helper()
	next, d := step(l.cfg, l.st, ev)
	if d == nil {
		d = checkInvariants(l.cfg, next)
	}
	if d != nil {
		l.fail("step %s: %s: %s (model: %s; implementation: %s)", ev, d.Property, d.Detail, d.Expected, d.Reported)
	}
	l.st = next
	l.steps++
}

// send has c.From send a on c if its budget allows; the implementation
// must refuse exactly when the model's SendApp is disabled. It reports
// whether a send was attempted.
func (l *lockstep) send(c spec.Channel, a int64) bool {
	l.t.Helper()
	p := l.cfg.Topo.ProcIndex(c.From)
	if l.st.Proc[p].Sent >= l.cfg.Budget[p] {
		return false
	}
	_, enabled := model.SendApp(l.cfg, l.st, c.From, c.To, a)
	before := l.net.Nodes[c.From].State()
	ev, err := l.net.Send(c.From, c.To, a)
	switch {
	case enabled && err != nil:
		l.fail("SendApp(%s, %s, %d) is enabled in the model (%s), the implementation refused: %v", c.From, c.To, a, fmtLocal(c.From, l.st.Proc[p]), err)
	case !enabled && err == nil:
		l.fail("SendApp(%s, %s, %d) is disabled in the model (%s), the implementation sent: %s", c.From, c.To, a, fmtLocal(c.From, l.st.Proc[p]), ev)
	case !enabled:
		if !errors.Is(err, core.ErrApp) {
			l.fail("SendApp(%s, %s, %d) refused with %v, want an application refusal", c.From, c.To, a, err)
		}
		if after := l.net.Nodes[c.From].State(); after != before {
			l.fail("a refused send changed %s: %v -> %v", c.From, before, after)
		}
		return true
	}
	l.take(ev)
	return true
}

// deliver hands frame i (0: the head) of c to its receiver.
func (l *lockstep) deliver(c spec.Channel, i int) {
	l.t.Helper()
	f := l.net.Queues[c][i]
	ev, err := l.net.DeliverAt(c, i)
	if err != nil {
		l.fail("delivering %s on %s: the implementation refused: %v", f, c, err)
	}
	if want := map[wire.Kind]spec.Action{wire.KindApp: spec.RecvApp, wire.KindMarker: spec.RecvMarker}[f.Kind]; ev.Action != want || ev.Chan() != c {
		l.fail("delivering %s on %s gave event %s", f, c, ev)
	}
	l.take(ev)
}

// initiate has snapshot s's initiator initiate it; the implementation
// must refuse exactly when the model's Initiate(s) is disabled.
func (l *lockstep) initiate(s spec.SnapID) {
	l.t.Helper()
	p := l.cfg.Topo.Procs[l.cfg.Initiator[l.cfg.SnapIndex(s)]]
	_, enabled := model.Initiate(l.cfg, l.st, s)
	ev, err := l.net.Initiate(p, s)
	switch {
	case enabled && err != nil:
		l.fail("Initiate(%d) is enabled in the model, %s refused: %v", s, p, err)
	case !enabled && err == nil:
		l.fail("Initiate(%d) is disabled in the model (%s already recorded), %s initiated again: %s", s, p, p, ev)
	case !enabled:
		if !errors.Is(err, core.ErrDuplicateSnap) {
			l.fail("Initiate(%d) refused with %v, want ErrDuplicateSnap", s, err)
		}
		return
	}
	l.take(ev)
}

// completed counts the local snapshots completed and not yet taken.
func (l *lockstep) completed() int {
	k := 0
	for _, nd := range l.net.Nodes {
		k += len(nd.Completed())
	}
	return k
}

// busy lists the channels with frames in flight.
func (l *lockstep) busy() []spec.Channel {
	var cs []spec.Channel
	for _, c := range l.net.Topo.Chans {
		if len(l.net.Queues[c]) > 0 {
			cs = append(cs, c)
		}
	}
	return cs
}

// check compares the abstraction of the nodes and the network with the
// model: proc, chan, recorded, recProc, recChan, recMsgs, and the ghost
// counters nSent and Len(got) through the nodes' next seqs.
func (l *lockstep) check() {
	l.t.Helper()
	if diff := l.mismatches(); len(diff) > 0 {
		l.fail("the implementation's state is not the model's:\n  %s", strings.Join(diff, "\n  "))
	}
}

func (l *lockstep) mismatches() []string {
	cfg, st, net := l.cfg, l.st, l.net
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for i, p := range cfg.Topo.Procs {
		if got := net.Nodes[p].State(); got != st.Proc[i] {
			bad("proc[%s]: model %+v, implementation %+v", p, st.Proc[i], got)
		}
	}
	for ci, c := range cfg.Topo.Chans {
		var got []model.Msg
		for _, f := range net.Queues[c] {
			switch f.Kind {
			case wire.KindApp:
				amt, err := net.Apps[c.To].Amount(f.Payload)
				if err != nil {
					bad("chan[%s]: frame %s: %v", c, f, err)
				}
				got = append(got, model.AppMsgOf(amt, f.Seq))
			case wire.KindMarker:
				si := cfg.SnapIndex(f.Snap)
				if si < 0 {
					bad("chan[%s]: marker of unknown snapshot %d", c, f.Snap)
				}
				got = append(got, model.MarkerOf(si))
			default:
				bad("chan[%s]: frame of kind %d", c, f.Kind)
			}
		}
		if fmtChan(cfg, got) != fmtChan(cfg, st.Chan[ci]) {
			bad("chan[%s]: model %s, network %s", c, fmtChan(cfg, st.Chan[ci]), fmtChan(cfg, got))
		}
		if ns, _ := net.Nodes[c.From].NextSendSeq(c.To); ns-1 != st.NSent[ci] {
			bad("nSent[%s]: model %d, %s's next send seq %d", c, st.NSent[ci], c.From, ns)
		}
		if nr, _ := net.Nodes[c.To].NextRecvSeq(c.From); nr-1 != uint64(len(st.Got[ci])) {
			bad("Len(got[%s]): model %d, %s's next receive seq %d", c, len(st.Got[ci]), c.To, nr)
		}
	}
	for si, s := range cfg.Snap {
		for i, p := range cfg.Topo.Procs {
			nd := net.Nodes[p]
			ph := nd.Phase(s)
			if rec := ph != core.Unknown; rec != st.Recorded[si].Has(i) {
				bad("recorded[%d]: model has %s: %t, %s is %s", s, p, st.Recorded[si].Has(i), p, ph)
				continue
			}
			if ph == core.Unknown {
				continue
			}
			ls, ok := nd.Recorded(s)
			if ph == core.Released {
				ls, ok = net.Parts[s][p].State, net.Parts[s][p].Proc == p
			}
			if !ok || ls != st.RecProc[si][i] {
				bad("recProc[%d][%s]: model %+v, implementation %+v", s, p, st.RecProc[si][i], ls)
			}
		}
		for ci, c := range cfg.Topo.Chans {
			nd := net.Nodes[c.To]
			status, msgs := core.Idle.String(), []spec.AppMsg(nil)
			switch nd.Phase(s) {
			case core.Unknown:
			case core.Released:
				ls := net.Parts[s][c.To]
				r, ok := ls.Chan(c)
				if !ok {
					bad("recChan[%d][%s]: missing from %s's local snapshot", s, c, c.To)
				}
				status, msgs = r.Status.String(), r.AppMsgs()
			default:
				x, ms, err := nd.ChanState(s, c)
				if err != nil {
					bad("recChan[%d][%s]: %v", s, c, err)
				}
				status, msgs = x.String(), ms
			}
			if want := st.RecChan[si][ci].String(); status != want {
				bad("recChan[%d][%s]: model %s, implementation %s", s, c, want, status)
			}
			if !sameMsgs(msgs, st.RecMsgs[si][ci]) {
				bad("recMsgs[%d][%s]: model %s, implementation %s", s, c, spec.FormatMsgs(st.RecMsgs[si][ci]), spec.FormatMsgs(msgs))
			}
		}
	}
	return out
}

// finish drains the network in lockstep (pick chooses the next channel),
// then checks that every initiated snapshot completed and the run
// properties of CheckRun on the recorded states the nodes report, and
// replays the run (in execution order and merged from the per-process
// logs by vector clocks) with Replay.
func (l *lockstep) finish(pick func([]spec.Channel) spec.Channel) {
	l.t.Helper()
	for cs := l.busy(); len(cs) > 0; cs = l.busy() {
		l.deliver(pick(cs), 0)
		l.check()
	}
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

// genTopology draws a strongly connected topology on P1..Pn: a ring in a
// random order plus random extra channels.
func genTopology(t *rapid.T, n int) *spec.Topology {
	procs := make([]spec.ProcID, n)
	for i := range procs {
		procs[i] = spec.ProcID(fmt.Sprintf("P%d", i+1))
	}
	ring := rapid.Permutation(procs).Draw(t, "ring")
	has := map[spec.Channel]bool{}
	var chans []spec.Channel
	for i := range ring {
		if c := (spec.Channel{From: ring[i], To: ring[(i+1)%n]}); !has[c] {
			has[c] = true
			chans = append(chans, c)
		}
	}
	extra := rapid.IntRange(0, 100).Draw(t, "extra%")
	for _, p := range procs {
		for _, q := range procs {
			c := spec.Channel{From: p, To: q}
			if p != q && !has[c] && rapid.IntRange(0, 99).Draw(t, "edge "+c.String()) < extra {
				has[c] = true
				chans = append(chans, c)
			}
		}
	}
	topo, err := spec.NewTopology(procs, chans)
	if err != nil {
		t.Fatalf("generated topology: %v", err)
	}
	return topo
}

// drawLockstep draws a topology, an application (a bank with random
// balances, or a token ring), budgets and snapshots with initiators.
func drawLockstep(t *rapid.T, name string) *lockstep {
	topo := genTopology(t, rapid.IntRange(2, 6).Draw(t, "procs"))
	budget := map[spec.ProcID]int{}
	for _, p := range topo.Procs {
		budget[p] = rapid.IntRange(0, 40).Draw(t, "budget "+string(p))
	}
	var (
		net     *Net
		err     error
		amounts []int64
	)
	if rapid.IntRange(0, 3).Draw(t, "app") == 0 {
		net, err = NewTokenNet(topo, rapid.SampledFrom(topo.Procs).Draw(t, "holder"))
		amounts = []int64{1}
	} else {
		bal := map[spec.ProcID]int64{}
		for _, p := range topo.Procs {
			bal[p] = rapid.Int64Range(0, 100).Draw(t, "bal "+string(p))
		}
		net, err = NewBankNet(topo, bal)
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
					if p := l.cfg.Topo.ProcIndex(c.From); l.st.Proc[p].Sent < l.cfg.Budget[p] {
						cs = append(cs, c)
					}
				}
				if len(cs) == 0 {
					rt.Skip("every budget spent")
				}
				l.send(rapid.SampledFrom(cs).Draw(rt, "chan"), rapid.SampledFrom(l.amounts).Draw(rt, "amount"))
			},
			"deliver": func(rt *rapid.T) {
				cs := l.busy()
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
				l.net.Take()
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
