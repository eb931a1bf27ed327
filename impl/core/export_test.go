package core

import (
	"fmt"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// Test-only views of a node's internals for the core_test package: no
// caller of the core needs them, the tests do.

// ActiveSnaps lists the snapshots n has recorded that are not complete,
// by id.
func ActiveSnaps(n *Node) []spec.SnapID { return n.Active() }

// CompletedCount is the number of local snapshots n completed so far,
// taken or not.
func CompletedCount(n *Node) uint64 { return n.nDone }

// Fingerprint renders everything observable about n, to check that a
// failed step changed nothing: its state, clock, step count, active,
// completed and released snapshots, every channel's next seq, and its
// view of each of snaps.
func Fingerprint(n *Node, snaps ...spec.SnapID) string {
	var b strings.Builder
	fmt.Fprintf(&b, "state=%+v clock=%v steps=%d active=%v done=%d completed=%d released=%v\n", n.State(), n.vc, n.steps, ActiveSnaps(n), n.nDone, len(n.completed), n.released.iv)
	for j, c := range n.out {
		fmt.Fprintf(&b, "%s: next send %d\n", c, n.sendSeq[j])
	}
	for i, c := range n.in {
		fmt.Fprintf(&b, "%s: next receive %d\n", c, n.recvSeq[i])
	}
	for _, s := range snaps {
		ls, ok := n.Snapshot(s)
		fmt.Fprintf(&b, "snap %d: phase=%s ok=%v %+v\n", s, n.Phase(s), ok, ls)
	}
	return b.String()
}
