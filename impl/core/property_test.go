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
		nprocs := rapid.IntRange(2, 6).Draw(t, "procs")
		topo := spectest.Topology(t, nprocs)
		token := rapid.Bool().Draw(t, "token ring app")
		var n *tnet
		var total int64
		if token {
			n = newTokenNet(t, topo, rapid.SampledFrom(topo.Procs).Draw(t, "holder"))
			total = 1
		} else {
			bal := map[spec.ProcID]int64{}
			for _, p := range topo.Procs {
				bal[p] = rapid.Int64Range(0, 100).Draw(t, "bal "+string(p))
				total += bal[p]
			}
			n = newBankNet(t, topo, bal)
		}

		// Which snapshots had the sender / receiver recorded at each message's
		// send / receipt.
		sentBefore := map[msgKey]map[spec.SnapID]bool{}
		recvAfter := map[msgKey]map[spec.SnapID]bool{}
		recordedSet := func(p spec.ProcID, snaps []spec.SnapID) map[spec.SnapID]bool {
			m := map[spec.SnapID]bool{}
			for _, s := range snaps {
				m[s] = n.Nodes[p].Phase(s) != core.Unknown
			}
			return m
		}
		var snaps []spec.SnapID
		var sent []msgKey

		steps := rapid.IntRange(0, 80).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 9).Draw(t, "action") {
			case 0, 1, 2, 3: // send
				p := rapid.SampledFrom(topo.Procs).Draw(t, "sender")
				c := rapid.SampledFrom(topo.Out(p)).Draw(t, "send chan")
				payload := app.TokenPayload
				if !token {
					payload = app.Transfer(rapid.Int64Range(1, 60).Draw(t, "amount"))
				}
				before := core.Fingerprint(n.Nodes[p], snaps...)
				st, err := n.Send(p, c.To, payload)
				if err != nil {
					require.ErrorIs(t, err, core.ErrApp)
					require.Equal(t, before, core.Fingerprint(n.Nodes[p], snaps...))
					continue
				}
				k := msgKey{c, st.Event.Msg}
				sentBefore[k] = recordedSet(p, snaps)
				sent = append(sent, k)
			case 4, 5, 6, 7: // deliver
				var busy []spec.Channel
				for _, c := range topo.Chans {
					if len(n.Queues[c]) > 0 {
						busy = append(busy, c)
					}
				}
				if len(busy) == 0 {
					continue
				}
				c := rapid.SampledFrom(busy).Draw(t, "deliver chan")
				if f := n.Queues[c][0]; f.Kind == wire.KindApp {
					recvAfter[msgKey{c, f.Seq}] = recordedSet(c.To, snaps)
				}
				n.deliver(c.From, c.To)
			default: // initiate
				if len(snaps) >= 4 {
					continue
				}
				p := rapid.SampledFrom(topo.Procs).Draw(t, "initiator")
				s := spec.SnapID(len(snaps) + 1)
				snaps = append(snaps, s)
				n.initiate(p, s)
				_, err := n.Nodes[p].Initiate(s)
				require.ErrorIs(t, err, core.ErrDuplicateSnap)
			}
		}
		// Drain, recording receipts.
		for n.InFlight() > 0 {
			for _, c := range topo.Chans {
				if len(n.Queues[c]) > 0 {
					if f := n.Queues[c][0]; f.Kind == wire.KindApp {
						recvAfter[msgKey{c, f.Seq}] = recordedSet(c.To, snaps)
					}
					n.deliver(c.From, c.To)
				}
			}
		}
		require.Equal(t, total, n.liveTotal())

		for _, s := range snaps {
			g := n.global(s) // fails unless every process completed s
			require.Equal(t, total, g.Total(), "snapshot %d: %+v", s, g)
			for _, c := range topo.Chans {
				require.Equal(t, 1, n.MarkersSent(s, c), "snapshot %d: markers on %s", s, c)
				var want []spec.AppMsg
				for _, k := range sent {
					if k.c == c && !sentBefore[k][s] && recvAfter[k][s] {
						want = append(want, spec.AppMsg{Seq: k.seq})
					}
				}
				got := g.Chans[c]
				require.Len(t, got, len(want), "snapshot %d, channel %s: got %s", s, c, spec.FormatMsgs(got))
				for i := range want {
					require.Equal(t, want[i].Seq, got[i].Seq, "snapshot %d, channel %s: got %s", s, c, spec.FormatMsgs(got))
				}
			}
		}
		for _, e := range n.Events {
			require.NoError(t, e.Validate(topo))
		}
		merged, err := spec.MergeCausal(topo, n.Logs)
		require.NoError(t, err)
		require.Len(t, merged, len(n.Events))

		n.Take()
		for _, s := range snaps {
			checkSnapshotSeqs(t, topo, n.Parts[s])
			restoreAndReplay(t, topo, n.Parts[s], token, total)
		}
		for _, p := range topo.Procs {
			require.Empty(t, core.ActiveSnaps(n.Nodes[p]))
			for _, s := range snaps {
				require.Equal(t, core.Released, n.Nodes[p].Phase(s))
			}
		}
	})
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
