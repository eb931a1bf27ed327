package store

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/markerwave/markerwave/spec"
)

// Prune keeps the last keep snapshots the cluster of topology t could
// recover from (complete at every node, as LatestComplete judges) and
// removes every snapshot older than the oldest of them, in Catalog's
// order: its global file and its parts. Snapshots newer than it are left
// alone, complete or not (one may still be under way). With fewer than
// keep recoverable snapshots nothing is removed. A catalog file, if the
// store has one, is rewritten without the removed snapshots. It returns the ids
// removed, oldest first; keep must be at least 1.
func (s *Store) Prune(t *spec.Topology, keep int) ([]spec.SnapID, error) {
	if keep < 1 {
		return nil, fmt.Errorf("store: retention must keep at least 1 complete snapshot, not %d", keep)
	}
	entries, err := s.Catalog(t)
	if err != nil {
		return nil, err
	}
	cut := oldestKept(entries, t, keep)
	var removed []spec.SnapID
	for _, e := range entries[:cut] {
		if err := s.remove(e.ID); err != nil {
			return removed, err
		}
		removed = append(removed, e.ID)
	}
	if len(removed) == 0 {
		return removed, nil
	}
	if err := s.syncDir(s.dir); err != nil {
		return removed, err
	}
	if _, err := os.Stat(filepath.Join(s.dir, CatalogFileName)); err == nil {
		return removed, s.WriteCatalog(t)
	}
	return removed, nil
}

// oldestKept is the index in entries of the keep-th newest recoverable
// snapshot (0 if there are fewer: keep everything).
func oldestKept(entries []Entry, t *spec.Topology, keep int) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if len(entries[i].unusable(t)) == 0 {
			if keep--; keep == 0 {
				return i
			}
		}
	}
	return 0
}

// remove deletes snapshot id's global file and its parts.
func (s *Store) remove(id spec.SnapID) error {
	if err := os.Remove(s.Path(id)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("store: remove snapshot %d: %w", id, err)
	}
	if err := os.RemoveAll(filepath.Dir(s.PartPath(id, "P"))); err != nil {
		return fmt.Errorf("store: remove the parts of snapshot %d: %w", id, err)
	}
	return nil
}
