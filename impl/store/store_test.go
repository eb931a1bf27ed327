package store_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// sample is a consistent snapshot of a 3-ring with 30 in flight on P1->P2.
func sample(id spec.SnapID) snapshot.Global {
	topo := spec.Ring(3)
	return snapshot.Global{
		ID: id, Initiator: "P1", Topology: topo,
		Nodes: []snapshot.NodeState{
			{Proc: "P1", App: []byte(`{"bal":70}`), State: spec.LocalState{Bal: 70, Sent: 1}, NextSend: []snapshot.ChanSeq{{Chan: spec.Channel{From: "P1", To: "P2"}, Next: 2}}},
			{Proc: "P2", App: []byte(`{"bal":100}`), State: spec.LocalState{Bal: 100}, NextSend: []snapshot.ChanSeq{{Chan: spec.Channel{From: "P2", To: "P3"}, Next: 1}}},
			{Proc: "P3", App: []byte(`{"bal":100}`), State: spec.LocalState{Bal: 100}, NextSend: []snapshot.ChanSeq{{Chan: spec.Channel{From: "P3", To: "P1"}, Next: 1}}},
		},
		Chans: []snapshot.ChanState{
			{Chan: spec.Channel{From: "P1", To: "P2"}, NextRecv: 1, Msgs: []snapshot.Msg{{Seq: 1, Amt: 30, Payload: []byte("30")}}},
			{Chan: spec.Channel{From: "P2", To: "P3"}, NextRecv: 1},
			{Chan: spec.Channel{From: "P3", To: "P1"}, NextRecv: 1},
		},
	}
}

func TestSaveLoadList(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "snaps"))
	require.NoError(t, err)
	ids, err := st.List()
	require.NoError(t, err)
	assert.Empty(t, ids)
	for _, id := range []spec.SnapID{12, 3, 7} {
		_, err := st.Save(sample(id))
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), "notes.txt"), []byte("x"), 0o644))
	ids, err = st.List()
	require.NoError(t, err)
	assert.Equal(t, []spec.SnapID{3, 7, 12}, ids)
	g, err := st.Load(7)
	require.NoError(t, err)
	want := sample(7)
	assert.Equal(t, want.Abstract(), g.Abstract())
	assert.Equal(t, want.Nodes, g.Nodes)
	assert.Equal(t, want.Chans, g.Chans)
	assert.Equal(t, spec.ProcID("P1"), g.Initiator)
	assert.Equal(t, int64(300), g.Total())
	// no temp files left behind
	ents, _ := os.ReadDir(st.Dir())
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".tmp"), e.Name())
	}
	_, err = st.Load(99)
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func TestSaveRefusesInconsistent(t *testing.T) {
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	g := sample(1)
	g.Chans[0].Msgs = nil // P1 sent seq 1 before its cut, nobody holds it
	_, err = st.Save(g)
	assert.ErrorContains(t, err, "channel P1->P2: 0 messages recorded, but 1 were in flight")
}

// Each kind of damage is refused with an error naming the file and fault.
func TestLoadRefusesDamage(t *testing.T) {
	good := func(t *testing.T) (*store.Store, string, []byte) {
		st, err := store.Open(t.TempDir())
		require.NoError(t, err)
		path, err := st.Save(sample(5))
		require.NoError(t, err)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return st, path, b
	}
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		want   string
	}{
		{"empty", func([]byte) []byte { return nil }, "empty file"},
		{"truncated header", func(b []byte) []byte { return b[:20] }, "truncated header"},
		{"truncated body", func(b []byte) []byte { return b[:len(b)-40] }, "truncated: body has"},
		{"trailing data", func(b []byte) []byte { return append(b, "xx"...) }, "2 bytes of trailing data"},
		{"tampered body", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"amt":30`), []byte(`"amt":90`), 1)
		}, "checksum mismatch"},
		{"flipped bit", func(b []byte) []byte { b[len(b)-5] ^= 1; return b }, "checksum mismatch"},
		{"wrong version", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"version":1`), []byte(`"version":2`), 1)
		}, "format version 2, this build reads version 1"},
		{"wrong format", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`markerwave-snapshot`), []byte(`markerwave-snapsh0t`), 1)
		}, `format "markerwave-snapsh0t"`},
		{"damaged header", func(b []byte) []byte { b[0] = '['; return b }, "damaged header"},
		{"wrong id", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"id":5,"taken"`), []byte(`"id":6,"taken"`), 1)
		}, "header says snapshot 6, want 5"},
		{"bad checksum field", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"sha256":"`), []byte(`"sha256":"zz`), 1)
		}, "not a sha256 hex digest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, path, b := good(t)
			require.NoError(t, os.WriteFile(path, tc.damage(b), 0o644))
			_, err := st.Load(5)
			require.Error(t, err)
			assert.ErrorIs(t, err, store.ErrCorrupt)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A body whose checksum is right but whose content breaks the snapshot's
// rules (e.g. hand-edited, checksum recomputed) is still refused.
func TestLoadRefusesInvalidBody(t *testing.T) {
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	path := st.Path(4)
	_, err = st.Save(sample(4))
	require.NoError(t, err)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	hdr := raw[:bytes.IndexByte(raw, '\n')+1]
	body := raw[len(hdr):]
	bad := bytes.Replace(body, []byte(`"amt":30`), []byte(`"amt":-3`), 1)
	require.NotEqual(t, body, bad)
	hdr = rehash(t, hdr, bad)
	require.NoError(t, os.WriteFile(path, append(hdr, bad...), 0o644))
	_, err = st.Load(4)
	assert.ErrorIs(t, err, store.ErrCorrupt)
	assert.ErrorContains(t, err, "message seq 1 has amount -3")
}

func TestParts(t *testing.T) {
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	g := sample(2)
	topo := g.Topology
	parts := []snapshot.Part{}
	for i, n := range g.Nodes {
		p := snapshot.Part{Snap: 2, Initiated: n.Proc == "P1", Node: n}
		for _, cs := range g.Chans {
			if cs.Chan.To == n.Proc {
				p.In = append(p.In, cs)
			}
		}
		parts = append(parts, p)
		if i < 2 {
			_, err := st.SavePart(p)
			require.NoError(t, err)
		}
	}
	got, missing, err := st.LoadParts(topo, 2)
	require.NoError(t, err)
	assert.Equal(t, []spec.ProcID{"P3"}, missing)
	assert.Len(t, got, 2)
	_, err = st.SavePart(parts[2])
	require.NoError(t, err)
	got, missing, err = st.LoadParts(topo, 2)
	require.NoError(t, err)
	assert.Empty(t, missing)
	a, err := snapshot.Assemble(topo, 2, got)
	require.NoError(t, err)
	assert.Equal(t, g.Abstract(), a.Abstract())
	assert.Equal(t, spec.ProcID("P1"), a.Initiator)

	// a part file under the wrong name is refused
	b, err := os.ReadFile(st.PartPath(2, "P1"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(st.PartPath(2, "P2"), b, 0o644))
	_, _, err = st.LoadParts(topo, 2)
	assert.ErrorContains(t, err, "holds P1's part of snapshot 2, want P2's")
}

// rehash returns hdr with length and sha256 recomputed for body, in the
// header's canonical form (fields in the order the store writes them).
func rehash(t *testing.T, hdr, body []byte) []byte {
	var h struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
		ID      uint64 `json:"id"`
		Proc    string `json:"proc,omitempty"`
		Length  int64  `json:"length"`
		SHA256  string `json:"sha256"`
	}
	require.NoError(t, json.Unmarshal(hdr, &h))
	sum := sha256.Sum256(body)
	h.SHA256 = hex.EncodeToString(sum[:])
	h.Length = int64(len(body))
	out, err := json.Marshal(h)
	require.NoError(t, err)
	return append(out, '\n')
}

// A file is never replaced: saving the same snapshot or part again is a
// no-op, saving a different one under the same id (e.g. from another run
// sharing the directory) fails naming the file and leaves it untouched.
func TestSaveNeverOverwrites(t *testing.T) {
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	path, err := st.Save(sample(5))
	require.NoError(t, err)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	again, err := st.Save(sample(5))
	require.NoError(t, err, "same body: idempotent (two nodes may assemble it)")
	assert.Equal(t, path, again)

	other := sample(5)
	other.Initiator = "P2"
	_, err = st.Save(other)
	assert.ErrorIs(t, err, store.ErrExists)
	assert.ErrorContains(t, err, path)
	assert.ErrorContains(t, err, "refusing to overwrite")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	g := sample(7)
	part := snapshot.Part{Snap: 7, Node: g.Nodes[1], In: []snapshot.ChanState{g.Chans[0]}}
	ppath, err := st.SavePart(part)
	require.NoError(t, err)
	_, err = st.SavePart(part)
	require.NoError(t, err)
	part.Initiated = true
	_, err = st.SavePart(part)
	assert.ErrorIs(t, err, store.ErrExists)
	assert.ErrorContains(t, err, ppath)

	// A damaged file is not replaced either.
	require.NoError(t, os.WriteFile(path, []byte("junk"), 0o644))
	_, err = st.Save(sample(5))
	assert.ErrorIs(t, err, store.ErrExists)
	assert.ErrorContains(t, err, path)

	used, err := st.Used()
	require.NoError(t, err)
	assert.Equal(t, []spec.SnapID{5, 7}, used)
	ents, _ := os.ReadDir(st.Dir())
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".tmp"), e.Name())
	}
}

// TestMkdirDurablySyncsEachNewEntry: every directory the store creates is
// made durable in its parent, from the first one that did not exist
// down; below the store's root, an existing one is synced too (another
// node may have made it a moment ago); above it, an existing one costs no
// sync; a path with ".." is created as MkdirAll creates it; a file in the
// way is an error naming it.
func TestMkdirDurablySyncsEachNewEntry(t *testing.T) {
	root := t.TempDir()
	var synced []string
	sync := func(dir string) error { synced = append(synced, dir); return nil }
	a, b := filepath.Join(root, "a"), filepath.Join(root, "a", "b")
	deep := filepath.Join(root, "a", "b", "c")
	require.NoError(t, store.MkdirDurably(deep, "", sync))
	assert.DirExists(t, deep)
	assert.Equal(t, []string{root, a, b}, synced)

	synced = nil
	require.NoError(t, store.MkdirDurably(deep, "", sync))
	assert.Empty(t, synced, "nothing created, no root: nothing to sync")
	require.NoError(t, store.MkdirDurably(deep, root, sync))
	assert.Equal(t, []string{root, a, b}, synced, "below the root, every entry is synced")

	synced = nil
	require.NoError(t, store.MkdirDurably(filepath.Join(root, "x", "..", "y"), "", sync))
	assert.DirExists(t, filepath.Join(root, "y"))
	assert.NoDirExists(t, filepath.Join(root, "x"))
	assert.Equal(t, []string{root}, synced)

	file := filepath.Join(root, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	err := store.MkdirDurably(filepath.Join(file, "x"), "", sync)
	require.Error(t, err)
	assert.Contains(t, err.Error(), file+": not a directory")
}

// TestSavesSyncTheirDirectories: SavePart and SaveAbort make the entries
// of the directories they save into durable up to the store's root, each
// time (the first save of a snapshot's part creates them; a later one,
// perhaps of another node sharing the store, syncs them all the same),
// and Open those of the root it creates.
func TestSavesSyncTheirDirectories(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "new", "snaps")
	st, err := store.Open(root)
	require.NoError(t, err)
	assert.DirExists(t, root)
	var synced []string
	store.WatchDirSyncs(st, func(dir string) { synced = append(synced, dir) })
	parts, snap := filepath.Join(root, "parts"), filepath.Join(root, "parts", "5")
	for _, p := range []spec.ProcID{"P1", "P2"} {
		synced = nil
		_, err = st.SavePart(snapshot.Part{Snap: 5, Node: snapshot.NodeState{Proc: p}})
		require.NoError(t, err)
		assert.Equal(t, []string{root, parts}, synced, "saving %s's part", p)
	}
	synced = nil
	_, err = st.SaveAbort(spec.AbortVerdict{Snap: 5, By: "P1", Cause: "P2", Initiator: "P1"})
	require.NoError(t, err)
	assert.Equal(t, []string{root, parts, snap}, synced, "saving an abort")
}

// Recognize accepts an empty directory and every directory a store's
// writes leave (each kind of save alone), and refuses one that holds
// other things only, naming them: snapshots --dir /etc must not list "0
// snapshots".
func TestRecognize(t *testing.T) {
	assert.NoError(t, store.Recognize(t.TempDir()), "an empty directory is an empty store")

	g := sample(2)
	writes := map[string]func(st *store.Store) error{
		"Save": func(st *store.Store) error { _, err := st.Save(g); return err },
		"SavePart": func(st *store.Store) error {
			_, err := st.SavePart(snapshot.Part{Snap: 2, Node: g.Nodes[0]})
			return err
		},
		"SaveAbort":    func(st *store.Store) error { _, err := st.SaveAbort(spec.AbortVerdict{Snap: 2, By: "P1"}); return err },
		"WriteCatalog": func(st *store.Store) error { return st.WriteCatalog(g.Topology) },
	}
	for name, write := range writes {
		dir := t.TempDir()
		st, err := store.Open(dir)
		require.NoError(t, err)
		require.NoError(t, write(st), name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644))
		assert.NoError(t, store.Recognize(dir), "after %s, beside a foreign file", name)
	}

	foreign := t.TempDir()
	for _, n := range []string{"passwd", "hosts", "parts", "snap-0.json", ".tmp-other"} {
		require.NoError(t, os.WriteFile(filepath.Join(foreign, n), nil, 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(foreign, "snap-3.json"), 0o755))
	err := store.Recognize(foreign)
	require.ErrorIs(t, err, store.ErrNotAStore)
	assert.EqualError(t, err, foreign+" is not a snapshot store: it holds 6 entries (.tmp-other, hosts, parts and 3 more) and none of a store's (snap-<id>.json, parts/, catalog.json)")

	assert.ErrorContains(t, store.Recognize(filepath.Join(foreign, "absent")), "no such file or directory")
}
