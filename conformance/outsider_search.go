package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// Where the log does not determine the spec's step: a node that logs no
// marker events (silentNodes) leaves
// open, at each of its recording points, whether it initiated the
// snapshot or which channel brought the first marker. The audit derives
// one trace per combination of candidates (the initiator, else each
// incoming channel whose sender records the snapshot in that
// incarnation), in a fixed order, and replays them in turn, up to
// MaxOutsiderCandidates: the first that conforms stands, else the first
// candidate's verdict, saying that no candidate conforms; with more
// combinations than the bound, a run none of the tried ones fits cannot
// be judged, and the audit says what was ambiguous. The markers of its
// other incoming channels are placed where FIFO order puts them: after
// the receipt of the last message sent before the sender recorded.

// MaxOutsiderCandidates bounds the candidate traces one audit replays.
const MaxOutsiderCandidates = 256

// choiceKey names a recording point left open: node p's of snapshot s
// (the implementation's id) in incarnation inc.
type choiceKey struct {
	inc int
	p   spec.ProcID
	s   spec.ObsID
}

// choicePoint is an open recording point and its candidates: the first
// marker's sender, "" for initiating.
type choicePoint struct {
	key   choiceKey
	cands []spec.ProcID
}

// choicePoints lists the run's open recording points in a fixed order.
func choicePoints(run *OutsiderRun) []choicePoint {
	silent := silentNodes(run)
	var out []choicePoint
	for k, inc := range run.incs {
		for _, p := range run.Header.Topology.Procs {
			if !silent[p] {
				continue
			}
			for _, o := range inc.nodes[p] {
				if o.ev.Ev == spec.ObsRecord {
					out = append(out, choicePoint{key: choiceKey{inc: k, p: p, s: *o.ev.Snap}, cands: firstMarkerCands(run, inc, p, *o.ev.Snap)})
				}
			}
		}
	}
	return out
}

// firstMarkerCands are the candidates for p's first marker of s: p
// itself initiating (unless the header or a reported snapshot names
// another initiator), then
// each incoming channel's sender that records s in inc.
func firstMarkerCands(run *OutsiderRun, inc outsiderInc, p spec.ProcID, s spec.ObsID) []spec.ProcID {
	init, ok := run.initiator(s)
	if ok && init == p {
		return []spec.ProcID{""}
	}
	var out []spec.ProcID
	if !ok {
		out = append(out, "")
	}
	out = append(out, recordingSenders(run.Header.Topology, inc, p, s)...)
	if len(out) == 0 {
		out = append(out, "")
	}
	return out
}

// recordingSenders are the senders of p's incoming channels that record
// snapshot s in inc (or receive its marker), in channel order.
func recordingSenders(t *spec.Topology, inc outsiderInc, p spec.ProcID, s spec.ObsID) []spec.ProcID {
	var out []spec.ProcID
	for _, c := range t.In(p) {
		if nodeRecords(inc.nodes[c.From], s) {
			out = append(out, c.From)
		}
	}
	return out
}

// initiator is snapshot s's initiator as the header's snaps or a
// reported snapshot names it.
func (r *OutsiderRun) initiator(s spec.ObsID) (spec.ProcID, bool) {
	if p, ok := r.Header.Snaps[s]; ok {
		return p, true
	}
	for _, sa := range r.snaps {
		if *sa.s.Snap == s && sa.s.Initiator != "" {
			return sa.s.Initiator, true
		}
	}
	return "", false
}

// candidateSet is the combinations of a run's open points, enumerated
// in order.
type candidateSet struct {
	run    *OutsiderRun
	points []choicePoint
	total  int // combinations, capped at MaxOutsiderCandidates+1
}

// searchCandidates lists the run's open points.
func searchCandidates(run *OutsiderRun) candidateSet {
	cs := candidateSet{run: run, points: choicePoints(run), total: 1}
	for _, p := range cs.points {
		cs.total = min(cs.total*len(p.cands), MaxOutsiderCandidates+1)
	}
	return cs
}

// derive derives combination i (0-based, i < min(total, bound)).
func (cs candidateSet) derive(i int) (Derived, error) {
	if len(cs.points) == 0 {
		return Derive(cs.run)
	}
	choices := map[choiceKey]spec.ProcID{}
	for _, p := range slices.Backward(cs.points) {
		choices[p.key] = p.cands[i%len(p.cands)]
		i /= len(p.cands)
	}
	return derive(cs.run, choices)
}

// tries is how many combinations the audit replays.
func (cs candidateSet) tries() int { return min(cs.total, MaxOutsiderCandidates) }

// describe says what was open, for the report.
func (cs candidateSet) describe() string {
	var parts []string
	for _, p := range cs.points {
		var c []string
		for _, q := range p.cands {
			if q == "" {
				c = append(c, "initiated by "+string(p.key.p))
			} else {
				c = append(c, fmt.Sprintf("first marker on %s->%s", string(q), string(p.key.p)))
			}
		}
		if len(c) > 1 {
			parts = append(parts, fmt.Sprintf("%s logs no marker events: its recording of snapshot %s may be %s", string(p.key.p), p.key.s.String(), strings.Join(c, " or ")))
		}
	}
	return strings.Join(parts, "; ")
}
