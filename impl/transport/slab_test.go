package transport

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/wire"
)

// TestSlabCloneProperty: copies cut from a slab equal their frames, share
// no memory with them, and stay intact while later copies are cut and
// earlier ones are appended to (each copy is capped), for payloads and
// clocks of every size, empty and nil ones included (as wire.Frame.Clone:
// empty becomes nil).
func TestSlabCloneProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s slab
		var orig, copies []wire.Frame
		for range rapid.IntRange(1, 60).Draw(t, "frames") {
			f := wire.Frame{Kind: wire.KindApp, Seq: 1}
			if rapid.Bool().Draw(t, "payload") {
				f.Payload = rapid.SliceOfN(rapid.Byte(), 0, slabBytes).Draw(t, "bytes")
			}
			if rapid.Bool().Draw(t, "clock") {
				f.VC = rapid.SliceOfN(rapid.Uint64(), 0, slabBytes/8).Draw(t, "vc")
			}
			c := s.clone(f)
			want := f.Clone()
			if !want.Equal(c) || (want.Payload == nil) != (c.Payload == nil) || (want.VC == nil) != (c.VC == nil) {
				t.Fatalf("clone %v, want %v", c, want)
			}
			if len(c.Payload) != cap(c.Payload) || len(c.VC) != cap(c.VC) {
				t.Fatalf("copy not capped: payload %d/%d, clock %d/%d", len(c.Payload), cap(c.Payload), len(c.VC), cap(c.VC))
			}
			for i := range f.Payload {
				f.Payload[i]++ // the original changes, the copy must not
			}
			_ = append(c.Payload, 0xEE)
			_ = append(c.VC, 0xEE)
			orig, copies = append(orig, want), append(copies, c)
			for i := range copies {
				if !orig[i].Equal(copies[i]) {
					t.Fatalf("copy %d changed after later copies: %v, want %v", i, copies[i], orig[i])
				}
			}
		}
	})
}

// TestSlabWordsProperty: clocks decoded in place into the slab's free
// words (freeWords, then claimWords) equal the clocks encoded, are
// capped, and stay intact while later clocks are decoded into the same
// chunks and earlier ones are appended to; clocks of every size, the
// empty one included, and a decode that fails midway leaves the earlier
// clocks alone. (frameReader's use of the slab, payloads included, is
// TestFrameReaderProperty's.)
func TestSlabWordsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s slab
		var orig, views []wire.Frame
		for range rapid.IntRange(1, 80).Draw(t, "frames") {
			f := wire.Frame{Kind: wire.KindApp, Seq: 1, Payload: rapid.SliceOfN(rapid.Byte(), 1, 600).Draw(t, "bytes"),
				VC: rapid.SliceOfN(rapid.Uint64(), 0, slabBytes/8+8).Draw(t, "vc")}
			b, err := wire.Encode(f)
			if err != nil {
				t.Fatal(err)
			}
			if rapid.Bool().Draw(t, "fail") {
				_, _, err := wire.DecodeView(b[:len(b)-1], wire.MaxFrameSize, s.freeWords())
				if err == nil {
					t.Fatal("a cut frame decoded")
				}
			}
			d, _, err := wire.DecodeView(b, wire.MaxFrameSize, s.freeWords())
			if err != nil {
				t.Fatal(err)
			}
			v := d
			v.Payload = append([]byte(nil), d.Payload...)
			v.VC = s.claimWords(d.VC)
			clear(b) // the read buffer is reused
			want := f.Clone()
			if !want.Equal(v) || (want.VC == nil) != (v.VC == nil) {
				t.Fatalf("decoded %v, want %v", v, want)
			}
			if len(v.VC) != cap(v.VC) {
				t.Fatalf("clock not capped: %d/%d", len(v.VC), cap(v.VC))
			}
			_ = append(v.Payload, 0xEE)
			_ = append(v.VC, 0xEE)
			orig, views = append(orig, want), append(views, v)
			for i := range views {
				if !orig[i].Equal(views[i]) {
					t.Fatalf("frame %d changed after later frames: %v, want %v", i, views[i], orig[i])
				}
			}
		}
	})
}
