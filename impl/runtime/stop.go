package runtime

import (
	"fmt"
	"github.com/markerwave/markerwave/impl/core"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// StopSummary is how a node process stopped when it did not stop
// cleanly: the peers it holds dead, the snapshots it aborted or could not
// finish, the frames lost, and every other problem. RunProcess returns it
// as its error.
type StopSummary struct {
	Node spec.ProcID
	// Dead are the peers suspected when the node stopped (their last
	// suspicion), by id; a peer that had said it was done and then went
	// silent stopped gracefully and is not among them.
	Dead []Fault
	// Aborted are the snapshots the node aborted, in order: those its
	// core aborted (they waited for a suspected peer's marker), those
	// whose saved parts lack a suspected peer's, and those another node
	// aborted (its record in the store; By says who).
	Aborted []spec.AbortVerdict
	// Unfinished names the snapshots that neither completed nor were
	// aborted here, and why, e.g. "snapshot 5: no part from P3 (dead)".
	Unfinished []string
	// Lost counts the algorithm frames to each peer that the transport
	// could not hand over (never acknowledged or never read), e.g.
	// "P3: 12 transfers (total 340), 2 markers".
	Lost []string
	// Refused is the number of transfers the workload did not make
	// because the receiver was suspected (nothing was debited).
	Refused int64
	// HeldBack is the number of times the workload held a transfer back
	// because its receiver had never been heard from (nothing was
	// debited; the transfer is tried again), counting only the receivers
	// still never heard from when the node stopped, HeldFor: peers that
	// may not exist. Attempts held back for a peer heard later (one
	// starting after this node) are not counted.
	HeldBack int64
	HeldFor  []spec.ProcID
	// Problems are the other things that went wrong (node errors,
	// channels stopped by a peer restart, a drain that gave up).
	Problems []string
	// Orphaned, if set, says why the node stopped on its own before it
	// was asked to: a peer suspected for a detection bound (see
	// RunProcess), e.g. "P2 suspected for 1.1s, a crashed node cannot
	// rejoin", or a channel stopped for good.
	Orphaned string
}

func (s *StopSummary) empty() bool {
	return len(s.Dead)+len(s.Aborted)+len(s.Unfinished)+len(s.Lost)+len(s.Problems) == 0 && s.Orphaned == ""
}

// Error is the summary, one item per line.
func (s *StopSummary) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s stopped with failures", string(s.Node))
	if s.Orphaned != "" {
		fmt.Fprintf(&b, "\n  stopped on its own: %s (restart every node from the latest complete snapshot)", s.Orphaned)
	}
	for _, f := range s.Dead {
		fmt.Fprintf(&b, "\n  dead peer %s", deadPeer(f))
	}
	for _, v := range s.Aborted {
		fmt.Fprintf(&b, "\n  %s", s.abortLine(v))
	}
	for _, u := range s.Unfinished {
		fmt.Fprintf(&b, "\n  unfinished %s", u)
	}
	for _, l := range s.Lost {
		fmt.Fprintf(&b, "\n  lost to %s", l)
	}
	if s.Refused > 0 {
		fmt.Fprintf(&b, "\n  %d transfers to suspected peers refused (not debited)", s.Refused)
	}
	if s.HeldBack > 0 {
		fmt.Fprintf(&b, "\n  %d transfers held back: %s never heard from (not debited)", s.HeldBack, heldFor(s.HeldFor))
	}
	for _, p := range s.Problems {
		fmt.Fprintf(&b, "\n  %s", p)
	}
	return b.String()
}

// heldFor names the receivers of held-back transfers: "their receiver
// P2 was", "their receivers P2, P3 were".
func heldFor(peers []spec.ProcID) string {
	if len(peers) == 1 {
		return "their receiver " + string(peers[0]) + " was"
	}
	return "their receivers " + procList(peers) + " were"
}

// abortLine is the summary's line of abort v, naming the node that
// aborted it if another did.
func (s *StopSummary) abortLine(v spec.AbortVerdict) string {
	if v.By != s.Node {
		return fmt.Sprintf("%v (aborted by %s)", v, string(v.By))
	}
	return v.String()
}

// deadPeer names a suspected peer: "P3 (incarnation 1f2e...), nothing
// heard since 12:00:01.250".
func deadPeer(f Fault) string {
	s := string(f.Peer)
	if f.Incarnation != 0 {
		s += fmt.Sprintf(" (incarnation %x)", f.Incarnation)
	}
	return s + ", nothing heard since " + heardSince(f.Since)
}

// onFault logs each suspicion, withdrawal and abort and keeps what the
// summary needs. A suspicion of a peer that did not say it was done also
// aborts the snapshots whose saved parts lack its part (abortWaiting, a
// writer job: queued outside faultMu, which the writer takes).
func (p *process) onFault(f Fault) {
	if f.Action == spec.Abort {
		f.Initiator = p.initiatorOf(f.Snap)
		p.coreAborted(f)
	}
	p.say("%s", f)
	p.metrics.fault(f)
	p.keepFault(f)
	if f.Action == spec.Suspect && !f.Finished {
		p.jobs <- func() { p.abortWaiting(f.Peer) }
	}
}

// keepFault keeps the suspicions held now, and starts the wait after
// which a crashed peer stops this node (orphaned).
func (p *process) keepFault(f Fault) {
	p.faultMu.Lock()
	defer p.faultMu.Unlock()
	switch f.Action {
	case spec.Suspect:
		p.suspects[f.Peer] = f
		if !f.Finished && !f.Since.IsZero() {
			time.AfterFunc(p.cfg.Detector().Bound(), func() { p.orphaned(f) })
		}
	case spec.Unsuspect:
		delete(p.suspects, f.Peer)
	}
}

// onUnheard logs a peer never heard from within the detection bound.
func (p *process) onUnheard(q spec.ProcID, silent time.Duration) {
	grace := max(p.cfg.Detector().Startup, p.cfg.Detector().Timeout)
	p.say("%s unreachable: nothing heard from it in the %v since this node started (not started yet, or down); snapshots wait for its marker; suspected if still silent %v after the start", string(q), silent, grace)
}

// orphaned stops the run on its own if peer f.Peer, heard from before and
// suspected (not after a graceful stop) at f.At, is still suspected one
// detection bound later:
// a crashed node cannot rejoin the running ones, so instead of running on
// without it (every snapshot refused) the survivor stops with its
// summary, and the cluster restarts from its latest complete snapshot
// (markerwave recover). A suspicion withdrawn in time, a graceful stop,
// or a peer never heard from (not started: the node says so and runs to
// its --duration) does not stop it.
func (p *process) orphaned(f Fault) {
	p.faultMu.Lock()
	g, still := p.suspects[f.Peer]
	p.faultMu.Unlock()
	if !still || !g.At.Equal(f.At) || p.stopSelf == nil {
		return
	}
	p.stopOnItsOwn(fmt.Sprintf("%s suspected for %v", string(f.Peer), p.cfg.Detector().Bound()), "a crashed node cannot rejoin")
}

// stopOnItsOwn ends the run early, once, for why (the summary's
// Orphaned): the node cannot go on (a crashed peer cannot rejoin, a
// channel stopped for good cannot resume), so rather than run on with
// every snapshot refused it stops, and the cluster restarts from its
// latest complete snapshot (markerwave recover, or its supervisor).
func (p *process) stopOnItsOwn(why, because string) {
	p.faultMu.Lock()
	first := p.orphan == ""
	if first {
		p.orphan = why + ", " + because
	}
	p.faultMu.Unlock()
	if !first || p.stopSelf == nil {
		return
	}
	p.say("stopping on its own: %s, %s; %s", why, because, p.restartAdvice())
	p.stopSelf()
}

// restartAdvice says who restarts the cluster once the survivors stopped
// on their own (ProcessOptions.Restarter).
func (p *process) restartAdvice() string {
	if p.opt.Restarter != "" {
		return p.opt.Restarter + " restarts every node from the latest complete snapshot"
	}
	return "restart every node from the latest complete snapshot (markerwave recover)"
}

// drainPoll is how often the drain looks at the node.
const drainPoll = 10 * time.Millisecond

// finish is the graceful stop's first half: the node sends no more
// transfers (Finish). It reports whether it could.
func (p *process) finish() bool {
	if err := p.node.Finish(); err != nil {
		p.problems = append(p.problems, fmt.Sprintf("stop: %v", err))
		return false
	}
	return true
}

// drain is the graceful stop's wait, once finished: the node keeps
// delivering until every live in-neighbour has finished too and no
// snapshot is under way here, and that has held for two heartbeats (a
// marker forwarded late may still come); at most the config's drain
// timeout.
func (p *process) drain() {
	p.giveUpUnheard()
	timeout := p.cfg.DrainTimeout()
	linger := 2 * p.cfg.Detector().Interval
	p.say("draining: this node sends no more transfers; waiting up to %v for peers to finish and snapshots under way to complete", timeout)
	start := time.Now()
	var quiet time.Time
	for {
		d, err := p.node.Draining()
		if err != nil {
			p.problems = append(p.problems, fmt.Sprintf("stop: %v", err))
			return
		}
		d.Snaps = p.stillUnderWay(d.Snaps)
		now := time.Now()
		switch {
		case !d.Empty():
			quiet = time.Time{}
		case quiet.IsZero():
			quiet = now
		case now.Sub(quiet) >= linger:
			p.say("drained after %v", now.Sub(start).Round(time.Millisecond))
			return
		}
		if now.Sub(start) > timeout {
			p.gaveUp(d, timeout)
			return
		}
		time.Sleep(drainPoll)
	}
}

// giveUpUnheard suspects, as the stop begins, every in-neighbour never
// heard from: it cannot finish, and the snapshots waiting for its marker
// cannot complete, so they are aborted (the summary names it dead, never
// heard from) instead of holding the stop for the drain timeout.
func (p *process) giveUpUnheard() {
	d, err := p.node.Draining()
	if err != nil {
		return
	}
	for _, q := range d.Unheard {
		if err := p.node.Suspect(q, "never heard from since this node started; the stop does not wait for it"); err != nil {
			p.problems = append(p.problems, fmt.Sprintf("stop: %v", err))
		}
	}
}

// gaveUp notes, when the drain times out, what it still waited for: the
// snapshots under way (for the summary) and, as a problem, why.
func (p *process) gaveUp(d Drain, timeout time.Duration) {
	p.faultMu.Lock()
	p.active = d.Snaps
	p.faultMu.Unlock()
	if d.Empty() {
		return
	}
	var why []string
	if len(d.Peers) > 0 {
		why = append(why, procList(d.Peers)+" not finished and not suspected (alive, or silent for less than the detector's timeout)")
	}
	if len(d.Snaps) > 0 {
		why = append(why, "snapshots "+snapList(d.Snaps)+" still under way here")
	}
	p.problems = append(p.problems, fmt.Sprintf("drain gave up after %v: %s", timeout, strings.Join(why, "; ")))
}

// summary gathers how the process stopped.
func (p *process) summary() *StopSummary {
	p.faultMu.Lock()
	ids := append(slices.Clone(p.active), slices.Collect(maps.Keys(p.waiting))...)
	p.faultMu.Unlock()
	for _, id := range ids {
		p.abortedInStore(id) // another node aborted it: said as aborted, not unfinished
	}
	p.faultMu.Lock()
	defer p.faultMu.Unlock()
	s := &StopSummary{Node: p.self, Refused: p.refused.Load(), Aborted: p.aborted, Problems: p.problems, Orphaned: p.orphan}
	dead := map[spec.ProcID]bool{}
	for _, q := range slices.Sorted(maps.Keys(keySet(p.suspects))) {
		if f := p.suspects[q]; !f.Finished {
			s.Dead = append(s.Dead, f)
			dead[q] = true
		}
	}
	s.HeldBack, s.HeldFor = p.held.neverHeard(s.Dead)
	s.Unfinished = append(p.underWay(), p.partsMissing(dead)...)
	s.Lost = p.lostFrames(dead)
	s.Problems = append(s.Problems, p.broken...)
	if n := p.restarted.Load(); n > 0 {
		s.Problems = append(s.Problems, fmt.Sprintf("%d channels stopped because a peer restarted", n))
	}
	if n := p.nodeErrs.Load(); n > 0 {
		s.Problems = append(s.Problems, fmt.Sprintf("%d node errors", n))
	}
	sort.Strings(s.Problems)
	return s
}

// underWay names the snapshots still under way here when the node
// stopped that it did not abort; p.faultMu must be held.
func (p *process) underWay() []string {
	aborted := map[spec.SnapID]bool{}
	for _, v := range p.aborted {
		aborted[v.Snap] = true
	}
	var out []string
	for _, id := range p.active {
		if !aborted[id] {
			out = append(out, fmt.Sprintf("snapshot %d: still under way here when the node stopped", id))
		}
	}
	return out
}

// lostFrames describes, receiver by receiver, the frames the transport
// could not deliver, noting the receivers that are dead.
func (p *process) lostFrames(dead map[spec.ProcID]bool) []string {
	var out []string
	for _, q := range slices.Sorted(maps.Keys(keySet(p.lost))) {
		l := describeLost(p, p.lost[q])
		if dead[q] {
			l += " (" + string(q) + " dead)"
		}
		out = append(out, string(q)+": "+l)
	}
	return out
}

// partsMissing names the snapshots this node saved a part of that lack
// the part of a dead peer; p.faultMu must be held. A part still missing
// from a live peer is not a failure (that peer saves it when it gets
// there), and a snapshot assembled meanwhile is complete.
func (p *process) partsMissing(dead map[spec.ProcID]bool) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(p.waiting)) {
		_, missing, err := p.opt.Store.LoadParts(p.t, id)
		if err != nil {
			out = append(out, fmt.Sprintf("snapshot %d: %v", id, err))
			continue
		}
		if gone := deadAmong(missing, dead); len(gone) > 0 {
			out = append(out, fmt.Sprintf("snapshot %d: no part from %s (dead)", id, strings.Join(gone, ", ")))
		}
	}
	return out
}

// deadAmong names the processes of ps that are dead.
func deadAmong(ps []spec.ProcID, dead map[spec.ProcID]bool) []string {
	var gone []string
	for _, q := range ps {
		if dead[q] {
			gone = append(gone, string(q))
		}
	}
	return gone
}

// describeLost counts lost frames: "12 transfers (total 340), 2 markers".
func describeLost(p *process, envs []wire.Envelope) string {
	var apps, markers int
	for _, e := range envs {
		switch e.Frame.Kind {
		case wire.KindApp:
			apps++
		case wire.KindMarker:
			markers++
		}
	}
	total := p.lostAmount(envs)
	var parts []string
	if apps > 0 {
		parts = append(parts, fmt.Sprintf("%d transfers (total %d) never acknowledged", apps, total))
	}
	if markers > 0 {
		parts = append(parts, fmt.Sprintf("%d markers never acknowledged", markers))
	}
	return strings.Join(parts, ", ")
}

// lostAmount is the total amount of the application messages among
// envs, as self's application reads them (0 if it cannot be built).
func (p *process) lostAmount(envs []wire.Envelope) int64 {
	a, err := p.cfg.NewApp(p.self)
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range envs {
		if e.Frame.Kind != wire.KindApp {
			continue
		}
		if amt, err := core.AmountOf(a, e.Frame.Payload); err == nil {
			total += amt
		}
	}
	return total
}

func snapList(ids []spec.SnapID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}
