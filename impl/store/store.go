// Package store keeps completed global snapshots (and, for multi-process
// clusters, nodes' local parts) on disk, durably and checked.
//
// A file is one header line, then the body:
//
//	{"format":"markerwave-snapshot","version":1,"id":3,"length":1234,"sha256":"..."}
//	<length bytes of JSON body>
//
// Writes go to a temporary file in the same directory, which is fsynced,
// linked into place, and the directory fsynced. A file is never replaced:
// writing a snapshot or part whose file already exists succeeds only if
// the file holds the same body (two nodes may assemble the same snapshot),
// and otherwise fails with ErrExists naming the file. Loads refuse a file whose
// header is damaged, whose version is not this one, whose body is truncated
// or longer than said, whose checksum does not match, or whose body does
// not decode or validate; the error names the file and the fault.
package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// Version is the file format version this build writes and reads.
const Version = 1

const (
	formatSnapshot = "markerwave-snapshot"
	formatPart     = "markerwave-part"
)

// maxHeader bounds the header line.
const maxHeader = 4096

// ErrCorrupt is wrapped by every error about a damaged file.
var ErrCorrupt = errors.New("corrupt snapshot file")

// ErrNotFound is wrapped when no file holds the asked id.
var ErrNotFound = errors.New("snapshot not found")

// ErrExists is wrapped when a save finds the file already holding a
// different snapshot or part (e.g. one of another run): it is not
// overwritten.
var ErrExists = errors.New("file exists with a different body")

type header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	ID      uint64 `json:"id"`
	Proc    string `json:"proc,omitempty"` // parts only
	Length  int64  `json:"length"`
	SHA256  string `json:"sha256"`
}

// Store is a directory of snapshot files.
type Store struct {
	dir string
}

// Open returns the store in dir, creating the directory if needed.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Path is where snapshot id is stored.
func (s *Store) Path(id spec.SnapID) string {
	return filepath.Join(s.dir, fmt.Sprintf("snap-%d.json", id))
}

// PartPath is where p's part of snapshot id is stored.
func (s *Store) PartPath(id spec.SnapID, p spec.ProcID) string {
	return filepath.Join(s.dir, "parts", fmt.Sprintf("%d", id), string(p)+".json")
}

var snapName = regexp.MustCompile(`^snap-([1-9][0-9]{0,19})\.json$`)

// Save writes g durably after validating it, and returns the file's path.
// If the file exists it is left alone: Save succeeds if it holds the same
// snapshot, byte for byte, and otherwise fails with ErrExists.
func (s *Store) Save(g snapshot.Global) (string, error) {
	if err := g.Validate(); err != nil {
		return "", fmt.Errorf("store: refusing to save: %w", err)
	}
	body, err := json.Marshal(g)
	if err != nil {
		return "", fmt.Errorf("store: encode snapshot %d: %w", g.ID, err)
	}
	path := s.Path(g.ID)
	return path, writeDurably(path, formatSnapshot, header{Format: formatSnapshot, ID: uint64(g.ID)}, body)
}

// Load reads and checks snapshot id.
func (s *Store) Load(id spec.SnapID) (snapshot.Global, error) {
	return LoadFile(s.Path(id), id)
}

// LoadFile reads and checks a snapshot file; want, if not 0, is the id it
// must hold.
func LoadFile(path string, want spec.SnapID) (snapshot.Global, error) {
	var g snapshot.Global
	h, body, err := readChecked(path, formatSnapshot)
	if err != nil {
		return g, err
	}
	if want != 0 && h.ID != uint64(want) {
		return g, fmt.Errorf("store: %s: %w: header says snapshot %d, want %d", path, ErrCorrupt, h.ID, want)
	}
	if err := spec.DecodeStrict(body, &g); err != nil {
		return g, fmt.Errorf("store: %s: %w: body: %w", path, ErrCorrupt, err)
	}
	if uint64(g.ID) != h.ID {
		return g, fmt.Errorf("store: %s: %w: body holds snapshot %d, header says %d", path, ErrCorrupt, g.ID, h.ID)
	}
	if err := g.Validate(); err != nil {
		return g, fmt.Errorf("store: %s: %w: %w", path, ErrCorrupt, err)
	}
	return g, nil
}

// List returns the ids of the stored snapshots, ascending. Temporary and
// foreign files are ignored.
func (s *Store) List() ([]spec.SnapID, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	var ids []spec.SnapID
	for _, e := range ents {
		m := snapName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		id, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			continue
		}
		ids = append(ids, spec.SnapID(id))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Used returns every snapshot id the store holds anything of: assembled
// snapshots and parts, ascending. A node that picks new snapshot ids uses
// it to avoid ids of earlier runs.
func (s *Store) Used() ([]spec.SnapID, error) {
	ids, err := s.List()
	if err != nil {
		return nil, err
	}
	seen := map[spec.SnapID]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "parts"))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("store: %w", err)
	}
	for _, e := range ents {
		id, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || id == 0 || !e.IsDir() || seen[spec.SnapID(id)] {
			continue
		}
		seen[spec.SnapID(id)] = true
		ids = append(ids, spec.SnapID(id))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// SavePart writes a node's local part durably. Like Save, it never
// replaces an existing part with a different one (ErrExists).
func (s *Store) SavePart(p snapshot.Part) (string, error) {
	if p.Snap == 0 {
		return "", fmt.Errorf("store: refusing to save a part of snapshot 0")
	}
	if err := spec.ValidateProcID(p.Node.Proc); err != nil {
		return "", fmt.Errorf("store: refusing to save part: %w", err)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("store: encode part: %w", err)
	}
	path := s.PartPath(p.Snap, p.Node.Proc)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return path, writeDurably(path, formatPart, header{Format: formatPart, ID: uint64(p.Snap), Proc: string(p.Node.Proc)}, body)
}

// LoadParts reads the parts of snapshot id present for the processes of
// t; missing lists the processes whose part is absent.
func (s *Store) LoadParts(t *spec.Topology, id spec.SnapID) (parts []snapshot.Part, missing []spec.ProcID, err error) {
	for _, p := range t.Procs {
		path := s.PartPath(id, p)
		h, body, err := readChecked(path, formatPart)
		if errors.Is(err, ErrNotFound) {
			missing = append(missing, p)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var part snapshot.Part
		if err := spec.DecodeStrict(body, &part); err != nil {
			return nil, nil, fmt.Errorf("store: %s: %w: body: %w", path, ErrCorrupt, err)
		}
		if uint64(part.Snap) != h.ID || part.Node.Proc != p || h.Proc != string(p) {
			return nil, nil, fmt.Errorf("store: %s: %w: holds %s's part of snapshot %d, want %s's of %d", path, ErrCorrupt, string(part.Node.Proc), part.Snap, string(p), id)
		}
		parts = append(parts, part)
	}
	return parts, missing, nil
}

// writeDurably writes header h (completed with version, length and
// checksum) and body to path via a synced temporary file, linked into
// place so that an existing file is never replaced. If path exists and
// holds body, it is left as is; if it holds anything else, the error wraps
// ErrExists and names the file.
func writeDurably(path, format string, h header, body []byte) error {
	sum := sha256.Sum256(body)
	h.Version, h.Length, h.SHA256 = Version, int64(len(body)), hex.EncodeToString(sum[:])
	hb, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("store: %s: encode header: %w", path, err)
	}
	if err := sameOrAbsent(path, format, body); err != nil {
		if errors.Is(err, errSame) {
			return nil
		}
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	fail := func(err error) error {
		f.Close()
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	w.Write(hb)
	w.WriteByte('\n')
	w.Write(body)
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	// Link fails if path exists, unlike rename: a concurrent writer of
	// the same file cannot be overwritten between the check and here.
	if err := os.Link(tmp, path); err != nil {
		if _, statErr := os.Lstat(path); statErr == nil {
			if err := sameOrAbsent(path, format, body); err != nil {
				if errors.Is(err, errSame) {
					return nil
				}
				return err
			}
		}
		// No hard links here (some file systems): rename, after the
		// check above.
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("store: write %s: %w", path, err)
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync dir %s: %w", dir, err)
	}
	return nil
}

// errSame is sameOrAbsent's answer when path already holds body.
var errSame = errors.New("same body")

// sameOrAbsent returns nil if path does not exist, errSame if it holds
// body, and an error wrapping ErrExists if it holds anything else
// (including a damaged file).
func sameOrAbsent(path, format string, body []byte) error {
	_, old, err := readChecked(path, format)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("store: %s: %w, refusing to overwrite it: %w", path, ErrExists, err)
	case !bytes.Equal(old, body):
		return fmt.Errorf("store: %s: %w (a %s of another run?); refusing to overwrite it", path, ErrExists, describe(format))
	}
	return errSame
}

func describe(format string) string {
	if format == formatPart {
		return "part"
	}
	return "snapshot"
}

// readChecked reads path and checks its header and body against format.
func readChecked(path, format string) (header, []byte, error) {
	var h header
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return h, nil, fmt.Errorf("store: %s: %w", path, ErrNotFound)
	}
	if err != nil {
		return h, nil, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeader {
			return h, nil, fmt.Errorf("store: %s: %w: no header line within %d bytes", path, ErrCorrupt, maxHeader)
		}
		if errors.Is(err, io.EOF) {
			if len(line) == 0 {
				return h, nil, fmt.Errorf("store: %s: %w: empty file", path, ErrCorrupt)
			}
			return h, nil, fmt.Errorf("store: %s: %w: truncated header (no end of line)", path, ErrCorrupt)
		}
		return h, nil, fmt.Errorf("store: %s: %w", path, err)
	}
	if err := spec.DecodeStrict(bytes.TrimSpace(line), &h); err != nil {
		return h, nil, fmt.Errorf("store: %s: %w: damaged header: %w", path, ErrCorrupt, err)
	}
	if h.Format != format {
		return h, nil, fmt.Errorf("store: %s: %w: format %q, want %q", path, ErrCorrupt, h.Format, format)
	}
	if h.Version != Version {
		return h, nil, fmt.Errorf("store: %s: %w: format version %d, this build reads version %d", path, ErrCorrupt, h.Version, Version)
	}
	if h.Length < 0 || h.Length > 1<<36 {
		return h, nil, fmt.Errorf("store: %s: %w: header length %d out of range", path, ErrCorrupt, h.Length)
	}
	want, err := hex.DecodeString(h.SHA256)
	if err != nil || len(want) != sha256.Size {
		return h, nil, fmt.Errorf("store: %s: %w: header checksum %q is not a sha256 hex digest", path, ErrCorrupt, h.SHA256)
	}
	if st, err := f.Stat(); err == nil {
		if rest := st.Size() - int64(len(line)); rest < h.Length {
			return h, nil, fmt.Errorf("store: %s: %w: truncated: body has %d bytes, header says %d", path, ErrCorrupt, rest, h.Length)
		}
	}
	body := make([]byte, h.Length)
	if n, err := io.ReadFull(r, body); err != nil {
		return h, nil, fmt.Errorf("store: %s: %w: truncated: body has %d bytes, header says %d", path, ErrCorrupt, n, h.Length)
	}
	if extra, _ := io.Copy(io.Discard, r); extra > 0 {
		return h, nil, fmt.Errorf("store: %s: %w: %d bytes of trailing data after the body", path, ErrCorrupt, extra)
	}
	if got := sha256.Sum256(body); !bytes.Equal(got[:], want) {
		return h, nil, fmt.Errorf("store: %s: %w: checksum mismatch: body sha256 %x, header says %s (tampered or damaged)", path, ErrCorrupt, got[:], h.SHA256)
	}
	return h, body, nil
}
