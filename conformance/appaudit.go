package conformance

import (
	"errors"
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// App is an application as the audit replays it: the method set of
// impl/core's App (the audit imports no impl), so any core.App is one.
type App interface {
	Capture() ([]byte, error)
	Restore(state []byte) error
	Send(to spec.ProcID, payload []byte) error
	Apply(from spec.ProcID, payload []byte) error
}

// appMsgKey is one message: its channel and its seq on it.
type appMsgKey struct {
	c   spec.Channel
	seq uint64
}

// appAudit replays a trace's events on fresh applications: what each
// process's state was when it recorded each snapshot, and every
// message's payload.
type appAudit struct {
	apps     map[spec.ProcID]App
	payloads map[appMsgKey][]byte
	states   map[spec.SnapID]map[spec.ProcID][]byte
}

// CheckAppInvariants audits a trace's recorded snapshots against the
// application's invariants, with the application treated as opaque
// state: it rebuilds each process's state from the events alone
// (newApp's initial state, then Send for every SendApp and Apply for
// every RecvApp, with the payloads the SendApp events carry), captures
// it where the process recorded each snapshot (its Initiate, or its
// first RecvMarker), takes each recorded channel's in-flight payloads
// from the SendApp events of their seqs, and checks every invariant on
// every recorded snapshot (spec.CheckInvariants). It does not trust the
// implementation's captured bytes: a snapshot whose state the events do
// not lead to is caught by Replay's ConsistentCut and ExactChannelState;
// this check is what the application's own properties add. A trace with
// restores (incarnations) is refused: the audit does not yet chain
// application states across them.
func CheckAppInvariants(tr spec.Trace, newApp func(spec.ProcID) (App, error), invs []spec.Invariant) error {
	if len(tr.Restores) > 0 {
		return errors.New("app audit: a trace with restores is not supported")
	}
	a := &appAudit{apps: map[spec.ProcID]App{}, payloads: map[appMsgKey][]byte{}, states: map[spec.SnapID]map[spec.ProcID][]byte{}}
	for _, p := range tr.Header.Topology.Procs {
		app, err := newApp(p)
		if err != nil {
			return fmt.Errorf("app audit: %s's application: %w", p, err)
		}
		a.apps[p] = app
	}
	for i, e := range tr.Events {
		if err := a.step(e); err != nil {
			return fmt.Errorf("app audit: event %d (%s #%d of %s): %w", i+1, e.Action, e.Seq, e.Proc, err)
		}
	}
	var errs []error
	for _, r := range tr.Recorded {
		s, err := a.snapshot(r)
		if err == nil {
			err = spec.CheckInvariants(s, invs)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// step applies one event to its process's application.
func (a *appAudit) step(e spec.Event) error {
	switch {
	case e.Action == spec.SendApp:
		a.payloads[appMsgKey{e.Chan(), e.Msg}] = e.Payload
		return a.apps[e.Proc].Send(e.To, e.Payload)
	case e.Action == spec.RecvApp:
		p, ok := a.payloads[appMsgKey{e.Chan(), e.Msg}]
		if !ok {
			return fmt.Errorf("message #%d on %s received but never sent", e.Msg, e.Chan())
		}
		return a.apps[e.Proc].Apply(e.From, p)
	case e.Action == spec.Initiate || (e.Action == spec.RecvMarker && e.First):
		return a.record(e.Snap, e.Proc)
	}
	return nil
}

// record captures p's state as its recorded state of snapshot s.
func (a *appAudit) record(s spec.SnapID, p spec.ProcID) error {
	st, err := a.apps[p].Capture()
	if err != nil {
		return fmt.Errorf("capture for snapshot %d: %w", s, err)
	}
	if a.states[s] == nil {
		a.states[s] = map[spec.ProcID][]byte{}
	}
	a.states[s][p] = st
	return nil
}

// snapshot is recorded snapshot r as the application sees it.
func (a *appAudit) snapshot(r spec.RecordedSnapshot) (spec.AppSnapshot, error) {
	s := spec.AppSnapshot{Snap: r.Snap, States: a.states[r.Snap], InFlight: map[spec.Channel][][]byte{}}
	if len(s.States) != len(a.apps) {
		return s, fmt.Errorf("app audit: snapshot %d: %d of %d processes recorded in the events", r.Snap, len(s.States), len(a.apps))
	}
	for c, msgs := range r.Chans {
		for _, m := range msgs {
			p, ok := a.payloads[appMsgKey{c, m.Seq}]
			if !ok {
				return s, fmt.Errorf("app audit: snapshot %d records message #%d on %s, never sent", r.Snap, m.Seq, c)
			}
			s.InFlight[c] = append(s.InFlight[c], p)
		}
	}
	return s, nil
}
