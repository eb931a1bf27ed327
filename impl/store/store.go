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
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// Version is the file format version this build writes and reads.
const Version = 1

const (
	formatSnapshot = "markerwave-snapshot"
	formatPart     = "markerwave-part"
	formatAbort    = "markerwave-abort"
)

// maxHeader bounds the header line, maxBody the body (64 GiB).
const (
	maxHeader = 4096
	maxBody   = 1 << 36
)

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
	// Taken is when the snapshot (a part: the node's part of it) was
	// saved, by the saver's clock, RFC 3339 in UTC; the catalog orders by
	// it, never by a file's modification time, which a copy or a touch
	// changes. Absent in files written before it was recorded.
	Taken  string `json:"taken,omitempty"`
	Length int64  `json:"length"`
	SHA256 string `json:"sha256"`
}

// Store is a directory of snapshot files.
type Store struct {
	dir string
	now func() time.Time
	// syncDir fsyncs a directory (fsyncDir; a test watches it).
	syncDir func(dir string) error
}

// Open returns the store in dir, creating the directory if needed.
func Open(dir string) (*Store, error) {
	if err := mkdirDurably(dir, "", fsyncDir); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Store{dir: dir, now: time.Now, syncDir: fsyncDir}, nil
}

// UseClock makes the store stamp the files it saves with now's time
// instead of the system clock's (tests, replays).
func (s *Store) UseClock(now func() time.Time) { s.now = now }

// taken is the save time recorded in a new file's header.
func (s *Store) taken() string { return s.now().UTC().Format(time.RFC3339Nano) }

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
	return path, writeDurably(path, formatSnapshot, header{Format: formatSnapshot, ID: uint64(g.ID), Taken: s.taken()}, body)
}

// Load reads and checks snapshot id.
func (s *Store) Load(id spec.SnapID) (snapshot.Global, error) {
	return LoadFile(s.Path(id), id)
}

// LoadFile reads and checks a snapshot file; want, if not 0, is the id it
// must hold.
func LoadFile(path string, want spec.SnapID) (snapshot.Global, error) {
	g, _, err := loadFileHeader(path, want)
	return g, err
}

// loadFileHeader is LoadFile, with the file's header (its save time).
func loadFileHeader(path string, want spec.SnapID) (snapshot.Global, header, error) {
	var g snapshot.Global
	h, body, err := readChecked(path, formatSnapshot)
	if err != nil {
		return g, h, err
	}
	if want != 0 && h.ID != uint64(want) {
		return g, h, fmt.Errorf("store: %s: %w: header says snapshot %d, want %d", path, ErrCorrupt, h.ID, want)
	}
	if err := decodeGlobal(body, h, &g); err != nil {
		return g, h, fmt.Errorf("store: %s: %w", path, err)
	}
	return g, h, nil
}

// decodeGlobal decodes body, a snapshot file's, into g, which must be
// the snapshot header h names and valid (ErrCorrupt).
func decodeGlobal(body []byte, h header, g *snapshot.Global) error {
	if err := spec.DecodeStrict(body, g); err != nil {
		return fmt.Errorf("%w: body: %w", ErrCorrupt, err)
	}
	if uint64(g.ID) != h.ID {
		return fmt.Errorf("%w: body holds snapshot %d, header says %d", ErrCorrupt, g.ID, h.ID)
	}
	if err := g.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

// ErrNotAStore is wrapped by Recognize when a directory holds entries
// but none of a store's.
var ErrNotAStore = errors.New("not a snapshot store")

// Recognize reports, without creating or changing anything, whether dir
// can be read as a store: it is one if it is empty or holds at least one
// of a store's entries (a snapshot file snap-<id>.json, the parts
// directory, the catalog file, or a save's temporary file). A directory
// that holds other things only (a mistyped --dir such as /etc) wraps
// ErrNotAStore, naming a few of its entries, so that a listing of it is
// not taken for an empty store.
func Recognize(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	var foreign []string
	for _, e := range ents {
		if isStoreEntry(e) {
			return nil
		}
		foreign = append(foreign, e.Name())
	}
	if len(foreign) == 0 {
		return nil
	}
	shown := foreign[:min(len(foreign), 3)]
	more := ""
	if len(foreign) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(foreign)-len(shown))
	}
	entries := "entries"
	if len(foreign) == 1 {
		entries = "entry"
	}
	return fmt.Errorf("%s is %w: it holds %d %s (%s%s) and none of a store's (snap-<id>.json, parts/, %s)",
		dir, ErrNotAStore, len(foreign), entries, strings.Join(shown, ", "), more, CatalogFileName)
}

// OpenExisting opens the store in dir without creating anything: dir
// must exist, be a directory and be a store (Recognize). A tool that
// reads a store someone named (a listing, a recovery) calls it: a
// directory that is not there, or that holds other things only, is a
// mistake, not an empty store.
func OpenExisting(dir string) (*Store, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no snapshot store at %s: the directory does not exist", dir)
	case err != nil:
		return nil, fmt.Errorf("store: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if err := Recognize(dir); err != nil {
		return nil, err
	}
	return Open(dir)
}

// isStoreEntry is whether e is one of the entries a store writes in its
// directory (Path, PartPath's parts/, CatalogFileName, writeTemp's).
func isStoreEntry(e fs.DirEntry) bool {
	n := e.Name()
	switch {
	case e.IsDir():
		return n == "parts"
	case n == CatalogFileName, snapName.MatchString(n):
		return true
	}
	return strings.HasPrefix(n, ".tmp-snap-") || strings.HasPrefix(n, ".tmp-"+CatalogFileName)
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
	parts, err := s.partIDs()
	if err != nil {
		return nil, err
	}
	seen := map[spec.SnapID]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range parts {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// partIDs are the ids of the snapshots with a parts/<id>/ directory.
func (s *Store) partIDs() ([]spec.SnapID, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "parts"))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("store: %w", err)
	}
	var ids []spec.SnapID
	for _, e := range ents {
		if id, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && id != 0 && e.IsDir() {
			ids = append(ids, spec.SnapID(id))
		}
	}
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
	if err := s.mkdir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return path, writeDurably(path, formatPart, header{Format: formatPart, ID: uint64(p.Snap), Proc: string(p.Node.Proc), Taken: s.taken()}, body)
}

// LoadParts reads the parts of snapshot id present for the processes of
// t, in topology order; missing lists the processes whose part is absent.
// A part file that holds another process's part, or a part of another
// snapshot, is refused (ErrCorrupt).
func (s *Store) LoadParts(t *spec.Topology, id spec.SnapID) (parts []snapshot.Part, missing []spec.ProcID, err error) {
	for _, p := range t.Procs {
		part, err := s.loadPart(id, p)
		switch {
		case errors.Is(err, ErrNotFound):
			missing = append(missing, p)
		case err != nil:
			return nil, nil, err
		default:
			parts = append(parts, part)
		}
	}
	return parts, missing, nil
}

// loadPart reads process p's part of snapshot id, refusing (ErrCorrupt)
// a file that holds another process's part or another snapshot's.
func (s *Store) loadPart(id spec.SnapID, p spec.ProcID) (snapshot.Part, error) {
	part, _, err := s.loadPartHeader(id, p)
	return part, err
}

// loadPartHeader is loadPart, with the file's header (its size, checksum
// and save time).
func (s *Store) loadPartHeader(id spec.SnapID, p spec.ProcID) (snapshot.Part, header, error) {
	var part snapshot.Part
	path := s.PartPath(id, p)
	h, body, err := readChecked(path, formatPart)
	if err != nil {
		return part, h, err
	}
	if err := spec.DecodeStrict(body, &part); err != nil {
		return part, h, fmt.Errorf("store: %s: %w: body: %w", path, ErrCorrupt, err)
	}
	if h.ID != uint64(id) || uint64(part.Snap) != h.ID || part.Node.Proc != p || h.Proc != string(p) {
		return part, h, fmt.Errorf("store: %s: %w: holds %s's part of snapshot %d, want %s's of %d", path, ErrCorrupt, string(part.Node.Proc), part.Snap, string(p), id)
	}
	return part, h, nil
}

// writeDurably writes header h (completed with version, length and
// checksum) and body to path, in order: seal the header; leave an
// existing file alone (same body: done; anything else: ErrExists); write
// and fsync a temporary file beside path; link it into place, which never
// replaces a file; fsync the directory.
func writeDurably(path, format string, h header, body []byte) error {
	line, err := sealHeader(path, h, body)
	if err != nil {
		return err
	}
	if same, err := holds(path, format, body); same || err != nil {
		return err
	}
	tmp, err := writeTemp(path, line, body)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := linkInPlace(tmp, path, format, body); err != nil {
		return err
	}
	return fsyncDir(filepath.Dir(path))
}

// sealHeader completes h for body (version, length, sha256) and encodes
// it as the file's first line, newline included.
func sealHeader(path string, h header, body []byte) ([]byte, error) {
	h.Version, h.Length, h.SHA256 = Version, int64(len(body)), checksum(h.Taken, body)
	line, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("store: %s: encode header: %w", path, err)
	}
	return append(line, '\n'), nil
}

// writeTemp writes line and body to a new temporary file in path's
// directory, fsynced and closed, and returns its name. On error the
// temporary file is removed.
func writeTemp(path string, line, body []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	if err := writeSynced(f, line, body); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("store: write %s: %w", path, err)
	}
	return f.Name(), nil
}

// writeSynced writes chunks to f, fsyncs and closes it.
func writeSynced(f *os.File, chunks ...[]byte) error {
	for _, c := range chunks {
		if _, err := f.Write(c); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// linkInPlace makes the complete file tmp appear at path. A hard link
// fails if path exists, unlike rename, so a concurrent writer's file
// cannot be replaced between holds' check and here; if one appeared, it
// is accepted only if it holds body. Where the file system has no hard
// links, tmp is renamed into place after the same check.
func linkInPlace(tmp, path, format string, body []byte) error {
	err := os.Link(tmp, path)
	if err == nil {
		return nil
	}
	if _, statErr := os.Lstat(path); statErr == nil {
		if same, err := holds(path, format, body); same || err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	return nil
}

// fsyncDir fsyncs directory dir, making the new link durable.
func fsyncDir(dir string) error {
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

// mkdir makes dir, a directory inside the store, durably (mkdirDurably
// below the store's root).
func (s *Store) mkdir(dir string) error { return mkdirDurably(dir, s.dir, s.syncDir) }

// mkdirDurably creates dir and its missing parents, as os.MkdirAll does,
// and fsyncs (with sync) the parent of each directory it creates and of
// each directory strictly below root, created here or not: a file made
// durable in a directory is lost in a crash if the directory's own entry
// in its parent is not, and a directory of a store that several nodes
// share may have been created a moment ago by another that has not
// synced it yet. root "" syncs only what it creates.
func mkdirDurably(dir, root string, sync func(dir string) error) error {
	dir = filepath.Clean(dir) // lexical parents, as MkdirAll's, only once ".." is gone
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	}
	if err == nil && !below(dir, root) {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirDurably(parent, root, sync); err != nil {
			return err
		}
	}
	if err != nil {
		if err := os.Mkdir(dir, 0o755); err != nil {
			// Another writer may have made it since the Stat: its entry
			// is synced below all the same.
			if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
				return err
			}
		}
	}
	return sync(filepath.Dir(dir))
}

// below reports whether dir is strictly inside root (false for root "").
func below(dir, root string) bool {
	if root == "" {
		return false
	}
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// holds reports whether path already holds body: (false, nil) if path
// does not exist, (true, nil) if it holds body, and an error wrapping
// ErrExists if it holds anything else (including a damaged file).
func holds(path, format string, body []byte) (bool, error) {
	_, old, err := readChecked(path, format)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("store: %s: %w, refusing to overwrite it: %w", path, ErrExists, err)
	case !bytes.Equal(old, body):
		return false, fmt.Errorf("store: %s: %w (a %s of another run?); refusing to overwrite it", path, ErrExists, describe(format))
	}
	return true, nil
}

func describe(format string) string {
	switch format {
	case formatPart:
		return "part"
	case formatAbort:
		return "abort record"
	}
	return "snapshot"
}

// readChecked reads path and checks it against format, in order: the
// header line, its fields, the body's length, its checksum. Every error
// but ErrNotFound wraps ErrCorrupt or an I/O error, and names path.
func readChecked(path, format string) (header, []byte, error) {
	f, err := openStored(path)
	if err != nil {
		return header{}, nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, maxHeader)
	line, err := readHeaderLine(r)
	if err != nil {
		return header{}, nil, fmt.Errorf("store: %s: %w", path, err)
	}
	h, err := parseHeader(line, format)
	if err != nil {
		return h, nil, fmt.Errorf("store: %s: %w", path, err)
	}
	body, err := readBody(f, r, h, int64(len(line)))
	if err != nil {
		return h, nil, fmt.Errorf("store: %s: %w", path, err)
	}
	if got := checksum(h.Taken, body); got != h.SHA256 {
		return h, nil, fmt.Errorf("store: %s: %w: checksum mismatch: sha256 %s, header says %s (tampered or damaged)", path, ErrCorrupt, got, h.SHA256)
	}
	return h, body, nil
}

// openStored opens the stored file at path; ErrNotFound if there is none.
func openStored(path string) (*os.File, error) {
	f, err := os.Open(path)
	switch {
	case os.IsNotExist(err):
		return nil, fmt.Errorf("store: %s: %w", path, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("store: %w", err)
	}
	return f, nil
}

// readHeaderLine reads the header line, its newline included.
func readHeaderLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case err == nil:
		return line, nil
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("%w: no header line within %d bytes", ErrCorrupt, maxHeader)
	case errors.Is(err, io.EOF) && len(line) == 0:
		return nil, fmt.Errorf("%w: empty file", ErrCorrupt)
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%w: truncated header (no end of line)", ErrCorrupt)
	}
	return nil, err
}

// parseHeader decodes the header line and checks it: the canonical
// encoding of its fields (so that no byte of it can change unnoticed),
// format, version, a length in range and a lowercase sha256 hex digest.
func parseHeader(line []byte, format string) (header, error) {
	var h header
	text := bytes.TrimSuffix(line, []byte("\n"))
	if err := spec.DecodeStrict(text, &h); err != nil {
		return h, fmt.Errorf("%w: damaged header: %w", ErrCorrupt, err)
	}
	if canon, err := json.Marshal(h); err != nil || !bytes.Equal(canon, text) {
		return h, fmt.Errorf("%w: damaged header: %q is not as written (%s)", ErrCorrupt, text, canon)
	}
	return h, h.check(format)
}

// check checks a decoded header's fields: format, version, a length in
// range and a lowercase sha256 hex digest.
func (h header) check(format string) error {
	switch sum, err := hex.DecodeString(h.SHA256); {
	case h.Format != format:
		return fmt.Errorf("%w: format %q, want %q", ErrCorrupt, h.Format, format)
	case h.Version != Version:
		return fmt.Errorf("%w: format version %d, this build reads version %d", ErrCorrupt, h.Version, Version)
	case h.Taken != "" && !validTaken(h.Taken):
		return fmt.Errorf("%w: header time %q is not an RFC 3339 time in UTC", ErrCorrupt, h.Taken)
	case h.Length < 0 || h.Length > maxBody:
		return fmt.Errorf("%w: header length %d out of range", ErrCorrupt, h.Length)
	case err != nil || len(sum) != sha256.Size || hex.EncodeToString(sum) != h.SHA256:
		return fmt.Errorf("%w: header checksum %q is not a sha256 hex digest (64 lowercase hex digits)", ErrCorrupt, h.SHA256)
	}
	return nil
}

// readBody reads exactly h.Length bytes of body after the header line
// (headerLen bytes) and checks that nothing follows.
func readBody(f *os.File, r *bufio.Reader, h header, headerLen int64) ([]byte, error) {
	if st, err := f.Stat(); err == nil {
		if rest := st.Size() - headerLen; rest < h.Length {
			return nil, fmt.Errorf("%w: truncated: body has %d bytes, header says %d", ErrCorrupt, rest, h.Length)
		}
	}
	body := make([]byte, h.Length)
	if n, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("%w: truncated: body has %d bytes, header says %d", ErrCorrupt, n, h.Length)
	}
	if extra, _ := io.Copy(io.Discard, r); extra > 0 {
		return nil, fmt.Errorf("%w: %d bytes of trailing data after the body", ErrCorrupt, extra)
	}
	return body, nil
}

// validTaken reports whether a header's time is as the store writes it.
func validTaken(s string) bool {
	t, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && t.UTC().Format(time.RFC3339Nano) == s
}

// takenTime is a header's save time; zero if the file predates it.
func (h header) takenTime() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, h.Taken)
	return t
}

// checksum is a file's sha256, hex: of its body, preceded by the header's
// save time and a newline when it records one (so that no byte of the
// time can change unnoticed either).
func checksum(taken string, body []byte) string {
	d := sha256.New()
	if taken != "" {
		d.Write([]byte(taken + "\n"))
	}
	d.Write(body)
	return hex.EncodeToString(d.Sum(nil))
}
