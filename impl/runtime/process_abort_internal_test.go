package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// A node process whose saved part of a snapshot waits only for the part
// of a peer that is then suspected aborts that snapshot at once, naming
// the cause in the one wording (spec.AbortVerdict), records the abort in
// the store (which then reports it aborted, in the same words) and its
// summary names it aborted, not unfinished: issue #20's initiator killed
// after its markers went out (TestInitiatorDeathAbortsEverywhere runs it
// with real processes). A snapshot whose missing part is a live peer's
// is left waiting, and one another node aborted is never assembled.
func TestProcessAbortsSnapshotsLackingSuspectedPart(t *testing.T) {
	b, err := os.ReadFile("testdata/cluster.json")
	require.NoError(t, err)
	cfg, err := ParseConfig(b)
	require.NoError(t, err)
	cfg.SnapshotDir = filepath.Join(t.TempDir(), "snaps")
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	var log syncBuilder
	p, err := newProcess(cfg, "P2", ProcessOptions{Store: st, Out: &log})
	require.NoError(t, err)
	p.startWriter()

	// Snapshot s, P1's (k=0, idx 0): P2's and P3's parts saved, P1's
	// missing. Snapshot u: P1's and P2's saved, P3's missing.
	s, u := spec.SnapID(5<<SnapSeqBits|1), spec.SnapID(5<<SnapSeqBits|4)
	_, err = st.SavePart(snapshot.Part{Snap: s, Node: snapshot.NodeState{Proc: "P3"}})
	require.NoError(t, err)
	_, err = st.SavePart(snapshot.Part{Snap: u, Node: snapshot.NodeState{Proc: "P1"}})
	require.NoError(t, err)
	p.savePart(snapshot.Part{Snap: s, Node: snapshot.NodeState{Proc: "P2"}})
	p.savePart(snapshot.Part{Snap: u, Node: snapshot.NodeState{Proc: "P2"}})
	assert.Contains(t, log.String(), "P2: snapshot 5242881: local part saved, waiting for P1\n")

	p.onFault(Fault{Action: spec.Suspect, Node: "P2", Peer: "P1", Since: time.Now(), At: time.Now()})
	p.stopWriter()
	v := spec.AbortVerdict{Snap: s, Cause: "P1", Initiator: "P1", By: "P2"}
	assert.Contains(t, log.String(), "P2: snapshot 5242881 aborted: its initiator P1 is suspected (crashed or unreachable): its part is missing")
	ab, err := st.Aborts(s)
	require.NoError(t, err)
	assert.Equal(t, []spec.AbortVerdict{v}, ab, "the abort is recorded in the store")
	ents, err := st.Catalog(cfg.Topology)
	require.NoError(t, err)
	require.Len(t, ents, 2)
	assert.Equal(t, "aborted: "+v.Reason(), ents[0].String(), "the store says it in the same words")
	assert.Equal(t, "incomplete: no part of P3", ents[1].String(), "u waits for a live peer: not aborted")

	sum := p.summary()
	assert.Equal(t, []spec.AbortVerdict{v}, sum.Aborted)
	assert.Contains(t, sum.Error()+"\n", "\n  "+v.String()+"\n")
	assert.NotContains(t, sum.Error(), "unfinished snapshot 5242881")

	// P3, restarted (its part of s saved after the abort): the snapshot
	// has every part but P1's, and is never assembled; its summary names
	// it aborted by P2.
	p3, err := newProcess(cfg, "P3", ProcessOptions{Store: st, Out: &log})
	require.NoError(t, err)
	p3.startWriter()
	_, err = st.SavePart(snapshot.Part{Snap: s, Node: snapshot.NodeState{Proc: "P1"}})
	require.NoError(t, err)
	p3.savePart(snapshot.Part{Snap: s, Node: snapshot.NodeState{Proc: "P3"}})
	p3.stopWriter()
	ids, err := st.List()
	require.NoError(t, err)
	assert.Empty(t, ids, "an aborted snapshot was assembled")
	assert.Contains(t, p3.summary().Error(), "\n  "+v.String()+" (aborted by P2)")
	assert.Contains(t, log.String(), "P3: "+v.String()+" (aborted by P2): it is never assembled, and the stop does not wait for it\n", "said once, in the same words")
	assert.Equal(t, 1, strings.Count(log.String(), "P3: "+v.String()))
}

// syncBuilder is a strings.Builder safe for concurrent writers.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
