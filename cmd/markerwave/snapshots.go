package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

const snapshotsAbout = `
Lists what a snapshot store holds (impl/store's Catalog), oldest first:
each snapshot id, when it was saved, whether it is complete (its global
snapshot is stored and intact; then its total and the money in flight)
or not (only some nodes' parts; a damaged file is named), and which
nodes' parts are stored. With --config the store is the config's
snapshot_dir, the nodes without a part are named, and the snapshot a
recovery would restore (markerwave recover) is marked.
Exit 0: listed (even if empty); 2: bad usage, or no such directory.`

// snapshotsOptions are snapshots' flags.
type snapshotsOptions struct {
	dir, config string
	json        bool
}

func runSnapshots(args []string, stdout, stderr io.Writer) int {
	f := newFlags("snapshots", "(--dir DIR | --config FILE) [--json]", snapshotsAbout, stdout, stderr)
	var o snapshotsOptions
	f.StringVar(&o.dir, "dir", "", "the store's `DIR`ectory (a cluster's snapshot_dir)")
	f.StringVar(&o.config, "config", "", "cluster config `FILE`: list its snapshot_dir, checked against its topology")
	f.BoolVar(&o.json, "json", false, "print the listing as one JSON object")
	if code, done := f.parse(args); done {
		return code
	}
	switch {
	case f.NArg() > 0:
		return f.usageError("unexpected argument %q", f.Arg(0))
	case (o.dir == "") == (o.config == ""):
		return f.usageError("give either --dir or --config")
	}
	dir, top := o.dir, (*spec.Topology)(nil)
	if o.config != "" {
		cfg, err := runtime.LoadConfig(o.config, "")
		if err != nil {
			reportConfig(f, o.config, err)
			return exitUsage
		}
		dir, top = cfg.SnapshotDir, cfg.Topology
	}
	st, err := openExisting(dir)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	entries, err := st.Catalog(top)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	var latest *store.Entry
	if top != nil {
		r, err := st.LatestComplete(top)
		if err != nil {
			return f.fail(exitUsage, err)
		}
		latest = r.From
	}
	if o.json {
		return writeJSON(f, stdout, catalogJSON(dir, entries, latest, top != nil), exitOK)
	}
	printCatalog(stdout, dir, entries, latest)
	return exitOK
}

// openExisting opens the store in dir, which must exist: listing or
// recovering from a directory that is not there is a mistake, not an
// empty store.
func openExisting(dir string) (*store.Store, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no snapshot store at %s: the directory does not exist", dir)
	case err != nil:
		return nil, err
	case !st.IsDir():
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return store.Open(dir)
}

// printCatalog writes the listing for people.
func printCatalog(w io.Writer, dir string, entries []store.Entry, latest *store.Entry) {
	fmt.Fprintf(w, "%s: %s\n", dir, plural(len(entries), "snapshot"))
	if len(entries) == 0 {
		return
	}
	fmt.Fprintf(w, "  %-20s %-23s %s\n", "ID", "SAVED (UTC)", "STATE")
	for _, e := range entries {
		mark := ""
		if latest != nil && latest.ID == e.ID {
			mark = "  <- recovery point"
		}
		fmt.Fprintf(w, "  %-20d %-23s %s%s\n", e.ID, e.Time.Format("2006-01-02 15:04:05.000"), e, mark)
	}
}

// entryJSON is one snapshot of the JSON listing.
type entryJSON struct {
	ID       spec.SnapID   `json:"id"`
	Time     time.Time     `json:"time"`
	Complete bool          `json:"complete"`
	Total    *int64        `json:"total,omitempty"`
	InFlight *int64        `json:"in_flight,omitempty"`
	Parts    []spec.ProcID `json:"parts"`
	Missing  []spec.ProcID `json:"missing,omitempty"`
	Problem  string        `json:"problem,omitempty"`
}

func toEntryJSON(e store.Entry) entryJSON {
	j := entryJSON{ID: e.ID, Time: e.Time, Complete: e.Complete, Parts: e.Parts, Missing: e.Missing, Problem: e.Problem}
	if j.Parts == nil {
		j.Parts = []spec.ProcID{}
	}
	if e.Complete {
		j.Total, j.InFlight = &e.Total, &e.InFlight
	}
	return j
}

// catalogJSON is the JSON listing: the directory, the snapshots and,
// given a topology (withLatest), the recovery point (null: none).
func catalogJSON(dir string, entries []store.Entry, latest *store.Entry, withLatest bool) any {
	out := struct {
		Dir       string       `json:"dir"`
		Snapshots []entryJSON  `json:"snapshots"`
		Recovery  *spec.SnapID `json:"recovery_point"`
	}{Dir: dir, Snapshots: []entryJSON{}}
	for _, e := range entries {
		out.Snapshots = append(out.Snapshots, toEntryJSON(e))
	}
	if latest != nil {
		out.Recovery = &latest.ID
	}
	if !withLatest {
		return struct {
			Dir       string      `json:"dir"`
			Snapshots []entryJSON `json:"snapshots"`
		}{out.Dir, out.Snapshots}
	}
	return out
}

// writeJSON writes v as one line of JSON and returns code (exitFail if
// it cannot be written).
func writeJSON(f *cmdFlags, w io.Writer, v any, code int) int {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return f.fail(exitFail, err)
	}
	return code
}
