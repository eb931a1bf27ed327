package conformance

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// jobQueue is an opaque application (a core.App without
// core.Quantities): each process holds a queue of job ids; a send gives
// up its oldest job, and the receiver queues the job the payload names
// (the workload's payloads all name "job"). The spec sees it only through
// the message count abstraction.
type jobQueue struct {
	Jobs []string `json:"jobs"`
}

func (q *jobQueue) Capture() ([]byte, error) { return json.Marshal(q) }

func (q *jobQueue) Restore(state []byte) error {
	var r jobQueue
	if err := spec.DecodeStrict(state, &r); err != nil {
		return fmt.Errorf("jobs: restore: %w", err)
	}
	q.Jobs = r.Jobs
	return nil
}

// Send gives up the oldest job; it refuses when none is queued.
func (q *jobQueue) Send(to spec.ProcID, p []byte) error {
	if len(q.Jobs) == 0 {
		return fmt.Errorf("jobs: no job to hand to %s", to)
	}
	q.Jobs = q.Jobs[1:]
	return nil
}

func (q *jobQueue) Apply(_ spec.ProcID, p []byte) error {
	var id string
	if err := json.Unmarshal(p, &id); err != nil {
		return fmt.Errorf("jobs: payload %q is not a job id", p)
	}
	q.Jobs = append(q.Jobs, id)
	return nil
}

// eachJobOnce is the job queue's invariant: every job is queued at exactly
// one process or in flight exactly once, over the snapshot's states.
func eachJobOnce(jobs int) spec.Invariant {
	return spec.Invariant{Name: "each job queued once", Check: func(s spec.AppSnapshot) error {
		n := 0
		for p, st := range s.States {
			var q jobQueue
			if err := spec.DecodeStrict(st, &q); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			n += len(q.Jobs)
		}
		for _, ps := range s.InFlight {
			n += len(ps)
		}
		if n != jobs {
			return fmt.Errorf("%d jobs in the snapshot, want %d", n, jobs)
		}
		return nil
	}}
}

// TestRuntimeOpaque runs an opaque application (a job queue, no
// Balance or Amount) on the concurrent runtime and audits the run like a
// bank's: the model replays it through the message count abstraction
// (core.OpaqueBalance), and Replay and CheckRun find ConsistentCut,
// ExactChannelState and the theorem on every snapshot; the collector
// checks the queue's own invariant on each.
func TestRuntimeOpaque(t *testing.T) {
	root := rootSeed(t)
	topo := spec.Complete(3)
	const perProc = 5
	kind := &appKind{
		newApp: func(p spec.ProcID, _ int64) (core.App, error) {
			q := &jobQueue{}
			for k := range perProc {
				q.Jobs = append(q.Jobs, string(p)+"-"+strconv.Itoa(k))
			}
			return q, nil
		},
		msg: func(*rand.Rand) []byte { return []byte(`"job"`) },
		invariants: func(map[spec.ProcID]int64) []spec.Invariant {
			return []spec.Invariant{eachJobOnce(perProc * len(topo.Procs))}
		},
	}
	w := workload{seed: subSeed(root, 0, "opaque"), transfers: 60, pairs: 3, root: root, kind: kind}
	w.delay = subSeed(root, 0, "opaque-delay")
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		a, _ := kind.newApp(p, 0)
		bal[p] = core.InitialBalance(a)
	}
	rng := rand.New(rand.NewPCG(w.seed, 7))
	run := runTraced(t, topo, transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 200 * time.Microsecond, Seed: w.delay}), w, rng, bal, nil)
	r := replayRun(t, run.trace, w)
	if r.OK() {
		t.Logf("opaque run conforms: %d snapshots", len(run.snaps))
	}

	// The audit rebuilds the queues from the events alone and checks the
	// invariant on every recorded snapshot; one the run breaks is named.
	auditApp(t, run.trace, w, bal)
	audited := func(p spec.ProcID) (App, error) { return kind.newApp(p, 0) }
	jobs := perProc * len(topo.Procs)
	err := CheckAppInvariants(run.trace, audited, []spec.Invariant{eachJobOnce(jobs + 1)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf(`breaks invariant "each job queued once": %d jobs in the snapshot, want %d`, jobs, jobs+1))
	var one *spec.InvariantError
	require.ErrorAs(t, err, &one)
}
