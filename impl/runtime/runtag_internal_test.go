package runtime

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// usedStore is a PartStore that only lists the ids it holds.
type usedStore []spec.SnapID

func (usedStore) SavePart(snapshot.Part) (string, error) { return "", nil }
func (usedStore) LoadParts(*spec.Topology, spec.SnapID) ([]snapshot.Part, []spec.ProcID, error) {
	return nil, nil, nil
}
func (usedStore) Save(snapshot.Global) (string, error) { return "", nil }
func (u usedStore) Used() ([]spec.SnapID, error)       { return u, nil }

// TestRunTagOnRestore: restoring from snapshot from, runTag returns a tag
// whose every id is above from (the restored nodes retire every id up to
// it) and that no id of the store has, from the restoreWindow tags just
// above from's; it fails, saying so, only when all of them are taken. The
// store's ids are drawn to fill the window but for a few tags, anywhere in
// it, so the free ones are the window's edges too.
func TestRunTagOnRestore(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fromTag := rapid.Uint64Range(1, 1<<20).Draw(rt, "from tag")
		from := spec.SnapID(fromTag<<SnapSeqBits | rapid.Uint64Range(1, 1<<SnapSeqBits-1).Draw(rt, "from seq"))
		lo := fromTag + 1
		free := map[uint64]bool{}
		for range rapid.IntRange(0, 3).Draw(rt, "free tags") {
			k := rapid.OneOf(rapid.Just(uint64(0)), rapid.Just(uint64(restoreWindow-1)), rapid.Uint64Range(0, restoreWindow-1)).Draw(rt, "free at")
			free[lo+k] = true
		}
		// The store holds from's own tag and every window tag not free.
		used := usedStore{from}
		for tag := lo; tag < lo+restoreWindow; tag++ {
			if !free[tag] {
				used = append(used, spec.SnapID(tag<<SnapSeqBits|1))
			}
		}
		tag, err := runTag(used, from)
		if len(free) == 0 {
			if err == nil || !strings.Contains(err.Error(), "no free snapshot ids") {
				rt.Fatalf("every tag of the window is taken, runTag returned tag %d, %v; want an error saying so", tag, err)
			}
			return
		}
		if err != nil {
			rt.Fatalf("runTag: %v (free tags %v)", err, free)
		}
		if first := spec.SnapID(tag<<SnapSeqBits | 1); first <= from {
			rt.Fatalf("restoring snapshot %d, runTag picked tag %d: its ids from %d are not above the restored snapshot's", from, tag, first)
		}
		if !free[tag] {
			rt.Fatalf("runTag picked tag %d, which the store holds ids of (free: %v)", tag, free)
		}
	})
}

// TestRunTagFresh: on a fresh start the tag is in [1, freshTags] and not
// one the store holds.
func TestRunTagFresh(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var used usedStore
		taken := map[uint64]bool{}
		for range rapid.IntRange(0, 20).Draw(rt, "ids") {
			tag := rapid.Uint64Range(1, 8).Draw(rt, "tag")
			taken[tag] = true
			used = append(used, spec.SnapID(tag<<SnapSeqBits|rapid.Uint64Range(1, 9).Draw(rt, "seq")))
		}
		tag, err := runTag(used, 0)
		if err != nil {
			rt.Fatal(err)
		}
		if tag < 1 || tag > freshTags || taken[tag] {
			rt.Fatalf("fresh runTag picked %d (taken %v)", tag, taken)
		}
	})
}
