package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// Entry is what the store holds of one snapshot id: the assembled global
// snapshot, the nodes' parts, or both.
type Entry struct {
	ID spec.SnapID
	// Time is when the snapshot was saved: its global file's modification
	// time, else (parts only) its latest part's.
	Time time.Time
	// Complete: the global snapshot is stored and intact (Load succeeds),
	// so every process recorded and every channel's state is in it.
	Complete bool
	// Total and InFlight are a complete snapshot's money (balances plus
	// in flight) and the part of it in flight.
	Total, InFlight int64
	// Parts lists the processes whose part is stored, in topology order
	// if Catalog was given one (else by name); Missing, given a topology,
	// the processes with none.
	Parts, Missing []spec.ProcID
	// Problem says why a file of the snapshot is refused (a damaged
	// global file, or a part that does not load); "" if none.
	Problem string
}

var partName = regexp.MustCompile(`^(.+)\.json$`)

// Catalog lists every snapshot id the store holds anything of (Used),
// oldest first (by Time, then id), with what it holds. Given a topology
// (nil: none), parts are loaded and checked against it and the absent
// ones listed. A damaged file is an Entry's Problem, not an error; the
// error is for a directory that cannot be read.
func (s *Store) Catalog(t *spec.Topology) ([]Entry, error) {
	ids, err := s.Used()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ids))
	for _, id := range ids {
		e, err := s.entry(t, id)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// entry is what the store holds of snapshot id.
func (s *Store) entry(t *spec.Topology, id spec.SnapID) (Entry, error) {
	e := Entry{ID: id}
	if err := s.partsOf(t, &e); err != nil {
		return e, err
	}
	st, err := os.Stat(s.Path(id))
	switch {
	case os.IsNotExist(err):
		return e, nil
	case err != nil:
		return e, fmt.Errorf("store: %w", err)
	}
	e.Time = st.ModTime().UTC()
	s.assembled(t, &e)
	return e, nil
}

// assembled fills e's Complete, Total and InFlight from its global
// snapshot file, or its Problem if the file does not load or is of
// another topology than t (if given).
func (s *Store) assembled(t *spec.Topology, e *Entry) {
	g, err := s.Load(e.ID)
	switch {
	case err != nil:
		e.Problem = err.Error()
	case t != nil && !sameTopology(g.Topology, t):
		e.Problem = fmt.Sprintf("store: %s: a snapshot of another topology (processes %s)", s.Path(e.ID), joinProcs(g.Topology.Procs))
	default:
		e.Complete, e.Total, e.InFlight = true, g.Total(), g.InFlight()
	}
}

// partsOf fills e's Parts, Missing, Time (the latest part's) and Problem
// (the first part that does not load) from parts/<id>/.
func (s *Store) partsOf(t *spec.Topology, e *Entry) error {
	dir := filepath.Dir(s.PartPath(e.ID, "P"))
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("store: %w", err)
	}
	e.Time = latestModTime(ents, e.Time)
	if t == nil {
		e.Parts = partFileProcs(ents)
		return nil
	}
	parts, missing, err := s.LoadParts(t, e.ID)
	switch {
	case errors.Is(err, ErrCorrupt):
		e.Problem = err.Error()
		return nil
	case err != nil:
		return err
	}
	for _, p := range parts {
		e.Parts = append(e.Parts, p.Node.Proc)
	}
	e.Missing = missing
	return nil
}

// latestModTime is the latest modification time of the regular files
// among ents, or since if none is later.
func latestModTime(ents []os.DirEntry, since time.Time) time.Time {
	for _, f := range ents {
		if st, err := f.Info(); err == nil && st.ModTime().After(since) && f.Type().IsRegular() {
			since = st.ModTime().UTC()
		}
	}
	return since
}

// partFileProcs are the processes whose part files are among ents, read
// from their names alone (no topology to load them against).
func partFileProcs(ents []os.DirEntry) []spec.ProcID {
	var ps []spec.ProcID
	for _, f := range ents {
		if m := partName.FindStringSubmatch(f.Name()); m != nil && f.Type().IsRegular() && spec.ValidateProcID(spec.ProcID(m[1])) == nil {
			ps = append(ps, spec.ProcID(m[1]))
		}
	}
	return ps
}

// Holds reports whether e holds process p's part.
func (e Entry) Holds(p spec.ProcID) bool {
	for _, q := range e.Parts {
		if q == p {
			return true
		}
	}
	return false
}

func sameTopology(a, b *spec.Topology) bool {
	return slices.Equal(a.Procs, b.Procs) && slices.Equal(a.Chans, b.Chans)
}

// String renders the entry's state in a few words: "complete, total 300
// (30 in flight)", "incomplete: no part of P2", "damaged: ...".
func (e Entry) String() string {
	switch {
	case e.Problem != "":
		return "damaged: " + e.Problem
	case e.Complete:
		return fmt.Sprintf("complete, total %d (%d in flight)", e.Total, e.InFlight)
	case len(e.Missing) > 0:
		return fmt.Sprintf("incomplete: no part of %s", joinProcs(e.Missing))
	}
	return fmt.Sprintf("incomplete: parts of %s stored, not assembled", joinProcs(e.Parts))
}

func joinProcs(ps []spec.ProcID) string {
	if len(ps) == 0 {
		return "no process"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// Recovery is where a cluster restarts after a crash: the latest
// snapshot that every node holds complete, and the newer ones passed
// over.
type Recovery struct {
	// From is the snapshot to restore, nil if none is complete at every
	// node: the cluster then restarts from its initial state.
	From *Entry
	// Passed lists the snapshots newer than From (all of them if From is
	// nil), newest first, each with why it cannot be used.
	Passed []Passed
}

// Passed is a snapshot recovery cannot use, and why: one reason per
// node that does not hold it complete, or for the snapshot as a whole.
type Passed struct {
	Entry Entry
	Why   []string
}

// LatestComplete picks the snapshot the cluster of topology t recovers
// from, as Recover does in tla/ChandyLamportFaults.tla (lines 188-193;
// LatestComplete, lines 181-183): the latest complete snapshot, else the
// initial state. Here a snapshot is complete when its global file is
// intact and every node's own part of it is stored and intact (the
// nodes agree on it); "latest" is the last saved (Catalog's order: ids
// grow along a chain of restores, as the spec's do within an
// incarnation, but fresh runs draw theirs at random). An incomplete or
// damaged snapshot is never picked: recovering from one loses or
// creates money (MCFaultsRecoverAny).
func (s *Store) LatestComplete(t *spec.Topology) (Recovery, error) {
	entries, err := s.Catalog(t)
	if err != nil {
		return Recovery{}, err
	}
	var r Recovery
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		why := e.unusable(t)
		if len(why) == 0 {
			r.From = &e
			return r, nil
		}
		r.Passed = append(r.Passed, Passed{Entry: e, Why: why})
	}
	return r, nil
}

// unusable says why e cannot be recovered from by the nodes of t: one
// reason per node without its part, and the snapshot's own state.
func (e Entry) unusable(t *spec.Topology) []string {
	var why []string
	for _, p := range t.Procs {
		if !e.Holds(p) {
			why = append(why, fmt.Sprintf("%s holds no part of it", string(p)))
		}
	}
	switch {
	case e.Problem != "":
		why = append(why, e.Problem)
	case !e.Complete:
		why = append(why, "no node assembled it (no global snapshot file): it never completed, or was aborted")
	}
	return why
}
