package web

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// memFS is the site as it is served: whole files by slash-separated path
// (fs.ValidPath), read-only, the folders implied by the paths (as
// testing/fstest.MapFS does, which a non-test binary should not link).
type memFS map[string][]byte

// Open opens the file or the implied folder name.
func (m memFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if b, ok := m[name]; ok {
		return &memFile{Reader: bytes.NewReader(b), info: memInfo{name: path.Base(name), size: int64(len(b))}}, nil
	}
	entries := m.entries(name)
	if len(entries) == 0 && name != "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memDir{info: memInfo{name: path.Base(name), dir: true}, entries: entries}, nil
}

// entries lists folder dir's files and folders, sorted by name.
func (m memFS) entries(dir string) []fs.DirEntry {
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	seen := map[string]memInfo{}
	for p, b := range m {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		if first, _, sub := strings.Cut(rest, "/"); sub {
			seen[first] = memInfo{name: first, dir: true}
		} else {
			seen[rest] = memInfo{name: rest, size: int64(len(b))}
		}
	}
	out := make([]fs.DirEntry, 0, len(seen))
	for _, e := range seen {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// memInfo describes a file or folder of a memFS: both its fs.FileInfo and
// its fs.DirEntry.
type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string               { return i.name }
func (i memInfo) Size() int64                { return i.size }
func (i memInfo) ModTime() time.Time         { return time.Time{} }
func (i memInfo) IsDir() bool                { return i.dir }
func (i memInfo) Sys() any                   { return nil }
func (i memInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i memInfo) Info() (fs.FileInfo, error) { return i, nil }

// Mode is read-only: 0444 for a file, 0555 for a folder.
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

// memFile is an open file: its bytes.Reader gives Read, Seek and ReadAt
// (http.FileServer seeks).
type memFile struct {
	*bytes.Reader
	info memInfo
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

// memDir is an open folder, read by ReadDir.
type memDir struct {
	info    memInfo
	entries []fs.DirEntry
	read    int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Close() error               { return nil }

func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: fs.ErrInvalid}
}

// ReadDir returns the next n entries (all that are left if n <= 0), as
// fs.ReadDirFile says: io.EOF at the end only when n > 0.
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	left := d.entries[d.read:]
	if n <= 0 {
		d.read = len(d.entries)
		return left, nil
	}
	if len(left) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(left))
	d.read += n
	return left[:n], nil
}
