package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// ErrCatalogDisagrees is wrapped by Choose's error when the catalog has
// entries and the parts on disk agree with none (bad input: another
// store, or damaged parts).
var ErrCatalogDisagrees = errors.New("the catalog disagrees with the parts on disk")

// Choose picks where the next incarnation starts: the latest entry of
// the catalog (by the snapshot's own time, then id) that has a part of
// every process of t and that the parts on disk agree with, size and
// checksum (store.CheckRecords). Each newer entry passed over is named
// in passed, with the disagreement. An empty catalog is the initial
// state (a zero Entry); a catalog none of whose entries the disk agrees
// with is an error naming each, so a start never silently loses what
// the catalog says is saved.
func (c *Coord) Choose(ctx context.Context, st *store.Store, t *spec.Topology) (e Entry, passed []string, err error) {
	es, err := c.Catalog(ctx)
	if err != nil {
		return Entry{}, nil, err
	}
	for i := len(es) - 1; i >= 0; i-- {
		why := c.disagrees(st, t, es[i])
		if why == "" {
			return es[i], passed, nil
		}
		passed = append(passed, why)
	}
	if len(es) > 0 {
		return Entry{}, passed, fmt.Errorf("coord: %w: no snapshot of the catalog in etcd at %s is usable: %s", ErrCatalogDisagrees, strings.Join(c.cfg.Endpoints, ","), strings.Join(passed, "; "))
	}
	return Entry{}, nil, nil
}

// disagrees says why entry e cannot be restarted from ("" if it can).
func (c *Coord) disagrees(st *store.Store, t *spec.Topology, e Entry) string {
	if missing := missingParts(t, e); len(missing) > 0 {
		return fmt.Sprintf("snapshot %d: the catalog has no part of %s", e.ID, strings.Join(missing, ", "))
	}
	source := fmt.Sprintf("the catalog in etcd (%s)", c.catalogKey(e.ID))
	if err := st.CheckRecords(t, []store.Record{e.Record}, source); err != nil {
		return strings.TrimPrefix(err.Error(), "store: ")
	}
	return ""
}

// missingParts are the processes of t without a part in e.
func missingParts(t *spec.Topology, e Entry) []string {
	have := map[spec.ProcID]bool{}
	for _, p := range e.Parts {
		have[p.Proc] = true
	}
	var out []string
	for _, p := range t.Procs {
		if !have[p] {
			out = append(out, string(p))
		}
	}
	return out
}
