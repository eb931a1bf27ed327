package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// AbortPath is where node by's abort record of snapshot id is stored:
// parts/<id>/aborted/<by>.json, beside the parts it makes useless.
func (s *Store) AbortPath(id spec.SnapID, by spec.ProcID) string {
	return filepath.Join(filepath.Dir(s.PartPath(id, "P")), "aborted", string(by)+".json")
}

// SaveAbort records durably that node v.By aborted snapshot v.Snap, and
// why: the snapshot can never complete, Catalog reports it aborted with
// v's words, and a node that later holds every part does not assemble it
// (Aborts). Like SavePart it never replaces a record with a different one.
func (s *Store) SaveAbort(v spec.AbortVerdict) (string, error) {
	if v.Snap == 0 {
		return "", fmt.Errorf("store: refusing to record an abort of snapshot 0")
	}
	if err := spec.ValidateProcID(v.By); err != nil {
		return "", fmt.Errorf("store: refusing to record an abort: %w", err)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("store: encode abort: %w", err)
	}
	path := s.AbortPath(v.Snap, v.By)
	if err := s.mkdir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return path, writeDurably(path, formatAbort, header{Format: formatAbort, ID: uint64(v.Snap), Proc: string(v.By), Taken: s.taken()}, body)
}

// Aborts returns the abort records of snapshot id, by node name; none if
// no node aborted it. A damaged record is an error naming its file.
func (s *Store) Aborts(id spec.SnapID) ([]spec.AbortVerdict, error) {
	vs, _, err := s.aborts(id)
	return vs, err
}

// aborts is Aborts, with the time of the latest record (zero if none).
func (s *Store) aborts(id spec.SnapID) ([]spec.AbortVerdict, time.Time, error) {
	var latest time.Time
	dir := filepath.Dir(s.AbortPath(id, "P"))
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, latest, nil
	}
	if err != nil {
		return nil, latest, fmt.Errorf("store: %w", err)
	}
	var out []spec.AbortVerdict
	for _, by := range partFileProcs(ents) {
		v, h, err := s.loadAbort(id, by)
		if err != nil {
			return nil, latest, err
		}
		if at := h.takenTime(); at.After(latest) {
			latest = at
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].By < out[j].By })
	return out, latest, nil
}

// loadAbort reads node by's abort record of snapshot id, with its
// header, refusing (ErrCorrupt) one that holds another node's or
// snapshot's.
func (s *Store) loadAbort(id spec.SnapID, by spec.ProcID) (spec.AbortVerdict, header, error) {
	var v spec.AbortVerdict
	path := s.AbortPath(id, by)
	h, body, err := readChecked(path, formatAbort)
	if err != nil {
		return v, h, err
	}
	if err := spec.DecodeStrict(body, &v); err != nil {
		return v, h, fmt.Errorf("store: %s: %w: body: %w", path, ErrCorrupt, err)
	}
	if h.ID != uint64(id) || v.Snap != id || v.By != by || h.Proc != string(by) {
		return v, h, fmt.Errorf("store: %s: %w: holds %s's abort of snapshot %d, want %s's of %d", path, ErrCorrupt, string(v.By), v.Snap, string(by), id)
	}
	return v, h, nil
}
