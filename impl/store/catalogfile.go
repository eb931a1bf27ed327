package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// CatalogFileName is the operator mode's catalog file, in the store's
// directory: the snapshots a cluster can recover from, as WriteCatalog
// last recorded them.
const CatalogFileName = "catalog.json"

// Record is the catalog's account of one snapshot the cluster can recover
// from: its id, when it was taken (its own record) and each node's part
// file (size and checksum). The operator mode keeps these in the catalog
// file, the supervised mode in etcd.
type Record struct {
	ID    spec.SnapID `json:"id"`
	Taken time.Time   `json:"taken"`
	Parts []PartFile  `json:"parts"`
}

// catalogFile is the catalog file's content.
type catalogFile struct {
	Format    string   `json:"format"`
	Version   int      `json:"version"`
	Snapshots []Record `json:"snapshots"`
}

const formatCatalog = "markerwave-catalog"

// Records are the snapshots of the store the cluster of topology t can
// recover from (complete at every node), oldest first.
func (s *Store) Records(t *spec.Topology) ([]Record, error) {
	entries, err := s.Catalog(t)
	if err != nil {
		return nil, err
	}
	rs := []Record{}
	for _, e := range entries {
		if r, ok := e.record(t); ok {
			rs = append(rs, r)
		}
	}
	return rs, nil
}

// RecordOf is Records' record of snapshot id alone; false if the
// cluster of t cannot recover from it (not, or not yet, complete at
// every node, or damaged).
func (s *Store) RecordOf(t *spec.Topology, id spec.SnapID) (Record, bool, error) {
	e, err := s.entry(t, id)
	if err != nil {
		return Record{}, false, err
	}
	r, ok := e.record(t)
	return r, ok, nil
}

// record is e's catalog record, if the cluster of t can recover from it.
func (e Entry) record(t *spec.Topology) (Record, bool) {
	if len(e.unusable(t)) > 0 {
		return Record{}, false
	}
	return Record{ID: e.ID, Taken: e.Time, Parts: e.Files}, true
}

// WriteCatalog records the store's recoverable snapshots (Records) in
// its catalog file, replacing it whole: a temporary file, fsynced, renamed
// into place, the directory fsynced. Concurrent writers each write a
// complete catalog of what they saw.
func (s *Store) WriteCatalog(t *spec.Topology) error {
	rs, err := s.Records(t)
	if err != nil {
		return err
	}
	body, err := json.MarshalIndent(catalogFile{Format: formatCatalog, Version: Version, Snapshots: rs}, "", "  ")
	if err != nil {
		return fmt.Errorf("store: encode catalog: %w", err)
	}
	path := filepath.Join(s.dir, CatalogFileName)
	tmp, err := writeTemp(path, append(body, '\n'), nil)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	return s.syncDir(s.dir)
}

// ReadCatalog reads the catalog file; ErrNotFound if there is none, an
// error naming the file if it does not decode.
func (s *Store) ReadCatalog() ([]Record, error) {
	path := filepath.Join(s.dir, CatalogFileName)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("store: %s: %w", path, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("store: %w", err)
	}
	var c catalogFile
	if err := spec.DecodeStrict(bytes.TrimSpace(b), &c); err != nil || c.Format != formatCatalog || c.Version != Version {
		return nil, fmt.Errorf("store: %s: %w: not a version %d catalog (%v)", path, ErrCorrupt, Version, err)
	}
	return c.Snapshots, nil
}

// CheckCatalog compares the catalog file with the parts on disk: every
// snapshot it records must still be recoverable, each part of the same
// size and checksum. The error names each disagreement (snapshot, node,
// what differs); nil if they agree.
func (s *Store) CheckCatalog(t *spec.Topology) error {
	want, err := s.ReadCatalog()
	if err != nil {
		return err
	}
	return s.CheckRecords(t, want, filepath.Join(s.dir, CatalogFileName))
}

// CheckRecords compares records of a catalog (the file's, or etcd's in
// the supervised mode), named by source in the error, with the parts on
// disk, as CheckCatalog does.
func (s *Store) CheckRecords(t *spec.Topology, want []Record, source string) error {
	entries, err := s.Catalog(t)
	if err != nil {
		return err
	}
	byID := map[spec.SnapID]Entry{}
	for _, e := range entries {
		byID[e.ID] = e
	}
	var ps []string
	for _, w := range want {
		ps = append(ps, disagreements(t, w, byID[w.ID])...)
	}
	if len(ps) > 0 {
		return fmt.Errorf("store: %s disagrees with the parts on disk: %s", source, strings.Join(ps, "; "))
	}
	return nil
}

// disagreements lists how the store's entry e of the snapshot (zero:
// nothing stored) differs from the catalog's record w: why it is not
// recoverable on disk (each damaged part named, the intact ones too),
// then each part of another size or checksum.
func disagreements(t *spec.Topology, w Record, e Entry) []string {
	if e.ID == 0 {
		return []string{fmt.Sprintf("snapshot %d is recorded as complete but nothing of it is on disk", w.ID)}
	}
	if why := e.unusable(t); len(why) > 0 {
		return []string{fmt.Sprintf("snapshot %d is recorded as complete but is not complete on disk: %s", w.ID, strings.Join(why, "; "))}
	}
	var ps []string
	for _, wp := range w.Parts {
		for _, hp := range e.Files {
			if hp.Proc == wp.Proc && (hp.Size != wp.Size || hp.SHA256 != wp.SHA256) {
				ps = append(ps, fmt.Sprintf("snapshot %d: %s's part is %d bytes, sha256 %s on disk; the catalog records %d bytes, sha256 %s", w.ID, string(wp.Proc), hp.Size, hp.SHA256, wp.Size, wp.SHA256))
			}
		}
	}
	return ps
}
