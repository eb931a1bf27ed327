package spec

import (
	"errors"
	"fmt"
)

// AppSnapshot is a global snapshot as the application sees it: every
// process's captured state (core.App.Capture) and, per channel, the
// payloads that were in flight across the cut, in order. The spec
// abstracts both away (to bal and amt); an application's invariants are
// stated over them.
type AppSnapshot struct {
	Snap     SnapID
	States   map[ProcID][]byte
	InFlight map[Channel][][]byte
}

// Invariant is a property an application declares over its global
// snapshots: "every key has exactly one owner", "no job is both queued
// and running", a bank's conservation. Check returns nil when s has it,
// else what is wrong. A stable property (once true, true forever) is
// declared the same way: a snapshot is a state the run could have passed
// through, so what a snapshot shows of a stable property held when the
// snapshot ended (Chandy and Lamport 1985, section 4).
type Invariant struct {
	Name  string
	Check func(s AppSnapshot) error
}

// InvariantError is one invariant a snapshot breaks, or whose Check
// panicked (Panicked; Err then holds the panic value).
type InvariantError struct {
	Snap      SnapID
	Invariant string
	Panicked  bool
	Err       error
}

func (e *InvariantError) Error() string {
	if e.Panicked {
		return fmt.Sprintf("snapshot %d: invariant %q panicked: %v", e.Snap, e.Invariant, e.Err)
	}
	return fmt.Sprintf("snapshot %d breaks invariant %q: %v", e.Snap, e.Invariant, e.Err)
}

func (e *InvariantError) Unwrap() error { return e.Err }

// CheckInvariants checks s against every invariant, in order, and joins
// an *InvariantError for each one broken (nil if none is). An invariant
// without a name or a Check is itself reported; a panicking Check is
// reported by name, and the others are still checked.
func CheckInvariants(s AppSnapshot, invs []Invariant) error {
	var errs []error
	for i, inv := range invs {
		if err := checkOne(s, i, inv); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkOne(s AppSnapshot, i int, inv Invariant) (err error) {
	if inv.Name == "" || inv.Check == nil {
		return &InvariantError{Snap: s.Snap, Invariant: fmt.Sprintf("#%d %s", i+1, inv.Name), Err: errors.New("an invariant needs a name and a Check")}
	}
	defer func() {
		if r := recover(); r != nil {
			err = &InvariantError{Snap: s.Snap, Invariant: inv.Name, Panicked: true, Err: fmt.Errorf("%v", r)}
		}
	}()
	if e := inv.Check(s); e != nil {
		return &InvariantError{Snap: s.Snap, Invariant: inv.Name, Err: e}
	}
	return nil
}
