package runtime

import (
	"fmt"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// InvariantError is a complete snapshot that breaks one or more of the
// application's invariants (ClusterConfig.Invariants): Err joins one
// *spec.InvariantError per invariant broken or panicking, and Global is
// the snapshot that shows it.
type InvariantError struct {
	Global snapshot.Global
	Err    error
}

func (e *InvariantError) Error() string {
	return fmt.Sprintf("%v\nin %s", e.Err, e.Global.AppString())
}

func (e *InvariantError) Unwrap() error { return e.Err }

// checkGlobal checks complete snapshot g against invs
// (spec.CheckInvariants, which turns a panic into an error naming the
// invariant): an *InvariantError holding g if one is broken or panics,
// else nil. The Collector and a node process's save path both call it,
// so a snapshot that breaks an invariant is handed back, never saved.
func checkGlobal(g snapshot.Global, invs []spec.Invariant) error {
	if err := spec.CheckInvariants(g.AppSnapshot(), invs); err != nil {
		return &InvariantError{Global: g, Err: err}
	}
	return nil
}
