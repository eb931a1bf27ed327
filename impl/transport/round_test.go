package transport

import (
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// TestOutChanRoundProperty: a writer's round is whole frames from the one
// asked for: as many as fit in maxWrite bytes, or that one frame alone if
// it is larger, and no more fit; with acknowledged frames dropped from
// the front of the buffer in between.
func TestOutChanRoundProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := &outChan{}
		o.cond = sync.NewCond(&o.mu)
		sizes := rapid.SliceOfN(rapid.IntRange(5, 3*maxWrite/2), 1, 40).Draw(t, "sizes")
		for i, n := range sizes {
			f := make([]byte, n)
			f[0] = byte(i)
			o.push(f)
		}
		acked := rapid.IntRange(0, len(sizes)-1).Draw(t, "acked")
		o.drop(uint64(acked))
		next := uint64(rapid.IntRange(acked+1, len(sizes)).Draw(t, "next"))
		view, upTo := o.round(next)
		if upTo < next || upTo > o.sent() {
			t.Fatalf("round(%d) up to %d, sent %d", next, upTo, o.sent())
		}
		want := 0
		for k := next; k <= upTo; k++ {
			want += sizes[k-1]
		}
		if len(view) != want || view[0] != byte(next-1) {
			t.Fatalf("round(%d) is %d bytes starting with frame %d, want frames %d..%d, %d bytes", next, len(view), view[0]+1, next, upTo, want)
		}
		if upTo > next && len(view) > maxWrite {
			t.Fatalf("round(%d): %d frames, %d bytes > maxWrite", next, upTo-next+1, len(view))
		}
		if upTo < o.sent() && len(view)+sizes[upTo] <= maxWrite {
			t.Fatalf("round(%d) stops at %d, but frame %d (%d bytes) fits", next, upTo, upTo+1, sizes[upTo])
		}
	})
}
