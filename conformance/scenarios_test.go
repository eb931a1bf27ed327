package conformance

import (
	"fmt"
	"github.com/markerwave/markerwave/impl/core"

	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/impl/wire"
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
	Want  spec.Property
	// Skipped lists the scheduled deliveries the implementation did not
	// take: a frame its receiver refused (dropped, its channel blocked
	// from then on) or a frame that was not there. Empty for a correct
	// implementation; a broken one still yields a trace, whose verdict
	// names what it breaks.
	Skipped []string
}

var (
	p1, p2, p3 = spec.ProcID("P1"), spec.ProcID("P2"), spec.ProcID("P3")
	c12, c21   = spec.Channel{From: p1, To: p2}, spec.Channel{From: p2, To: p1}
	c23, c31   = spec.Channel{From: p2, To: p3}, spec.Channel{From: p3, To: p1}
	c13, c32   = spec.Channel{From: p1, To: p3}, spec.Channel{From: p3, To: p2}
)

// script runs steps against a coretest.Net. A send or initiation that fails stops
// it; a scheduled delivery that cannot be taken is skipped and listed
// (Scenario.Skipped): the frame is not there, or its receiver refuses it,
// and then the frame is dropped and its channel blocked (as in
// coretest.Net.DrainDropping), so that the trace stays a FIFO run and its verdict
// names the property the implementation breaks.
type script struct {
	n       *coretest.Net
	err     error
	skipped []string
	blocked map[spec.Channel]bool
}

func (s *script) send(p, q spec.ProcID, a int64) {
	if s.err == nil {
		_, s.err = s.n.SendAmount(p, q, a)
	}
}

func (s *script) initiate(p spec.ProcID, id spec.SnapID) {
	if s.err == nil {
		_, s.err = s.n.Initiate(p, id)
	}
}

func (s *script) deliver(c spec.Channel) { s.deliverAt(c, 0) }

// deliverMarker delivers the head of c if it is snapshot id's marker;
// deliverApp if it is an application message of amount a. Another head
// blocks c (a broken node lost or mislabelled a frame): delivering it
// would be a step the spec cannot take there, and the replay would stop on
// a message mismatch instead of reaching the end of the run.
func (s *script) deliverMarker(c spec.Channel, id spec.SnapID) {
	s.deliverIf(c, fmt.Sprintf("marker(%d)", id), func(f wire.Frame) bool { return f.Kind == wire.KindMarker && f.Snap == id })
}

func (s *script) deliverApp(c spec.Channel, a int64) {
	s.deliverIf(c, fmt.Sprintf("a message of %d", a), func(f wire.Frame) bool {
		amt, err := core.AmountOf(s.n.Apps[c.To], f.Payload)
		return f.Kind == wire.KindApp && err == nil && amt == a
	})
}

func (s *script) deliverIf(c spec.Channel, want string, ok func(wire.Frame) bool) {
	if q := s.n.Queues[c]; s.err == nil && !s.blocked[c] && len(q) > 0 && !ok(q[0]) {
		s.skipped = append(s.skipped, fmt.Sprintf("step %d: the head of %s is %s, not %s: %s blocked", len(s.n.Events)+1, c, q[0], want, c))
		s.block(c)
		return
	}
	s.deliverAt(c, 0)
}

func (s *script) block(c spec.Channel) {
	if s.blocked == nil {
		s.blocked = map[spec.Channel]bool{}
	}
	s.blocked[c] = true
}

func (s *script) deliverAt(c spec.Channel, i int) {
	switch {
	case s.err != nil:
	case s.blocked[c]:
		s.skipped = append(s.skipped, fmt.Sprintf("step %d: %s is blocked behind a refused frame", len(s.n.Events)+1, c))
	case i >= len(s.n.Queues[c]):
		s.skipped = append(s.skipped, fmt.Sprintf("step %d: %s holds %d frames, no frame %d to deliver", len(s.n.Events)+1, c, len(s.n.Queues[c]), i))
	default:
		if _, err := s.n.DeliverAt(c, i); err != nil {
			f, _ := s.n.Drop(c, i)
			s.skipped = append(s.skipped, fmt.Sprintf("step %d: %s, dropped; %s blocked", len(s.n.Events)+1, coretest.Refusal{Chan: c, Frame: f, Err: err}, c))
			s.block(c)
		}
	}
}

func (s *script) scenario(name, doc string, want spec.Property, drained bool) (Scenario, error) {
	if s.err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", name, s.err)
	}
	tr := s.n.Trace(doc)
	tr.Header.Drained = drained
	return Scenario{Name: name, Doc: doc, Trace: tr, Want: want, Skipped: s.skipped}, nil
}

func bankScript(topo *spec.Topology, bal map[spec.ProcID]int64) *script {
	n, err := coretest.NewBank(topo, bal)
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
	if len(sc.Trace.Recorded) > 0 { // none if a broken node never completes it
		r := sc.Trace.Recorded[0]
		g := r.State()
		g.Chans[c12] = nil // the cut seqs stay: P1->P2 had $30 (#1) in flight
		sc.Trace.Recorded = []spec.RecordedSnapshot{spec.NewRecordedSnapshot(1, p2, g, r.Cut)}
	}
	sc.Want = spec.PropExactChannelState
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
		"Article, orphan message: P1 records $100 and then sends $30, which overtakes P1's marker (a non-FIFO network); P2 records $80 including it; the snapshot holds $180.", spec.PropConsistentCut, true)); err != nil {
		return nil, err
	}

	// The article's three-process token ring, step by step.
	n, err := coretest.NewToken(spec.Ring(3), p2)
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

	// Two concurrent snapshots on three fully connected banks, with
	// messages in flight on several channels: P1 initiates 1, P3 records
	// 1 and then initiates 2 while 1 is still active there, P1 records 2
	// while 1 is still active at P1. P1, the initiator of 1, records its
	// two incoming channels at once and P3->P1's marker arrives first;
	// P2->P1's $10 is recorded by both snapshots, P3->P2's $20 by 1 only,
	// P1->P3's $5 by 2 only.
	s = bankScript(spec.Complete(3), map[spec.ProcID]int64{p1: 100, p2: 80, p3: 60})
	s.send(p2, p1, 10)      // in flight on P2->P1
	s.send(p3, p2, 20)      // in flight on P3->P2
	s.initiate(p1, 1)       // P1 records $100; records P2->P1 and P3->P1
	s.send(p1, p3, 5)       // after P1 recorded 1, behind its marker
	s.deliverMarker(c13, 1) // P3 records $40 for 1, forwards; records P2->P3
	s.initiate(p3, 2)       // with 1 active at P3: Marker(2) on P3->P1, P3->P2
	s.deliverApp(c13, 5)    // recorded by 2 on P1->P3 (closed for 1)
	s.deliverMarker(c31, 1) // P1 closes P3->P1 for 1; P2->P1 still records
	s.deliverMarker(c31, 2) // P1 records $95 for 2 with 1 active, forwards
	s.deliverApp(c21, 10)   // recorded on P2->P1 by 1 and by 2
	s.deliverMarker(c12, 1) // P2 records $70 for 1, forwards
	s.deliverApp(c32, 20)   // recorded on P3->P2 by 1
	s.deliverMarker(c32, 1) // P2 completes 1
	s.deliverMarker(c32, 2) // P2 records $90 for 2, forwards
	s.deliverMarker(c12, 2) // P2 completes 2
	s.deliverMarker(c21, 1) // P1 completes 1
	s.deliverMarker(c21, 2) // P1 completes 2
	s.deliverMarker(c13, 2) // P3 closes P1->P3 for 2
	s.deliverMarker(c23, 1) // P3 completes 1
	s.deliverMarker(c23, 2) // P3 completes 2
	if err := add(s.scenario("conforms/concurrent-snapshots.jsonl",
		"Two concurrent snapshots on three fully connected banks (P1 $100, P2 $80, P3 $60): P1 initiates 1; P3 records 1, then initiates 2 while 1 is active there; P1 records its two incoming channels at once for 1 (P3->P1's marker first) and records 2 while 1 is active. Snapshot 1 holds $100 + $70 + $40 + $10 on P2->P1 + $20 on P3->P2; snapshot 2 holds $95 + $90 + $40 + $5 on P1->P3 + $10 on P2->P1: $240 each.", "", true)); err != nil {
		return nil, err
	}

	// A snapshot that never completes although the run claims to be
	// drained: P2's marker to P1 is never delivered.
	s = twoAccounts()
	s.initiate(p1, 1)
	s.deliver(c12)
	if err := add(s.scenario("rejects/SnapshotsComplete-lost-marker.jsonl",
		"Two accounts, P1 initiates and P2 records, but P2's marker to P1 is never delivered, yet the trace claims a drained run: snapshot 1 never completes.", spec.PropSnapshotsComplete, true)); err != nil {
		return nil, err
	}
	rs, err := restoreScenarios()
	if err != nil {
		return nil, err
	}
	fs, err := faultScenarios()
	return append(append(out, rs...), fs...), err
}
