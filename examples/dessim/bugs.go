package main

import (
	"fmt"
	"slices"
	"strings"
)

// bug is a fault injected into the algorithm; "" is the correct one.
type bug string

// The injected bugs, each a departure from Chandy and Lamport 1985's
// rules.
const (
	// noChannelRecording: a node records no in-flight message.
	noChannelRecording bug = "no-channel-recording"
	// channelAfterMarker: a node keeps recording a link after that
	// link's marker, until every marker has arrived.
	channelAfterMarker bug = "channel-after-marker"
	// lateState: on its first marker a node records its state at the end
	// of its next step, not at once.
	lateState bug = "late-state"
	// noForwarding: a node that is not the initiator records but sends
	// no markers.
	noForwarding bug = "no-forwarding"
	// oldestOnly: of concurrent snapshots, only the one the node joined
	// first records in-flight messages.
	oldestOnly bug = "oldest-only"
)

var allBugs = []bug{noChannelRecording, channelAfterMarker, lateState, noForwarding, oldestOnly}

// bugNames lists the bugs' names.
func bugNames() []string {
	var s []string
	for _, b := range allBugs {
		s = append(s, string(b))
	}
	return s
}

// parseBug reads -bug.
func parseBug(s string) (bug, error) {
	if s == "" || slices.Contains(allBugs, bug(s)) {
		return bug(s), nil
	}
	return "", fmt.Errorf("-bug %q: want one of %s", s, strings.Join(bugNames(), ", "))
}

// bugged reports whether the run has bug b, noting that it fired.
func (w *world) bugged(b bug) bool {
	if w.cfg.bug != b {
		return false
	}
	w.fired[b] = true
	return true
}
