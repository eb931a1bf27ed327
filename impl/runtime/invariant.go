package runtime

import (
	"fmt"

	"github.com/markerwave/markerwave/impl/snapshot"
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
