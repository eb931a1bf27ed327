package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/spec/spectest"
)

// msgKey names one application message: its channel and seq.
type msgKey struct {
	c   spec.Channel
	seq uint64
}

// TestPropertyRandomRuns drives random schedules of sends, deliveries and
// initiations over random topologies, drains the network, and checks that
// every snapshot completes, conserves money (or the token), and records as
// channel state exactly the messages sent before the sender recorded and
// received after the receiver recorded. Each snapshot is then restored and
// its channel states replayed.
func TestPropertyRandomRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := startRandomRun(t)
		steps := rapid.IntRange(0, 80).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 9).Draw(t, "action") {
			case 0, 1, 2, 3:
				r.send()
			case 4, 5, 6, 7:
				r.deliver()
			default:
				r.initiate()
			}
		}
		r.drain()
		require.Equal(t, r.total, r.n.liveTotal())
		r.checkSnapshots()
		r.checkEvents()
		r.checkRestores()
		r.checkReleased()
	})
}

// randomRun is one case of TestPropertyRandomRuns: the network, the
// snapshots initiated, the messages sent, and which snapshots each
// message's sender had recorded at its send and its receiver at its
// receipt.
type randomRun struct {
	t          *rapid.T
	topo       *spec.Topology
	token      bool // the token ring app, else the bank
	n          *tnet
	total      int64 // the money (or the token) in the system
	sentBefore map[msgKey]map[spec.SnapID]bool
	recvAfter  map[msgKey]map[spec.SnapID]bool
	snaps      []spec.SnapID
	sent       []msgKey
}

// startRandomRun draws a topology and an app with its initial state, and
// builds their network.
func startRandomRun(t *rapid.T) *randomRun {
	nprocs := rapid.IntRange(2, 6).Draw(t, "procs")
	topo := spectest.Topology(t, nprocs)
	token := rapid.Bool().Draw(t, "token ring app")
	r := &randomRun{t: t, topo: topo, token: token,
		sentBefore: map[msgKey]map[spec.SnapID]bool{}, recvAfter: map[msgKey]map[spec.SnapID]bool{}}
	if r.token {
		r.n = newTokenNet(t, topo, rapid.SampledFrom(topo.Procs).Draw(t, "holder"))
		r.total = 1
	} else {
		bal := map[spec.ProcID]int64{}
		for _, p := range topo.Procs {
			bal[p] = rapid.Int64Range(0, 100).Draw(t, "bal "+string(p))
			r.total += bal[p]
		}
		r.n = newBankNet(t, topo, bal)
	}
	return r
}

// recordedSet says, for each snapshot of snaps, whether p has recorded it.
func (r *randomRun) recordedSet(p spec.ProcID, snaps []spec.SnapID) map[spec.SnapID]bool {
	m := map[spec.SnapID]bool{}
	for _, s := range snaps {
		m[s] = r.n.Nodes[p].Phase(s) != core.Unknown
	}
	return m
}

// send draws a sender, a channel and a payload and sends it, checking
// that a send the app refuses changes nothing.
func (r *randomRun) send() {
	t, n := r.t, r.n
	p := rapid.SampledFrom(r.topo.Procs).Draw(t, "sender")
	c := rapid.SampledFrom(r.topo.Out(p)).Draw(t, "send chan")
	payload := app.TokenPayload
	if !r.token {
		payload = app.Transfer(rapid.Int64Range(1, 60).Draw(t, "amount"))
	}
	before := core.Fingerprint(n.Nodes[p], r.snaps...)
	st, err := n.Send(p, c.To, payload)
	if err != nil {
		require.ErrorIs(t, err, core.ErrApp)
		require.Equal(t, before, core.Fingerprint(n.Nodes[p], r.snaps...))
		return
	}
	k := msgKey{c, st.Event.Msg}
	r.sentBefore[k] = r.recordedSet(p, r.snaps)
	r.sent = append(r.sent, k)
}

// deliver draws a channel with frames in flight, if any, and delivers its
// first frame.
func (r *randomRun) deliver() {
	var busy []spec.Channel
	for _, c := range r.topo.Chans {
		if len(r.n.Queues[c]) > 0 {
			busy = append(busy, c)
		}
	}
	if len(busy) == 0 {
		return
	}
	c := rapid.SampledFrom(busy).Draw(r.t, "deliver chan")
	r.deliverOn(c)
}

// deliverOn delivers the first frame in flight on c, noting for an
// application message which snapshots its receiver had recorded.
func (r *randomRun) deliverOn(c spec.Channel) {
	if f := r.n.Queues[c][0]; f.Kind == wire.KindApp {
		r.recvAfter[msgKey{c, f.Seq}] = r.recordedSet(c.To, r.snaps)
	}
	r.n.deliver(c.From, c.To)
}

// initiate draws an initiator and initiates a new snapshot (at most four
// in a run), checking that initiating it again is ErrDuplicateSnap.
func (r *randomRun) initiate() {
	if len(r.snaps) >= 4 {
		return
	}
	p := rapid.SampledFrom(r.topo.Procs).Draw(r.t, "initiator")
	s := spec.SnapID(len(r.snaps) + 1)
	r.snaps = append(r.snaps, s)
	r.n.initiate(p, s)
	_, err := r.n.Nodes[p].Initiate(s)
	require.ErrorIs(r.t, err, core.ErrDuplicateSnap)
}

// drain delivers every frame in flight, recording receipts.
func (r *randomRun) drain() {
	for r.n.InFlight() > 0 {
		for _, c := range r.topo.Chans {
			if len(r.n.Queues[c]) > 0 {
				r.deliverOn(c)
			}
		}
	}
}

// checkSnapshots checks that every snapshot completed, conserves the
// total, sent one marker per channel, and recorded as each channel's
// state exactly the messages sent before the sender recorded and
// received after the receiver recorded.
func (r *randomRun) checkSnapshots() {
	t := r.t
	for _, s := range r.snaps {
		g := r.n.global(s) // fails unless every process completed s
		require.Equal(t, r.total, g.Total(), "snapshot %d: %+v", s, g)
		for _, c := range r.topo.Chans {
			require.Equal(t, 1, r.n.MarkersSent(s, c), "snapshot %d: markers on %s", s, c)
			want := r.wantChanState(s, c)
			got := g.Chans[c]
			require.Len(t, got, len(want), "snapshot %d, channel %s: got %s", s, c, spec.FormatMsgs(got))
			for i := range want {
				require.Equal(t, want[i].Seq, got[i].Seq, "snapshot %d, channel %s: got %s", s, c, spec.FormatMsgs(got))
			}
		}
	}
}

// wantChanState is the state snapshot s must record for c: the messages
// sent on c before their sender recorded s and received after their
// receiver recorded it, in order.
func (r *randomRun) wantChanState(s spec.SnapID, c spec.Channel) []spec.AppMsg {
	var want []spec.AppMsg
	for _, k := range r.sent {
		if k.c == c && !r.sentBefore[k][s] && r.recvAfter[k][s] {
			want = append(want, spec.AppMsg{Seq: k.seq})
		}
	}
	return want
}

// checkEvents checks that every event of the run is valid and that the
// processes' logs merge into one causal order of all of them.
func (r *randomRun) checkEvents() {
	t, n := r.t, r.n
	for _, e := range n.Events {
		require.NoError(t, e.Validate(r.topo))
	}
	merged, err := spec.MergeCausal(r.topo, n.Logs)
	require.NoError(t, err)
	require.Len(t, merged, len(n.Events))
}

// checkRestores takes each snapshot's parts, checks their seqs, and
// restores and replays each snapshot.
func (r *randomRun) checkRestores() {
	r.n.Take()
	for _, s := range r.snaps {
		checkSnapshotSeqs(r.t, r.topo, r.n.Parts[s])
		restoreAndReplay(r.t, r.topo, r.n.Parts[s], r.token, r.total)
	}
}

// checkReleased checks that, taken, every snapshot is released by every
// process and none is active.
func (r *randomRun) checkReleased() {
	for _, p := range r.topo.Procs {
		require.Empty(r.t, core.ActiveSnaps(r.n.Nodes[p]))
		for _, s := range r.snaps {
			require.Equal(r.t, core.Released, r.n.Nodes[p].Phase(s))
		}
	}
}

// checkSnapshotSeqs: on every channel, the sender's next seq at its record
// equals the receiver's next seq at its record plus the recorded messages,
// which are numbered from the receiver's seq without gaps.
func checkSnapshotSeqs(t *rapid.T, topo *spec.Topology, parts map[spec.ProcID]core.LocalSnapshot) {
	for _, c := range topo.Chans {
		from, to := parts[c.From], parts[c.To]
		var next uint64
		for _, cs := range from.NextSend {
			if cs.Chan == c {
				next = cs.Next
			}
		}
		r, ok := to.Chan(c)
		require.True(t, ok)
		require.Equal(t, core.Done, r.Status)
		for i, m := range r.Msgs {
			require.Equal(t, r.NextRecv+uint64(i), m.Seq, "channel %s", c)
		}
		require.Equal(t, next, r.NextRecv+uint64(len(r.Msgs)), "channel %s", c)
	}
}

// restoreAndReplay rebuilds every process from its part of a snapshot,
// re-delivers the recorded channel states, and checks the total and that
// every channel is then in step.
func restoreAndReplay(t *rapid.T, topo *spec.Topology, parts map[spec.ProcID]core.LocalSnapshot, token bool, total int64) {
	nodes := map[spec.ProcID]*core.Node{}
	for _, p := range topo.Procs {
		var a core.App
		if token {
			a = app.NewToken(false)
		} else {
			a, _ = app.NewBank(0)
		}
		ls := parts[p]
		nd, err := core.Restore(core.Config{Topology: topo, Self: p, App: a}, ls.Checkpoint())
		require.NoError(t, err)
		nodes[p] = nd
	}
	for _, p := range topo.Procs {
		for _, r := range parts[p].Chans {
			for _, m := range r.Msgs {
				_, err := nodes[p].Deliver(wire.Envelope{Chan: r.Chan, Frame: wire.Frame{Kind: wire.KindApp, Seq: m.Seq, Payload: m.Payload}})
				require.NoError(t, err)
			}
		}
	}
	var sum int64
	for _, p := range topo.Procs {
		sum += nodes[p].State().Bal
	}
	require.Equal(t, total, sum)
	for _, c := range topo.Chans {
		s, _ := nodes[c.From].NextSendSeq(c.To)
		r, _ := nodes[c.To].NextRecvSeq(c.From)
		require.Equal(t, s, r, "channel %s after replay", c)
	}
}
