package markerwave_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/markerwave/markerwave"
)

// shard is one node of a sharded key-value store. It owns some keys; a
// key moves to another node by a handoff message carrying it and its
// value. keepOnHandoff plants a bug: the sender keeps its copy.
type shard struct {
	owned         map[string]string
	keepOnHandoff bool
}

// handoff is the payload moving one key.
type handoff struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func move(key, value string) []byte {
	b, _ := json.Marshal(handoff{Key: key, Value: value})
	return b
}

func decodeHandoff(p []byte) (handoff, error) {
	var h handoff
	if err := json.Unmarshal(p, &h); err != nil || h.Key == "" {
		return handoff{}, fmt.Errorf("kv: payload %q is not a handoff", p)
	}
	return h, nil
}

// Capture encodes the keys the shard owns (encoding/json sorts them).
func (s *shard) Capture() ([]byte, error) { return json.Marshal(s.owned) }

// Restore replaces the shard's keys with captured ones.
func (s *shard) Restore(state []byte) error {
	owned := map[string]string{}
	if err := json.Unmarshal(state, &owned); err != nil {
		return fmt.Errorf("kv: restore: %w", err)
	}
	s.owned = owned
	return nil
}

// Send hands a key the shard owns over to another shard.
func (s *shard) Send(to markerwave.ProcID, p []byte) error {
	h, err := decodeHandoff(p)
	if err != nil {
		return err
	}
	if _, ok := s.owned[h.Key]; !ok {
		return fmt.Errorf("kv: cannot hand %q to %s: not owned here", h.Key, to)
	}
	if !s.keepOnHandoff {
		delete(s.owned, h.Key)
	}
	return nil
}

// Apply takes ownership of a key handed over.
func (s *shard) Apply(from markerwave.ProcID, p []byte) error {
	h, err := decodeHandoff(p)
	if err != nil {
		return err
	}
	if _, ok := s.owned[h.Key]; ok {
		return fmt.Errorf("kv: %s handed over %q, already owned here", from, h.Key)
	}
	s.owned[h.Key] = h.Value
	return nil
}

// oneOwner is the store's invariant over a global snapshot: each of the
// keys is owned by exactly one shard or in flight in exactly one handoff.
func oneOwner(keys ...string) markerwave.Invariant {
	return markerwave.Invariant{Name: "every key has exactly one owner", Check: func(s markerwave.AppSnapshot) error {
		where := map[string][]string{}
		for p, st := range s.States {
			owned := map[string]string{}
			if err := json.Unmarshal(st, &owned); err != nil {
				return fmt.Errorf("%s's state: %w", p, err)
			}
			for k := range owned {
				where[k] = append(where[k], string(p))
			}
		}
		for c, ps := range s.InFlight {
			for _, p := range ps {
				h, err := decodeHandoff(p)
				if err != nil {
					return fmt.Errorf("in flight on %s: %w", c, err)
				}
				where[h.Key] = append(where[h.Key], "in flight on "+c.String())
			}
		}
		var bad []string
		for _, k := range keys {
			if len(where[k]) != 1 {
				sort.Strings(where[k])
				bad = append(bad, fmt.Sprintf("key %q has %d owners %v", k, len(where[k]), where[k]))
			}
		}
		if len(bad) > 0 {
			return errors.New(strings.Join(bad, "; "))
		}
		return nil
	}}
}

// kvApps starts P1 with keys a, b, c and P2 with d; P3 owns none.
func kvApps(keep bool) func(markerwave.ProcID) (markerwave.App, error) {
	initial := map[markerwave.ProcID]map[string]string{"P1": {"a": "1", "b": "2", "c": "3"}, "P2": {"d": "4"}}
	return func(p markerwave.ProcID) (markerwave.App, error) {
		owned := map[string]string{}
		for k, v := range initial[p] {
			owned[k] = v
		}
		return &shard{owned: owned, keepOnHandoff: keep}, nil
	}
}

// A sharded key-value store moves keys between nodes while snapshots are
// taken; every snapshot is checked for "every key has exactly one owner",
// saved, and the store is recovered from the latest one.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, _ := os.MkdirTemp("", "kv-store")
	defer os.RemoveAll(dir)
	top := markerwave.Complete(3)
	cfg := markerwave.Config{
		Topology:   top,
		NewApp:     kvApps(false),
		Invariants: []markerwave.Invariant{oneOwner("a", "b", "c", "d")},
		Store:      dir,
	}
	c, err := markerwave.Start(cfg)
	if err != nil {
		panic(err)
	}
	_ = c.Send("P1", "P2", move("a", "1"))
	_ = c.Send("P2", "P3", move("d", "4"))
	g, err := c.TakeSnapshot(ctx, "P3") // while "a" and "d" may be in flight
	if err != nil {
		panic(err)
	}
	fmt.Println("snapshot", g.ID, "holds every key once")
	_ = c.Send("P1", "P3", move("b", "2"))
	if err := c.Stop(ctx); err != nil {
		panic(err)
	}

	// After a crash: restart from the latest complete snapshot. The
	// handoff of "b" came after it, so "b" is back at P1.
	from, err := markerwave.Recover(dir, top)
	if err != nil || from == nil {
		panic(fmt.Sprint("no snapshot to recover: ", err))
	}
	cfg.From = from
	c, err = markerwave.Start(cfg)
	if err != nil {
		panic(err)
	}
	if err := c.Quiesce(ctx); err != nil { // the handoffs in flight across snapshot 1 arrive again
		panic(err)
	}
	g, err = c.TakeSnapshot(ctx, "P1")
	if err != nil {
		panic(err)
	}
	_ = c.Stop(ctx)
	for _, n := range g.Nodes {
		fmt.Printf("%s owns %s\n", n.Proc, n.App)
	}
	// Output:
	// snapshot 1 holds every key once
	// P1 owns {"b":"2","c":"3"}
	// P2 owns {"a":"1"}
	// P3 owns {"d":"4"}
}

// A bug in the service (a handoff that keeps the sender's copy) is
// reported by its invariant, with the snapshot that shows it.
func Example_brokenInvariant() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := markerwave.Start(markerwave.Config{
		Topology:   markerwave.Complete(3),
		NewApp:     kvApps(true), // the planted bug
		Invariants: []markerwave.Invariant{oneOwner("a", "b", "c", "d")},
	})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)
	_ = c.Send("P1", "P2", move("a", "1"))
	_ = c.Quiesce(ctx)
	_, err = c.TakeSnapshot(ctx, "P1")
	var ie *markerwave.InvariantError
	if errors.As(err, &ie) {
		fmt.Println(err)
	}
	// Output:
	// snapshot 1 breaks invariant "every key has exactly one owner": key "a" has 2 owners [P1 P2]
	// in snapshot 1 (initiated by P1)
	//   P1 state {"a":"1","b":"2","c":"3"}
	//   P2 state {"a":"1","d":"4"}
	//   P3 state {}
}
