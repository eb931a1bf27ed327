package app

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// Conservation is the bank's stable property over a global snapshot: the
// recorded balances plus the transfers recorded in flight are total, the
// money the system started with (tla/ChandyLamport.tla Conservation,
// lines 306-309, stated over the application's own states and payloads
// instead of the spec's abstraction).
func Conservation(total int64) spec.Invariant {
	return spec.Invariant{Name: "Conservation", Check: func(s spec.AppSnapshot) error {
		held, err := sumStates(s, BankBalance)
		if err != nil {
			return err
		}
		flight, err := sumInFlight(s, DecodeTransfer)
		if err != nil {
			return err
		}
		if held+flight != total {
			return fmt.Errorf("the snapshot holds %d (%d in balances + %d in flight), the system holds %d", held+flight, held, flight, total)
		}
		return nil
	}}
}

// OneToken is the token ring's invariant over a global snapshot: exactly
// one token, held by a process or in flight.
func OneToken() spec.Invariant {
	return spec.Invariant{Name: "OneToken", Check: func(s spec.AppSnapshot) error {
		held, err := sumStates(s, func(b []byte) (int64, error) {
			has, err := TokenHeld(b)
			return boolInt(has), err
		})
		if err != nil {
			return err
		}
		var t Token
		flight, err := sumInFlight(s, func(p []byte) (int64, error) { return t.Amount(p) })
		if err != nil {
			return err
		}
		if held+flight != 1 {
			return fmt.Errorf("the snapshot holds %d tokens (%d held + %d in flight), want exactly 1", held+flight, held, flight)
		}
		return nil
	}}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// sumStates adds up value over every process's state, naming the
// process whose state value refuses.
func sumStates(s spec.AppSnapshot, value func([]byte) (int64, error)) (int64, error) {
	var sum int64
	for p, st := range s.States {
		v, err := value(st)
		if err != nil {
			return 0, fmt.Errorf("%s's state: %w", p, err)
		}
		sum += v
	}
	return sum, nil
}

// sumInFlight adds up value over every in-flight payload, naming the
// channel of one it refuses.
func sumInFlight(s spec.AppSnapshot, value func([]byte) (int64, error)) (int64, error) {
	var sum int64
	for c, ps := range s.InFlight {
		for _, p := range ps {
			v, err := value(p)
			if err != nil {
				return 0, fmt.Errorf("in flight on %s: %w", c, err)
			}
			sum += v
		}
	}
	return sum, nil
}
