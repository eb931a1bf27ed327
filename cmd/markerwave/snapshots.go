package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

const snapshotsAbout = `
Lists what a snapshot store holds (impl/store's Catalog), oldest first:
each snapshot id, when it was saved, whether it is complete (its global
snapshot is stored and intact; then its total and the money in flight),
aborted (a node recorded the abort: said in the words of its log and of
the audit, e.g. "aborted: its initiator P1 is suspected (crashed or
unreachable)"; "aborted" in --json) or neither (only some nodes' parts;
a damaged file is named), and which
nodes' parts are stored. With --config the store is the config's
snapshot_dir, the nodes without a part are named, and the snapshot a
recovery would restore (markerwave recover) is marked. With --config and
--keep N, the snapshots older than the last N recoverable ones are
removed first (global files and parts; impl/store's Prune), each named.
Exit 0: listed (even if empty); 1: a removal failed; 2: bad usage, no
such directory, or a directory that holds files but none of a store's.`

// snapshotsOptions are snapshots' flags.
type snapshotsOptions struct {
	dir, config string
	json        bool
	keep        int
}

func runSnapshots(args []string, stdout, stderr io.Writer) int {
	f := newFlags("snapshots", "(--dir DIR | --config FILE [--keep N]) [--json]", snapshotsAbout, stdout, stderr)
	var o snapshotsOptions
	f.StringVar(&o.dir, "dir", "", "the store's `DIR`ectory (a cluster's snapshot_dir)")
	f.StringVar(&o.config, "config", "", "cluster config `FILE`: list its snapshot_dir, checked against its topology")
	f.BoolVar(&o.json, "json", false, "print the listing as one JSON object")
	f.IntVar(&o.keep, "keep", 0, "with --config: keep the last `N` recoverable snapshots, remove the older ones")
	if code, done := f.parse(args); done {
		return code
	}
	if msg, bad := broken(f.unexpected(), rule{(o.dir == "") == (o.config == ""), "give either --dir or --config"},
		rule{o.keep < 0, "--keep must not be negative"}, rule{o.keep > 0 && o.config == "", "--keep needs --config (the topology says which snapshots are recoverable)"}); bad {
		return f.usageError("%s", msg)
	}
	if o.keep > 0 {
		if code := o.prune(f); code != exitOK {
			return code
		}
	}
	c, code := o.catalog(f)
	if code != exitOK {
		return code
	}
	if o.json {
		return writeJSON(f, stdout, catalogJSON(c.dir, c.entries, c.latest, c.top != nil), exitOK)
	}
	printCatalog(stdout, c.dir, c.entries, c.latest)
	return exitOK
}

// prune removes the snapshots older than the last o.keep recoverable
// ones of o.config's store, naming each on stderr.
func (o snapshotsOptions) prune(f *cmdFlags) int {
	cfg, err := runtime.LoadConfig(o.config, "")
	if err != nil {
		reportConfig(f, o.config, err)
		return exitUsage
	}
	st, err := store.OpenExisting(cfg.SnapshotDir)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	removed, err := st.Prune(cfg.Topology, o.keep)
	for _, id := range removed {
		f.errorf("removed snapshot %d (older than the last %s)", id, plural(o.keep, "recoverable snapshot"))
	}
	if err != nil {
		return f.fail(exitFail, err)
	}
	return exitOK
}

// catalog is what snapshots lists: the store's directory, its entries
// and, given a topology (--config), the recovery point.
type catalog struct {
	dir     string
	top     *spec.Topology // nil with --dir
	entries []store.Entry
	latest  *store.Entry
}

// catalog reads the store o names; code is exitUsage, reported, if it
// cannot.
func (o snapshotsOptions) catalog(f *cmdFlags) (catalog, int) {
	c := catalog{dir: o.dir}
	if o.config != "" {
		cfg, err := runtime.LoadConfig(o.config, "")
		if err != nil {
			reportConfig(f, o.config, err)
			return c, exitUsage
		}
		c.dir, c.top = cfg.SnapshotDir, cfg.Topology
	}
	if err := c.read(); err != nil {
		return c, f.fail(exitUsage, err)
	}
	return c, exitOK
}

// read lists c's store and finds the recovery point (with a topology).
func (c *catalog) read() error {
	st, err := store.OpenExisting(c.dir)
	if err != nil {
		return err
	}
	if c.entries, err = st.Catalog(c.top); err != nil || c.top == nil {
		return err
	}
	r, err := st.LatestComplete(c.top)
	c.latest = r.From
	return err
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
	Damaged  []spec.ProcID `json:"damaged,omitempty"`
	Files    []partJSON    `json:"part_files"`
	Problem  string        `json:"problem,omitempty"`
	// Aborted is why the snapshot was aborted, in the words of the node
	// logs and the audit (spec.AbortVerdict); "" if no node aborted it.
	Aborted string `json:"aborted,omitempty"`
}

// partJSON is one stored part file of the JSON listing.
type partJSON struct {
	Proc    spec.ProcID `json:"proc"`
	Size    int64       `json:"size"`
	SHA256  string      `json:"sha256"`
	Problem string      `json:"problem,omitempty"`
}

func toEntryJSON(e store.Entry) entryJSON {
	j := entryJSON{ID: e.ID, Time: e.Time, Complete: e.Complete, Parts: e.Parts, Missing: e.Missing, Damaged: e.Damaged, Files: []partJSON{}, Problem: e.Problem}
	if j.Parts == nil {
		j.Parts = []spec.ProcID{}
	}
	for _, f := range e.Files {
		j.Files = append(j.Files, partJSON{Proc: f.Proc, Size: f.Size, SHA256: f.SHA256, Problem: f.Problem})
	}
	if e.Complete {
		j.Total, j.InFlight = &e.Total, &e.InFlight
	}
	if len(e.Aborted) > 0 {
		j.Aborted = e.Aborted[0].String()
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
