package transport

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// newRestoredA and newRestoredB are the restart rig's sender and receiver,
// restored from snapshot from (0: started fresh).
func (r *restartRig) newRestoredA(from spec.SnapID) *TCP {
	return r.start(TCPConfig{
		Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": r.addrB}, Local: []spec.ProcID{"P1"},
		RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond, DrainTimeout: rigDrain,
		Restored: from,
	})
}

func (r *restartRig) newRestoredB(ln net.Listener, from spec.SnapID) *TCP {
	return r.start(TCPConfig{
		Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:1", "P2": r.addrB}, Local: []spec.ProcID{"P2"},
		Listeners: map[spec.ProcID]net.Listener{"P2": ln}, Restored: from,
	})
}

// TestTCPRestoreMismatchRefused: over loopback TCP, nodes restored from
// different snapshots (or one restored, one started fresh) are refused at
// the handshake: both ends fail the channel once, with an error naming
// both snapshot ids, nothing is delivered, the sender does not redial,
// later Sends fail and Close lists the frames. Nodes restored from the
// same snapshot resume as usual.
func TestTCPRestoreMismatchRefused(t *testing.T) {
	for _, c := range []struct {
		sender, receiver spec.SnapID
		says             string
	}{
		{7, 9, "sender P1 was restored from snapshot 7, receiver P2 restored from snapshot 9"},
		{0, 9, "sender P1 was started fresh (restored from no snapshot), receiver P2 restored from snapshot 9"},
		{7, 0, "sender P1 was restored from snapshot 7, receiver P2 started fresh (restored from no snapshot)"},
	} {
		t.Run(fmt.Sprintf("%d-%d", c.sender, c.receiver), func(t *testing.T) {
			checkNoLeak(t)
			r := newRestartRig(t)
			b := r.newRestoredB(r.lnB, c.receiver)
			a := r.newRestoredA(c.sender)
			// The refusal may come back before the second Send, which then
			// fails: count what was taken.
			sent := r.sendUntilRestarted(a, 1, 2)
			require.GreaterOrEqual(t, sent, uint64(1), "the first frame is taken: the channel is dialed on it")
			refusedBeforeDelivery(t, r, a, b, c.sender, c.receiver)
			want := PeerRestartedError{Chan: r.ch, Mismatch: true, SenderFrom: c.sender, ReceiverFrom: c.receiver}

			pr, err := r.restarted(a)
			wantA := want
			wantA.At, wantA.Sent, wantA.Unacked = SideSender, sent, int(sent)
			assert.Equal(t, wantA, *pr)
			assert.Contains(t, err.Error(), "channel P1->P2 stopped: "+c.says)
			assert.Contains(t, err.Error(), "restart every node from one snapshot")
			assert.Equal(t, 0, a.Stats().DialErrors, "no redialling")

			pr, err = r.restarted(b)
			wantB := want
			wantB.At = SideReceiver
			assert.Equal(t, wantB, *pr)
			assert.Contains(t, err.Error(), c.says)
			var ce *ConnError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "handshake", ce.Op)
			assert.Equal(t, 1, b.Stats().Rejected)
			assert.Equal(t, 0, b.Stats().Accepted)
			r.nothing(b)

			require.ErrorIs(t, a.Send(wire.Envelope{Chan: r.ch, Frame: appFrame(r.ch, sent+1)}), ErrPeerRestarted)
			r.closeUnacked(a, 1, sent)
			require.NoError(t, closeBounded(t, b, 5*time.Second))
		})
	}
	t.Run("same-snapshot", func(t *testing.T) {
		checkNoLeak(t)
		r := newRestartRig(t)
		b := r.newRestoredB(r.lnB, 7)
		a := r.newRestoredA(7)
		r.send(a, 1, 2)
		r.recv(b, 1)
		r.recv(b, 2)
		eventually(t, func() bool { return r.acked(a) == 2 }, "frames 1 and 2 acknowledged")
		assert.Equal(t, 0, a.Stats().Failed+b.Stats().Failed+b.Stats().Rejected)
		require.NoError(t, closeBounded(t, a, 5*time.Second))
		require.NoError(t, closeBounded(t, b, 5*time.Second))
	})
}

// refusedBeforeDelivery waits until sender a's channel fails, and fails
// the test at once if receiver b gets a frame first: the handshake let
// nodes restored from different snapshots meet.
func refusedBeforeDelivery(t *testing.T, r *restartRig, a, b *TCP, from, to spec.SnapID) {
	t.Helper()
	in, err := b.Inbox("P2")
	require.NoError(t, err)
	deadline := time.After(5 * time.Second)
	for !hasErr(a, ErrPeerRestarted) {
		if env, ok := takeNext(in, time.After(5*time.Millisecond)); ok {
			t.Fatalf("a sender %s met a receiver %s: the handshake accepted it and %v was delivered", restoredFrom(from), restoredFrom(to), env.Frame)
		}
		select {
		case <-deadline:
			t.Fatalf("no refusal within 5s")
		default:
		}
	}
}
