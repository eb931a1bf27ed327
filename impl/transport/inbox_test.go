package transport

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// TestInboxProperty: envelopes pushed by several pushers, one at a time
// and in batches, come out of Take (whatever max, a reader racing the
// pushers and then shut) in each pusher's order, each exactly once, and
// shut returns exactly the rest: per pusher, what the reader took is a
// prefix and what shut lists is the remainder, in order. Take after shut
// reports the inbox closed.
func TestInboxProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := newInbox()
		pushers := rapid.IntRange(1, 3).Draw(t, "pushers")
		plans := make([][]int, pushers) // batch sizes; 0: a single push
		for i := range plans {
			plans[i] = rapid.SliceOfN(rapid.IntRange(0, 300), 0, 12).Draw(t, fmt.Sprintf("plan%d", i))
		}
		maxes := rapid.SliceOfN(rapid.IntRange(-1, 300), 1, 8).Draw(t, "maxes")
		readerQuits := rapid.Bool().Draw(t, "reader quits before shut")

		env := func(p, k int) wire.Envelope {
			return wire.Envelope{Chan: spec.Channel{From: spec.ProcID(fmt.Sprint("P", p)), To: "Q"}, Frame: wire.Frame{Kind: wire.KindApp, Seq: uint64(k)}}
		}
		var pwg sync.WaitGroup
		sent := make([]int, pushers)
		for p, plan := range plans {
			pwg.Add(1)
			go func() {
				defer pwg.Done()
				var batch []wire.Envelope
				for _, n := range plan {
					if n == 0 {
						sent[p]++
						b.push(env(p, sent[p]))
						continue
					}
					for range n {
						sent[p]++
						batch = append(batch, env(p, sent[p]))
					}
					batch = b.pushBatch(batch)
					if len(batch) != 0 {
						panic("pushBatch returned a non-empty slice")
					}
				}
			}()
		}
		var taken []wire.Envelope
		quit := make(chan struct{})
		readerDone := make(chan struct{})
		go func() {
			defer close(readerDone)
			var batch []wire.Envelope
			for i := 0; ; i++ {
				select {
				case <-b.Ready():
				case <-quit:
					return
				}
				var open bool
				batch, open = b.Take(batch, maxes[i%len(maxes)])
				if m := maxes[i%len(maxes)]; m > 0 && len(batch) > m {
					panic(fmt.Sprintf("Take(max %d) returned %d envelopes", m, len(batch)))
				}
				taken = append(taken, batch...)
				if !open {
					return
				}
			}
		}()
		pwg.Wait()
		if readerQuits {
			close(quit)
			<-readerDone
		}
		left := b.shut()
		if !readerQuits {
			<-readerDone
		}
		if batch, open := b.Take(nil, 0); open || len(batch) != 0 {
			t.Fatalf("Take after shut: %d envelopes, open %v", len(batch), open)
		}
		got := make([]int, pushers)
		for _, e := range taken {
			p := int(e.Chan.From[1] - '0')
			got[p]++
			if e.Frame.Seq != uint64(got[p]) {
				t.Fatalf("reader took %s #%d, want #%d: order broken, or an envelope lost or duplicated", e.Chan.From, e.Frame.Seq, got[p])
			}
		}
		for _, e := range left {
			p := int(e.Chan.From[1] - '0')
			got[p]++
			if e.Frame.Seq != uint64(got[p]) {
				t.Fatalf("shut listed %s #%d, want #%d: not the rest of what the reader took", e.Chan.From, e.Frame.Seq, got[p])
			}
		}
		for p := range got {
			if got[p] != sent[p] {
				t.Fatalf("pusher %d pushed %d, reader took and shut listed %d in all", p, sent[p], got[p])
			}
		}
	})
}

// An inbox has one reader at a time: a second Claim fails until Release,
// and a closed inbox cannot be claimed.
func TestInboxClaim(t *testing.T) {
	b := newInbox()
	require.NoError(t, b.Claim())
	require.ErrorIs(t, b.Claim(), ErrInboxClaimed)
	b.Release()
	require.NoError(t, b.Claim(), "claimed again once released")
	b.Release()
	b.shut()
	require.ErrorIs(t, b.Claim(), ErrClosed)
}
