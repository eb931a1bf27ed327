package runtime

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// IncompleteError says what a snapshot still lacks when Collect gives up.
type IncompleteError struct {
	Snap spec.SnapID
	// NeverRecorded lists the processes that never recorded their state.
	NeverRecorded []spec.ProcID
	// Open lists the channels whose recording never closed (their marker
	// never arrived), including those into processes that never recorded.
	Open []spec.Channel
	// Stopped lists the processes, among those missing, whose node stopped.
	Stopped []spec.ProcID
	// Failed lists the channels, among Open, that failed (see
	// ChannelError): their marker is held and will never be delivered.
	Failed []*ChannelError
	// Cause is why Collect stopped waiting: the context's error,
	// ErrNodeStopped, or the first of Failed (matching ErrChannelFailed).
	Cause error
}

func (e *IncompleteError) Error() string {
	stopped := map[spec.ProcID]bool{}
	for _, p := range e.Stopped {
		stopped[p] = true
	}
	parts := e.neverRecorded(stopped) // takes out the processes it names
	parts = append(parts, e.neverClosed()...)
	for _, p := range slices.Sorted(maps.Keys(stopped)) {
		parts = append(parts, string(p)+" stopped before completing")
	}
	s := fmt.Sprintf("snapshot %d incomplete: %s", e.Snap, strings.Join(parts, ", "))
	if _, isFailure := e.Cause.(*ChannelError); e.Cause != nil && !isFailure {
		s += " (" + e.Cause.Error() + ")"
	}
	return s
}

// neverRecorded names the processes that never recorded, noting those
// that stopped (and deleting them from stopped).
func (e *IncompleteError) neverRecorded(stopped map[spec.ProcID]bool) []string {
	var parts []string
	for _, p := range e.NeverRecorded {
		s := string(p) + " never recorded"
		if stopped[p] {
			s += " (node stopped)"
			delete(stopped, p)
		}
		parts = append(parts, s)
	}
	return parts
}

// neverClosed names the channels whose recording never closed, noting
// those that failed, where and why.
func (e *IncompleteError) neverClosed() []string {
	failed := map[spec.Channel]*ChannelError{}
	for _, f := range e.Failed {
		failed[f.Chan] = f
	}
	var parts []string
	for _, c := range e.Open {
		s := "channel " + c.String() + " never closed"
		if f := failed[c]; f != nil {
			s += " (channel failed at " + f.at() + ": " + f.Err.Error() + ")"
		}
		parts = append(parts, s)
	}
	return parts
}

func (e *IncompleteError) Unwrap() error { return e.Cause }

// ErrAborted is matched by an *AbortedError.
var ErrAborted = errors.New("snapshot aborted")

// AbortedError says that a snapshot was aborted (tla/ChandyLamportFaults.tla
// Abort(s, q), lines 132-138): it can never complete, because a process
// it waits for is suspected. Its recording buffers were released at each
// node that aborted it.
type AbortedError struct {
	Snap spec.SnapID
	// By lists each abort reported, in order: the node, the cause (Peer),
	// since when the cause was silent.
	By []Fault
	// PartOf lists, for each process whose part the snapshot lacks and
	// that a node suspects, one such suspicion (its Peer is the process).
	PartOf []Fault
	// Missing is what the snapshot lacked when it was reported aborted.
	Missing *IncompleteError
}

func (e *AbortedError) Error() string {
	var parts []string
	for _, f := range e.By {
		parts = append(parts, fmt.Sprintf("%s aborted it: %s suspected, nothing heard since %s", string(f.Node), string(f.Peer), heardSince(f.Since)))
	}
	for _, f := range e.PartOf {
		parts = append(parts, fmt.Sprintf("%s's part is missing and %s suspects it, nothing heard since %s", string(f.Peer), string(f.Node), heardSince(f.Since)))
	}
	return fmt.Sprintf("snapshot %d aborted: %s", e.Snap, strings.Join(parts, "; "))
}

func (e *AbortedError) Is(target error) bool { return target == ErrAborted }

// Causes lists the suspected processes that caused the aborts, sorted.
func (e *AbortedError) Causes() []spec.ProcID {
	set := map[spec.ProcID]bool{}
	for _, f := range append(e.By, e.PartOf...) {
		set[f.Peer] = true
	}
	return slices.Sorted(maps.Keys(set))
}
