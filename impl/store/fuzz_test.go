package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/markerwave/markerwave/impl/snapshot/snapshottest"
	"github.com/markerwave/markerwave/impl/store"
)

// FuzzLoadFile: whatever bytes a snapshot file holds, LoadFile does not
// panic; it refuses them with ErrCorrupt naming the file, or returns a
// snapshot that validates and that the store saves and loads back
// unchanged. The seeds are stored files of drawn snapshots and damaged
// copies of them.
func FuzzLoadFile(f *testing.F) {
	dir := f.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	for seed := range 3 {
		g := snapshottest.Global(3).Example(seed)
		path, err := st.Save(g)
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		nl := strings.IndexByte(string(b), '\n')
		f.Add(append(append([]byte(nil), b[:nl+1]...), "{}"...))
	}
	f.Add([]byte{})
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "snap-1.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := store.LoadFile(path, 0)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("refused without ErrCorrupt: %v", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("refusal does not name the file: %v", err)
			}
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("loaded a snapshot that does not validate: %v", err)
		}
		again, err := store.Open(filepath.Join(t.TempDir(), "again"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := again.Save(g); err != nil {
			t.Fatalf("the store refuses to save what it loaded: %v", err)
		}
		back, err := again.Load(g.ID)
		if err != nil {
			t.Fatalf("the store cannot load what it saved: %v", err)
		}
		if !reflect.DeepEqual(back, g) {
			t.Fatalf("round trip of a loaded snapshot changed it:\n%s\n%s", g, back)
		}
	})
}
