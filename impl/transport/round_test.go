package transport

import (
	"bytes"
	"encoding/binary"
	"testing"

	"pgregory.net/rapid"
)

// testFrame is a frame encoding of size bytes (length prefix included)
// whose body bytes all hold i, so that a view shows which frames it holds.
func testFrame(i, size int) []byte {
	f := bytes.Repeat([]byte{byte(i)}, size)
	binary.BigEndian.PutUint32(f, uint32(size-4))
	return f
}

// TestSendBufRoundProperty: a writer's round is whole frames from the one
// asked for, in order: as many as fit in maxWrite bytes, or that one frame
// alone if it is larger, and no more fit; with acknowledged frames dropped
// from the front in between (whole chunks, parts of one, or everything),
// and the cursor a round ends at being where the next round starts. The
// frames not acknowledged are listed (each) exactly.
func TestSendBufRoundProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s sendBuf
		sizes := rapid.SliceOfN(rapid.OneOf(rapid.IntRange(5, 300), rapid.IntRange(5, 3*maxWrite/2)), 1, 60).Draw(t, "sizes")
		frames := make([][]byte, len(sizes))
		for i, n := range sizes {
			frames[i] = testFrame(i+1, n)
			s.push(frames[i])
		}
		acked := rapid.IntRange(0, len(sizes)).Draw(t, "acked")
		s.drop(uint64(acked))
		if s.pending() != len(sizes)-acked || s.sent() != uint64(len(sizes)) {
			t.Fatalf("after drop(%d) of %d: %d pending, %d sent", acked, len(sizes), s.pending(), s.sent())
		}
		var listed [][]byte
		s.each(func(b []byte) { listed = append(listed, b) })
		if len(listed) != len(sizes)-acked {
			t.Fatalf("each lists %d frames, want %d", len(listed), len(sizes)-acked)
		}
		for j, b := range listed {
			if !bytes.Equal(b, frames[acked+j]) {
				t.Fatalf("each: frame %d is not frame %d's encoding", j, acked+j+1)
			}
		}
		next := uint64(rapid.IntRange(acked+1, len(sizes)+1).Draw(t, "next"))
		cur := s.locate(next)
		for cur.k <= s.sent() {
			bufs, end := s.round(cur, nil)
			var view []byte
			for _, b := range bufs {
				view = append(view, b...)
			}
			want := 0
			for k := cur.k; k < end.k; k++ {
				want += sizes[k-1]
			}
			if end.k <= cur.k || len(view) != want || !bytes.Equal(view, bytes.Join(frames[cur.k-1:end.k-1], nil)) {
				t.Fatalf("round(%d) is %d bytes ending before frame %d, want frames %d..%d, %d bytes", cur.k, len(view), end.k, cur.k, end.k-1, want)
			}
			if end.k > cur.k+1 && len(view) > maxWrite {
				t.Fatalf("round(%d): %d frames, %d bytes > maxWrite", cur.k, end.k-cur.k, len(view))
			}
			if end.k <= s.sent() && len(view)+sizes[end.k-1] <= maxWrite {
				t.Fatalf("round(%d) stops before %d, but frame %d (%d bytes) fits", cur.k, end.k, end.k, sizes[end.k-1])
			}
			cur = end
		}
	})
}

// TestSendBufKeepsTheLastChunk: acknowledging everything keeps the last
// chunk for the frames that follow (no allocation per acknowledgement),
// and a writer's cursor at the acknowledged end still finds them.
func TestSendBufKeepsTheLastChunk(t *testing.T) {
	var s sendBuf
	s.push(testFrame(1, 10))
	end := s.locate(2)
	s.drop(1)
	c := s.chunks[0]
	s.push(testFrame(2, 12))
	if len(s.chunks) != 1 || s.chunks[0] != c {
		t.Fatalf("a push after everything was acknowledged started a new chunk")
	}
	bufs, after := s.round(end, nil)
	if len(bufs) != 1 || !bytes.Equal(bufs[0], testFrame(2, 12)) || after.k != 3 {
		t.Fatalf("round from the acknowledged end: %q up to %d, want frame 2", bufs, after.k-1)
	}
}

// TestSendBufReusesChunksAfterRelease: acknowledged chunks are reused
// for later frames, but not those holding frames of the round a writer
// is writing (hold), even once acknowledged (a receiver acknowledges what
// arrived while the write goes on): the views it writes keep their bytes
// until release; after it the chunks are reused and no new ones are
// made.
func TestSendBufReusesChunksAfterRelease(t *testing.T) {
	var s sendBuf
	const size, perChunk = sendChunkSize / 4, 4
	k := 0
	push := func(n int) {
		for range n {
			k++
			s.push(testFrame(k, size))
		}
	}
	push(3 * perChunk) // frames 1..12 fill chunks 1..3
	first := s.chunks[0]
	cur := s.locate(perChunk + 1) // the writer's round starts at frame 5, chunk 2
	bufs, end := s.round(cur, nil)
	var want []byte
	for i := perChunk + 1; i < int(end.k); i++ {
		want = append(want, testFrame(i, size)...)
	}
	s.hold(cur.k)
	s.drop(uint64(k)) // all acknowledged while the round is written
	if len(s.free) != 1 || s.free[0] != first {
		t.Fatalf("after the drop, %d chunks free, want chunk 1 alone (written before the round)", len(s.free))
	}
	push(3 * perChunk)
	if got := bytes.Join(bufs, nil); !bytes.Equal(got, want) {
		t.Fatalf("the round's views changed while held: frames of the pushes after the drop overwrote them")
	}
	s.release()
	if len(s.free) == 0 {
		t.Fatalf("release freed no chunk")
	}
	s.drop(uint64(k))
	before := len(s.free)
	push(2 * perChunk)
	if len(s.free) != before-2 {
		t.Fatalf("pushing two chunks' worth took %d free chunks, want 2 (reused, not new)", before-len(s.free))
	}
	if s.pending() != 2*perChunk || s.size != 2*perChunk*size {
		t.Fatalf("%d frames, %d bytes pending, want %d, %d", s.pending(), s.size, 2*perChunk, 2*perChunk*size)
	}
}
