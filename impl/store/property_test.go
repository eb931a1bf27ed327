package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/snapshot/snapshottest"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// freshStore opens a store in a new directory under base.
func freshStore(t require.TestingT, base string) *store.Store {
	dir, err := os.MkdirTemp(base, "store-")
	require.NoError(t, err)
	st, err := store.Open(dir)
	require.NoError(t, err)
	return st
}

// noTempFiles asserts that no temporary file is left in dir or below.
func noTempFiles(t require.TestingT, dir string) {
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		assert.False(t, strings.HasPrefix(d.Name(), ".tmp"), "temporary file left behind: %s", path)
		return nil
	}))
}

// Load returns exactly what Save was given, for arbitrary consistent
// snapshots (ids up to 2^64-1, arbitrary process ids, payloads and
// application states); saving it again is a no-op.
func TestSaveLoadRoundTrip(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		st := freshStore(t, base)
		g := snapshottest.Global(5).Draw(t, "g")
		path, err := st.Save(g)
		require.NoError(t, err)
		assert.Equal(t, st.Path(g.ID), path)
		got, err := st.Load(g.ID)
		require.NoError(t, err)
		require.Equal(t, g, got, "Load returns what Save was given")
		got, err = store.LoadFile(path, 0)
		require.NoError(t, err)
		require.Equal(t, g, got, "LoadFile without an expected id")
		again, err := st.Save(g)
		require.NoError(t, err, "saving the same snapshot again is a no-op")
		assert.Equal(t, path, again)
		ids, err := st.List()
		require.NoError(t, err)
		assert.Equal(t, []spec.SnapID{g.ID}, ids)
		noTempFiles(t, st.Dir())
	})
}

// LoadParts returns the saved parts of an arbitrary subset of the
// processes, in topology order, and lists exactly the others as missing.
func TestSavePartsLoadPartsRoundTrip(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		st := freshStore(t, base)
		g := snapshottest.Global(5).Draw(t, "g")
		parts := snapshottest.Parts(g)
		saved := rapid.SliceOfN(rapid.Bool(), len(parts), len(parts)).Draw(t, "saved")
		var want []snapshot.Part
		var missing []spec.ProcID
		for i, p := range parts {
			if !saved[i] {
				missing = append(missing, p.Node.Proc)
				continue
			}
			path, err := st.SavePart(p)
			require.NoError(t, err)
			assert.Equal(t, st.PartPath(g.ID, p.Node.Proc), path)
			want = append(want, p)
		}
		got, gotMissing, err := st.LoadParts(g.Topology, g.ID)
		require.NoError(t, err)
		assert.Equal(t, want, got, "the saved parts, in topology order")
		assert.Equal(t, missing, gotMissing, "exactly the processes whose part was not saved")
		used, err := st.Used()
		require.NoError(t, err)
		if len(want) > 0 {
			assert.Equal(t, []spec.SnapID{g.ID}, used)
		} else {
			assert.Empty(t, used)
		}
		if len(missing) == 0 {
			a, err := snapshot.Assemble(g.Topology, g.ID, got)
			require.NoError(t, err)
			assert.Equal(t, g, a)
		}
		noTempFiles(t, st.Dir())
	})
}

// damage is one corrupted copy of a stored file.
type damage struct {
	what string
	b    []byte
}

// everyDamage lists every truncation of b, one extension, and every
// single-byte change of b by each of masks.
func everyDamage(b []byte, masks ...byte) []damage {
	var ds []damage
	for n := range len(b) {
		ds = append(ds, damage{fmt.Sprintf("truncated to %d of %d bytes", n, len(b)), b[:n]})
	}
	ds = append(ds, damage{"one byte appended", append(slices.Clone(b), '\n')})
	for i := range b {
		for _, m := range masks {
			c := slices.Clone(b)
			c[i] ^= m
			ds = append(ds, damage{fmt.Sprintf("byte %d (%q) xor %#x", i, b[i], m), c})
		}
	}
	return ds
}

// refusesDamage writes each damaged copy to path and checks that load
// refuses it with ErrCorrupt, naming path.
func refusesDamage(t *testing.T, path string, ds []damage, load func() error) {
	t.Helper()
	for _, d := range ds {
		require.NoError(t, os.WriteFile(path, d.b, 0o644))
		err := load()
		if !assert.Error(t, err, "%s: %s accepted", path, d.what) {
			continue
		}
		assert.ErrorIs(t, err, store.ErrCorrupt, d.what)
		assert.Contains(t, err.Error(), path, d.what)
	}
}

// Every truncation and, at every position, a single-byte change (the low
// bit flipped, letter case flipped, all bits flipped) of a stored
// snapshot or part file is refused, naming the file.
// TestArbitraryCorruptionRefused draws any other byte value.
func TestEverySingleByteCorruptionRefused(t *testing.T) {
	for seed := range 1 {
		g := snapshottest.Global(3).Example(seed)
		st := freshStore(t, t.TempDir())
		path, err := st.Save(g)
		require.NoError(t, err)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		refusesDamage(t, path, everyDamage(b, 0x01, 0x20, 0xff), func() error {
			_, err := st.Load(g.ID)
			return err
		})

		p := snapshottest.Parts(g)[0]
		ppath, err := st.SavePart(p)
		require.NoError(t, err)
		pb, err := os.ReadFile(ppath)
		require.NoError(t, err)
		refusesDamage(t, ppath, everyDamage(pb, 0x20), func() error {
			_, _, err := st.LoadParts(g.Topology, g.ID)
			return err
		})
	}
}

// The same for arbitrary snapshots: any byte replaced by any other value,
// or the file cut anywhere.
func TestArbitraryCorruptionRefused(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		st := freshStore(t, base)
		g := snapshottest.Global(4).Draw(t, "g")
		path, err := st.Save(g)
		require.NoError(t, err)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		if rapid.Bool().Draw(t, "truncate") {
			b = b[:rapid.IntRange(0, len(b)-1).Draw(t, "length")]
		} else {
			i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
			old := b[i]
			b[i] = rapid.Byte().Filter(func(c byte) bool { return c != old }).Draw(t, "byte")
		}
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, err = st.Load(g.ID)
		require.Error(t, err)
		assert.ErrorIs(t, err, store.ErrCorrupt)
		assert.Contains(t, err.Error(), path)
	})
}

// A file holding another snapshot or part than its name says (copied or
// renamed by hand) is refused, naming the file and both ids.
func TestLoadRefusesFileUnderAnotherName(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		st := freshStore(t, base)
		g := snapshottest.Global(3).Draw(t, "g")
		path, err := st.Save(g)
		require.NoError(t, err)
		other := spec.SnapID(rapid.Uint64Min(1).Filter(func(id uint64) bool { return id != uint64(g.ID) }).Draw(t, "other"))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(st.Path(other), b, 0o644))
		_, err = st.Load(other)
		require.Error(t, err, "snapshot %d loaded from the file of snapshot %d", other, g.ID)
		assert.ErrorIs(t, err, store.ErrCorrupt)
		assert.Contains(t, err.Error(), st.Path(other))
		assert.Contains(t, err.Error(), fmt.Sprintf("header says snapshot %d, want %d", g.ID, other))

		parts := snapshottest.Parts(g)
		p := parts[0]
		ppath, err := st.SavePart(p)
		require.NoError(t, err)
		pb, err := os.ReadFile(ppath)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(st.PartPath(other, p.Node.Proc)), 0o755))
		require.NoError(t, os.WriteFile(st.PartPath(other, p.Node.Proc), pb, 0o644))
		_, _, err = st.LoadParts(g.Topology, other)
		require.Error(t, err, "a part of snapshot %d loaded as one of %d", g.ID, other)
		assert.Contains(t, err.Error(), st.PartPath(other, p.Node.Proc))
		if len(parts) > 1 {
			q := parts[1].Node.Proc
			require.NoError(t, os.WriteFile(st.PartPath(g.ID, q), pb, 0o644))
			_, _, err = st.LoadParts(g.Topology, g.ID)
			require.Error(t, err, "%s's part loaded as %s's", p.Node.Proc, q)
			assert.Contains(t, err.Error(), fmt.Sprintf("holds %s's part of snapshot %d, want %s's", p.Node.Proc, g.ID, q))
		}
	})
}

// A save never replaces a file holding a different body: the second of
// two arbitrary snapshots (or parts) with one id succeeds iff its body is
// the first's, and otherwise fails with ErrExists naming the file, which
// is left as it was.
func TestSaveNeverOverwritesADifferentBody(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		st := freshStore(t, base)
		topo := snapshottest.Topology(3).Draw(t, "topology")
		a := snapshottest.Over(topo).Draw(t, "a")
		b := snapshottest.Over(topo).Draw(t, "b")
		switch rapid.IntRange(0, 2).Draw(t, "second") {
		case 0: // the same snapshot
			b = a
		case 1: // a body of the same length, one byte apart
			b = a
			b.Nodes = slices.Clone(a.Nodes)
			app := append([]byte{0}, a.Nodes[0].App...)
			b.Nodes[0].App = slices.Clone(app)
			app[0] = 1
			a.Nodes = slices.Clone(a.Nodes)
			a.Nodes[0].App = app
		}
		b.ID = a.ID
		path, err := st.Save(a)
		require.NoError(t, err)
		before, err := os.ReadFile(path)
		require.NoError(t, err)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		_, err = st.Save(b)
		if bytes.Equal(ja, jb) {
			require.NoError(t, err, "same body: a no-op")
		} else {
			require.Error(t, err, "a different body%s was not refused", map[bool]string{true: " of the same length"}[len(ja) == len(jb)])
			require.ErrorIs(t, err, store.ErrExists)
			assert.Contains(t, err.Error(), path)
		}
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, before, after, "the file is untouched")

		pa, pb := snapshottest.Parts(a)[0], snapshottest.Parts(b)[0]
		ppath, err := st.SavePart(pa)
		require.NoError(t, err)
		pbefore, _ := os.ReadFile(ppath)
		jpa, _ := json.Marshal(pa)
		jpb, _ := json.Marshal(pb)
		_, err = st.SavePart(pb)
		if bytes.Equal(jpa, jpb) {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, store.ErrExists)
			assert.Contains(t, err.Error(), ppath)
		}
		pafter, _ := os.ReadFile(ppath)
		assert.Equal(t, pbefore, pafter)
	})
}

// Save refuses a snapshot that does not validate and SavePart a part of
// snapshot 0 or of a malformed process id; nothing is written.
func TestSaveRefusesMalformed(t *testing.T) {
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		st := freshStore(t, base)
		g := snapshottest.Global(3).Draw(t, "g")
		bad := g
		bad.Chans = append([]snapshot.ChanState(nil), g.Chans...)
		if len(bad.Chans) > 0 && rapid.Bool().Draw(t, "channel fault") {
			i := rapid.IntRange(0, len(bad.Chans)-1).Draw(t, "chan")
			bad.Chans[i].NextRecv++
		} else {
			bad.Nodes = bad.Nodes[1:]
		}
		_, err := st.Save(bad)
		require.ErrorContains(t, err, "store: refusing to save")
		_, err = os.Stat(st.Path(g.ID))
		assert.True(t, errors.Is(err, os.ErrNotExist), "nothing written for a refused snapshot")

		p := snapshottest.Parts(g)[0]
		p0 := p
		p0.Snap = 0
		_, err = st.SavePart(p0)
		require.ErrorContains(t, err, "refusing to save a part of snapshot 0")
		proc := spec.ProcID(rapid.String().Draw(t, "proc"))
		p.Node.Proc = proc
		_, err = st.SavePart(p)
		if spec.ValidateProcID(proc) != nil {
			require.ErrorContains(t, err, "refusing to save part")
		} else {
			require.NoError(t, err)
		}
		entries := 0
		require.NoError(t, filepath.WalkDir(st.Dir(), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				entries++
				assert.Equal(t, st.PartPath(g.ID, proc), path, "the only file written is the valid part's")
			}
			return err
		}))
		assert.LessOrEqual(t, entries, 1)
	})
}

// List returns exactly the ids of the snapshots saved, ascending, among
// arbitrary foreign entries (temporary files, directories, names that are
// not snap-<canonical id>.json); Used adds the ids with parts.
func TestListIsExactlyWhatWasStored(t *testing.T) {
	base := t.TempDir()
	tmpl := snapshottest.Over(spec.Ring(2)).Example(0)
	foreign := []string{"notes.txt", "snap-0.json", "snap-01.json", "snap-1.json.tmp", ".tmp-snap-3.json-123",
		"snap-18446744073709551616.json", "snap--1.json", "snap-1.jsonx", "snap-+1.json", "snap- 1.json", "SNAP-1.json", "snap-1.JSON"}
	rapid.Check(t, func(t *rapid.T) {
		st := freshStore(t, base)
		ids := rapid.SliceOfNDistinct(rapid.OneOf(rapid.Uint64Range(1, 50), rapid.Uint64Min(1)), 0, 4, func(id uint64) uint64 { return id }).Draw(t, "ids")
		partIDs := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 60), 0, 3, func(id uint64) uint64 { return id }).Draw(t, "part ids")
		saved := map[uint64]bool{}
		for _, id := range ids {
			g := tmpl
			g.ID = spec.SnapID(id)
			_, err := st.Save(g)
			require.NoError(t, err)
			saved[id] = true
		}
		for _, id := range partIDs {
			p := snapshottest.Parts(tmpl)[0]
			p.Snap = spec.SnapID(id)
			_, err := st.SavePart(p)
			require.NoError(t, err)
		}
		for _, name := range rapid.SliceOfDistinct(rapid.SampledFrom(foreign), func(s string) string { return s }).Draw(t, "foreign files") {
			require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), name), []byte("x"), 0o644))
		}
		for _, id := range rapid.SliceOf(rapid.Uint64Range(1, 60)).Draw(t, "foreign dirs") {
			if !saved[id] {
				require.NoError(t, os.MkdirAll(filepath.Join(st.Dir(), fmt.Sprintf("snap-%d.json", id)), 0o755))
			}
		}
		for _, id := range rapid.SliceOf(rapid.Uint64Range(1, 60)).Draw(t, "symlinks") {
			if !saved[id] {
				_ = os.Symlink("notes.txt", filepath.Join(st.Dir(), fmt.Sprintf("snap-%d.json", id)))
			}
		}
		want := []spec.SnapID{}
		for _, id := range ids {
			want = append(want, spec.SnapID(id))
		}
		slices.Sort(want)
		got, err := st.List()
		require.NoError(t, err)
		assert.Equal(t, want, append([]spec.SnapID{}, got...), "List: the saved ids, ascending, nothing else")

		for _, id := range partIDs {
			if !saved[id] {
				want = append(want, spec.SnapID(id))
				saved[id] = true
			}
		}
		slices.Sort(want)
		used, err := st.Used()
		require.NoError(t, err)
		assert.Equal(t, want, append([]spec.SnapID{}, used...), "Used: the saved ids and those with parts, ascending, once each")
	})
}

// Concurrent savers of one file: all succeed if they save the same body;
// of savers of different bodies exactly one succeeds, the others fail
// with ErrExists, and the file holds the winner's snapshot. Readers
// racing them see no file or the complete one, never a damaged one.
// Savers of different ids all succeed. Run under -race.
func TestConcurrentSavers(t *testing.T) {
	const writers = 8
	base := t.TempDir()
	g := snapshottest.Over(spec.Ring(3)).Example(1)
	for round := range 10 {
		st := freshStore(t, base)
		var wg sync.WaitGroup
		errs := make([]error, writers)
		bodies := make([]snapshot.Global, writers)
		start := make(chan struct{})
		for w := range writers {
			bodies[w] = g
			bodies[w].Nodes = slices.Clone(g.Nodes)
			bodies[w].Nodes[0].App = []byte(fmt.Sprintf("writer %d of round %d", w, round))
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[w] = st.Save(bodies[w])
			}()
		}
		readerErr := make(chan error, 1)
		go func() {
			<-start
			for range 50 {
				if _, err := st.Load(g.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
					readerErr <- err
					return
				}
			}
			readerErr <- nil
		}()
		close(start)
		wg.Wait()
		require.NoError(t, <-readerErr, "a reader saw a partial or damaged file")
		winners := 0
		var winner snapshot.Global
		for w, err := range errs {
			if err == nil {
				winners++
				winner = bodies[w]
				continue
			}
			assert.ErrorIs(t, err, store.ErrExists, "writer %d", w)
			assert.ErrorContains(t, err, st.Path(g.ID))
		}
		require.Equal(t, 1, winners, "round %d: %d of %d concurrent savers of different bodies succeeded, want exactly one (the others overwrote a file)", round, winners, writers)
		got, err := st.Load(g.ID)
		require.NoError(t, err)
		assert.Equal(t, winner, got, "the file holds the winner's snapshot")

		// Same body, and different ids, concurrently.
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[w] = st.Save(winner)
				other := g
				other.ID = g.ID + spec.SnapID(w) + 1
				if _, err := st.Save(other); err != nil {
					errs[w] = err
				}
			}()
		}
		wg.Wait()
		for w, err := range errs {
			assert.NoError(t, err, "writer %d", w)
		}
		ids, err := st.List()
		require.NoError(t, err)
		assert.Len(t, ids, writers+1)
		noTempFiles(t, st.Dir())
	}
}

// A header is read only as the store writes it, byte for byte: a header
// that decodes to the same fields but is spelled otherwise (a space
// after a colon, keys in another order) is refused as not as written,
// naming the file. Single-byte damage is refused by the strict decoding
// and the field checks too (TestEverySingleByteCorruptionRefused); this
// is what only the canonical comparison sees.
func TestHeaderOnlyAsWritten(t *testing.T) {
	g := snapshottest.Global(3).Example(0)
	st := freshStore(t, t.TempDir())
	path, err := st.Save(g)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	head, body, ok := bytes.Cut(b, []byte("\n"))
	require.True(t, ok)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(head, &fields))
	reordered := []byte("{")
	for _, k := range slices.Backward(slices.Sorted(maps.Keys(fields))) {
		if len(reordered) > 1 {
			reordered = append(reordered, ',')
		}
		reordered = append(reordered, strconv.Quote(k)+":"+string(fields[k])...)
	}
	reordered = append(reordered, '}')
	for name, h := range map[string][]byte{
		"a space after a colon": bytes.Replace(head, []byte(`":`), []byte(`": `), 1),
		"keys in another order": reordered,
	} {
		require.NotEqual(t, head, h, name)
		require.NoError(t, os.WriteFile(path, append(append(h, '\n'), body...), 0o644))
		_, err := st.Load(g.ID)
		if assert.ErrorIs(t, err, store.ErrCorrupt, name) {
			assert.Contains(t, err.Error(), "is not as written", name)
			assert.Contains(t, err.Error(), filepath.Base(path), name)
		}
	}
}
