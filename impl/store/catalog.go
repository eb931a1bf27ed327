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
	// Time is when the snapshot was taken, by its own record: the save
	// time in its global file's header, else (parts only) its latest
	// part's, else (abort records only) its latest abort's. Never a file's modification time, which a copy or a touch
	// changes. Zero for files written before the time was recorded.
	Time time.Time
	// Complete: the global snapshot is stored and intact (Load succeeds),
	// so every process recorded and every channel's state is in it.
	Complete bool
	// Total and InFlight are a complete snapshot's money (balances plus
	// in flight) and the part of it in flight.
	Total, InFlight int64
	// Parts lists the processes whose part is stored and intact, in
	// topology order if Catalog was given one (else by name); Missing,
	// given a topology, the processes with none; Damaged, those whose
	// part file is stored but refused.
	Parts, Missing, Damaged []spec.ProcID
	// Files describes each stored part file, intact or damaged, in the
	// order of Parts and Damaged merged (topology or name order).
	Files []PartFile
	// Problem says why the global file is refused (damaged, or of another
	// topology); "" if none. A damaged part's refusal is in its PartFile.
	Problem string
	// Aborted holds the abort records of the snapshot (SaveAbort), by
	// node: it can never complete.
	Aborted []spec.AbortVerdict
}

// PartFile is the catalog's record of one node's stored part.
type PartFile struct {
	Proc spec.ProcID `json:"proc"`
	// Size and SHA256 are the part's body length and checksum as its
	// header records them (zero if the header itself is damaged).
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Taken is the part's save time, by its header.
	Taken time.Time `json:"taken"`
	// Problem is why the part is refused ("" if intact), naming the file.
	Problem string `json:"problem,omitempty"`
}

var partName = regexp.MustCompile(`^(.+)\.json$`)

// Catalog lists every snapshot id the store holds anything of (Used),
// oldest first (by Time, then id), with what it holds. Given a topology
// (nil: none), the parts of its processes are loaded and the absent
// ones listed; without, the parts are those the file names say. A damaged
// file is an Entry's Problem or a PartFile's, not an error; the error is
// for a directory that cannot be read.
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
	sort.SliceStable(out, func(i, j int) bool { return out[i].before(out[j]) })
	return out, nil
}

// before is the catalog's order: by recorded time, then by id.
func (e Entry) before(f Entry) bool {
	if !e.Time.Equal(f.Time) {
		return e.Time.Before(f.Time)
	}
	return e.ID < f.ID
}

// entry is what the store holds of snapshot id.
func (s *Store) entry(t *spec.Topology, id spec.SnapID) (Entry, error) {
	e := Entry{ID: id}
	if err := s.partsOf(t, &e); err != nil {
		return e, err
	}
	ab, at, err := s.aborts(id)
	if err != nil {
		e.Problem = err.Error()
	}
	e.Aborted = ab
	if e.Time.IsZero() {
		e.Time = at // no part stored: when it was aborted
	}
	if _, err := os.Lstat(s.Path(id)); os.IsNotExist(err) {
		return e, nil
	}
	s.assembled(t, &e)
	return e, nil
}

// assembled fills e's Time (if its header records one), Complete, Total
// and InFlight from its global snapshot file, or its Problem if the file
// does not load or is of another topology than t (if given).
func (s *Store) assembled(t *spec.Topology, e *Entry) {
	g, h, err := loadFileHeader(s.Path(e.ID), e.ID)
	if at := h.takenTime(); !at.IsZero() {
		e.Time = at
	}
	switch {
	case err != nil:
		e.Problem = err.Error()
	case t != nil && !g.Topology.Equal(t):
		e.Problem = fmt.Sprintf("store: %s: a snapshot of another topology (processes %s)", s.Path(e.ID), joinProcs(g.Topology.Procs))
	default:
		e.Complete, e.Total, e.InFlight = true, g.Total(), g.InFlight()
	}
}

// partsOf fills e's Parts, Missing, Damaged, Files and Time (the latest
// part's) from parts/<id>/: the parts of t's processes, or (t nil) of
// those the file names say.
func (s *Store) partsOf(t *spec.Topology, e *Entry) error {
	procs := []spec.ProcID(nil)
	if t != nil {
		procs = t.Procs
	} else {
		ents, err := os.ReadDir(filepath.Dir(s.PartPath(e.ID, "P")))
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("store: %w", err)
		}
		procs = partFileProcs(ents)
	}
	for _, p := range procs {
		if err := s.partFile(e, p); err != nil {
			return err
		}
	}
	return nil
}

// partFile adds process p's part of e to e: intact, damaged or missing.
// The error is for a file that cannot be read at all.
func (s *Store) partFile(e *Entry, p spec.ProcID) error {
	_, h, err := s.loadPartHeader(e.ID, p)
	switch {
	case errors.Is(err, ErrNotFound):
		e.Missing = append(e.Missing, p)
		return nil
	case err != nil && !errors.Is(err, ErrCorrupt):
		return err
	}
	f := PartFile{Proc: p, Size: h.Length, SHA256: h.SHA256, Taken: h.takenTime()}
	if err != nil {
		f.Problem = err.Error()
		e.Damaged = append(e.Damaged, p)
	} else {
		e.Parts = append(e.Parts, p)
	}
	if f.Taken.After(e.Time) {
		e.Time = f.Taken
	}
	e.Files = append(e.Files, f)
	return nil
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

// String renders the entry's state in a few words: "complete, total 300
// (30 in flight)", "aborted: its initiator P1 is suspected (crashed or
// unreachable)" (the words of the node's log, spec.AbortVerdict),
// "incomplete: no part of P2", "damaged: ...".
func (e Entry) String() string {
	switch {
	case e.Damage() != "":
		return "damaged: " + e.Damage()
	case e.Complete:
		return fmt.Sprintf("complete, total %d (%d in flight)", e.Total, e.InFlight)
	case len(e.Aborted) > 0:
		return "aborted: " + e.Aborted[0].Reason()
	case len(e.Missing) > 0:
		return fmt.Sprintf("incomplete: no part of %s", joinProcs(e.Missing))
	}
	return fmt.Sprintf("incomplete: parts of %s stored, not assembled", joinProcs(e.Parts))
}

// damagedParts says, for a snapshot with damaged parts, which are
// damaged (each refusal) and which intact.
func (e Entry) damagedParts() []string {
	var why []string
	for _, f := range e.Files {
		if f.Problem != "" {
			why = append(why, fmt.Sprintf("%s's part is damaged: %s", string(f.Proc), f.Problem))
		}
	}
	if len(e.Damaged) > 0 && len(e.Parts) > 0 {
		why = append(why, fmt.Sprintf("intact: the parts of %s", joinProcs(e.Parts)))
	}
	return why
}

// Damage says what of e is refused: its global file's problem, then each
// damaged part's (naming the file); "" if nothing is.
func (e Entry) Damage() string {
	var ds []string
	if e.Problem != "" {
		ds = append(ds, e.Problem)
	}
	for _, f := range e.Files {
		if f.Problem != "" {
			ds = append(ds, fmt.Sprintf("%s's part is damaged: %s", string(f.Proc), f.Problem))
		}
	}
	return strings.Join(ds, "; ")
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
		if !e.Holds(p) && !slices.Contains(e.Damaged, p) {
			why = append(why, fmt.Sprintf("%s holds no part of it", string(p)))
		}
	}
	why = append(why, e.damagedParts()...)
	switch {
	case e.Problem != "":
		why = append(why, e.Problem)
	case len(e.Aborted) > 0:
		why = append(why, e.Aborted[0].String())
	case !e.Complete:
		why = append(why, "no node assembled it (no global snapshot file): it never completed, or was aborted")
	}
	return why
}
