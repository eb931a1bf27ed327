package conformance

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// Scenario is a named run for traces/: a trace of real impl/core nodes
// with the recorded states the nodes reported (mutated, for the rejected
// ones, as its Doc says), and the verdict Replay must reach: "" for
// conforms, else the violated property.
type Scenario struct {
	Name  string // path under traces/, e.g. "conforms/token-ring.jsonl"
	Doc   string
	Trace spec.Trace
	Want  string
}

var (
	p1, p2, p3 = spec.ProcID("P1"), spec.ProcID("P2"), spec.ProcID("P3")
	c12, c21   = spec.Channel{From: p1, To: p2}, spec.Channel{From: p2, To: p1}
	c23, c31   = spec.Channel{From: p2, To: p3}, spec.Channel{From: p3, To: p1}
)

// script runs steps against a Net and stops at the first error.
type script struct {
	n   *Net
	err error
}

func (s *script) send(p, q spec.ProcID, a int64) {
	if s.err == nil {
		_, s.err = s.n.Send(p, q, a)
	}
}

func (s *script) initiate(p spec.ProcID, id spec.SnapID) {
	if s.err == nil {
		_, s.err = s.n.Initiate(p, id)
	}
}

func (s *script) deliver(c spec.Channel) { s.deliverAt(c, 0) }

func (s *script) deliverAt(c spec.Channel, i int) {
	if s.err == nil {
		_, s.err = s.n.DeliverAt(c, i)
	}
}

func (s *script) scenario(name, doc, want string, drained bool) (Scenario, error) {
	if s.err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", name, s.err)
	}
	tr := s.n.Trace(doc)
	tr.Header.Drained = drained
	return Scenario{Name: name, Doc: doc, Trace: tr, Want: want}, nil
}

func bankScript(topo *spec.Topology, bal map[spec.ProcID]int64) *script {
	n, err := NewBankNet(topo, bal)
	return &script{n: n, err: err}
}

// twoAccounts is the article's bank: account A on P1 with $100, B on P2
// with $50, both channels.
func twoAccounts() *script {
	return bankScript(spec.Complete(2), map[spec.ProcID]int64{p1: 100, p2: 50})
}

// Scenarios are the article's scenarios and their counter-examples, as
// traces of the real implementation. traces/ holds them as files.
func Scenarios() ([]Scenario, error) {
	var out []Scenario
	add := func(sc Scenario, err error) error {
		if err == nil {
			out = append(out, sc)
		}
		return err
	}

	// The two-account transfer: P1 sends $30 while P2 initiates; the $30
	// is recorded as the state of P1->P2. Total $150.
	s := twoAccounts()
	s.send(p1, p2, 30)
	s.initiate(p2, 1)
	s.deliver(c21) // P2's marker: P1 records $70 (sent 1)
	s.deliver(c12) // the $30, received while P2 records P1->P2
	s.deliver(c12) // P1's marker closes P1->P2
	if err := add(s.scenario("conforms/two-account-transfer.jsonl",
		"Article, two accounts: P1 ($100) transfers $30 to P2 ($50) while P2 initiates; the $30 is recorded in flight on P1->P2; the snapshot holds $150.", "", true)); err != nil {
		return nil, err
	}

	// The same run with the channel state dropped from what P2 reported:
	// a receiving rule that records no channel state (MCNoRecord).
	sc := out[len(out)-1]
	sc.Name = "rejects/ExactChannelState-missing-message.jsonl"
	sc.Doc = "Article, missing message: the two-account transfer with P1->P2's recorded $30 dropped from the reported snapshot (a receiving rule that records no channel state); the snapshot holds $70 + $50 = $120."
	sc.Trace.Header.Note = sc.Doc
	g := sc.Trace.Recorded[0].State()
	g.Chans[c12] = nil
	sc.Trace.Recorded = []spec.RecordedSnapshot{spec.NewRecordedSnapshot(1, p2, g)}
	sc.Want = "ExactChannelState"
	out = append(out, sc)

	// P1 records before sending: the transfer follows the marker.
	s = twoAccounts()
	s.initiate(p1, 1)
	s.send(p1, p2, 30)
	s.deliver(c12) // marker: P2 records $50
	s.deliver(c12) // the $30, after the cut
	s.deliver(c21) // P2's marker closes P2->P1
	if err := add(s.scenario("conforms/two-account-initiated-before-send.jsonl",
		"Two accounts, P1 initiates and then transfers $30: the transfer follows the marker and is in no recording; the snapshot holds $100 + $50.", "", true)); err != nil {
		return nil, err
	}

	// The orphan: the same run on a network that lets the $30 overtake
	// P1's marker (not FIFO, MCNonFIFO).
	s = twoAccounts()
	s.initiate(p1, 1)
	s.send(p1, p2, 30)
	s.deliverAt(c12, 1) // the $30 overtakes the marker
	s.deliver(c12)      // marker: P2 records $80
	s.deliver(c21)
	if err := add(s.scenario("rejects/ConsistentCut-orphan.jsonl",
		"Article, orphan message: P1 records $100 and then sends $30, which overtakes P1's marker (a non-FIFO network); P2 records $80 including it; the snapshot holds $180.", "ConsistentCut", true)); err != nil {
		return nil, err
	}

	// The article's three-process token ring, step by step.
	n, err := NewTokenNet(spec.Ring(3), p2)
	s = &script{n: n, err: err}
	s.initiate(p1, 1)                         // 1. P1 records hasToken=false, marker to P2
	s.send(p2, p3, 1)                         // 2. P2 sends the token before the marker arrives
	s.deliver(spec.Channel{From: p1, To: p2}) // 3. P2: first marker, records false, forwards
	s.deliver(c23)                            // 4. P3 takes the token,
	s.deliver(c23)                            //    then its first marker: records true, forwards
	s.deliver(c31)                            // 5. P1: subsequent marker, P3->P1 recorded empty
	if err := add(s.scenario("conforms/token-ring.jsonl",
		"Article, three-node token ring P1->P2->P3->P1: P1 initiates without the token, P2 passes it to P3 ahead of the marker; recorded P1 false, P2 false, P3 true, channels empty: one token.", "", true)); err != nil {
		return nil, err
	}

	// The puzzle: m21 is in transit when P1 initiates.
	s = twoAccounts()
	s.send(p2, p1, 20) // m21 in transit
	s.initiate(p1, 1)
	s.deliver(c21) // m21 arrives after P1 recorded: recorded on P2->P1
	s.deliver(c12) // marker reaches P2: case 1
	s.deliver(c21) // P2's marker closes P2->P1
	if err := add(s.scenario("conforms/puzzle.jsonl",
		"Article, the P1/P2 puzzle: m21 ($20) is in transit when P1 initiates; P1's recorded memory is pre-m21 ($100), P2's post-send ($30), and P2->P1 holds [m21].", "", true)); err != nil {
		return nil, err
	}

	// A snapshot that never completes although the run claims to be
	// drained: P2's marker to P1 is never delivered.
	s = twoAccounts()
	s.initiate(p1, 1)
	s.deliver(c12)
	if err := add(s.scenario("rejects/SnapshotsComplete-lost-marker.jsonl",
		"Two accounts, P1 initiates and P2 records, but P2's marker to P1 is never delivered, yet the trace claims a drained run: snapshot 1 never completes.", PropComplete, true)); err != nil {
		return nil, err
	}
	return out, nil
}
