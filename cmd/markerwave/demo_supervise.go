package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/markerwave/markerwave"
	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/coord"
	"github.com/markerwave/markerwave/impl/coord/etcdembed"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// recoverAutomatically is the demo's last step: the bank again, under
// the supervised mode (markerwave.Supervise) with a real etcd embedded
// in this process; a snapshot, a node killed, and the recovery no one
// asked for.
func (r *demoRun) recoverAutomatically() {
	if err := demoSupervised(r.w, filepath.Join(r.o.out, "supervised"), r.topo, r.o.balance); err != nil {
		r.failf("✗ automatic recovery: %v\n", err)
	}
}

// demoSupervised runs the supervised bank of topology t in store dir.
func demoSupervised(w io.Writer, dir string, t *spec.Topology, balance int64) error {
	srv, err := etcdembed.Start(etcdembed.Config{})
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recovered := make(chan markerwave.Recovery, 1)
	s, err := markerwave.Supervise(ctx, markerwave.SuperviseConfig{
		Config: markerwave.Config{
			Topology: t, Store: dir,
			NewApp: func(spec.ProcID) (markerwave.App, error) { return app.NewBank(balance) },
		},
		Etcd:       markerwave.Etcd{Endpoints: []string{srv.Endpoint()}, Cluster: "demo"},
		OnRecovery: func(r markerwave.Recovery) { recovered <- r },
	})
	if err != nil {
		return err
	}
	defer s.Stop(context.Background())
	g, err := supervisedSnapshot(ctx, s, t)
	if err != nil {
		return err
	}
	victim := t.Procs[len(t.Procs)-1]
	fmt.Fprintf(w, "\nautomatic recovery, coordinated through a real etcd (embedded at %s): snapshot %d complete, in its catalog; killing %s...\n", srv.Endpoint(), g.ID, victim)
	if err := s.Crash(victim); err != nil {
		return err
	}
	var rec markerwave.Recovery
	select {
	case rec = <-recovered:
	case <-ctx.Done():
		return fmt.Errorf("no recovery within 20 s of killing %s", victim)
	}
	return reportSupervised(ctx, w, s, t, g, rec, balance*int64(len(t.Procs)))
}

// supervisedSnapshot makes transfers on s and takes a snapshot (saved,
// published to the catalog).
func supervisedSnapshot(ctx context.Context, s *markerwave.Supervised, t *spec.Topology) (snapshot.Global, error) {
	for i := range 60 {
		_ = s.Send(t.Procs[i%len(t.Procs)], t.Procs[(i+1)%len(t.Procs)], app.Transfer(int64(1+i%7)))
	}
	return s.TakeSnapshot(ctx, t.Procs[0])
}

// reportSupervised checks the recovered cluster (from g, every node
// restored, the total conserved on a new snapshot) and says so.
func reportSupervised(ctx context.Context, w io.Writer, s *markerwave.Supervised, t *spec.Topology, g snapshot.Global, rec markerwave.Recovery, total int64) error {
	if rec.Incarnation.From != g.ID {
		return fmt.Errorf("incarnation %d started from snapshot %d, not the latest complete %d", rec.Incarnation.N, rec.Incarnation.From, g.ID)
	}
	if err := s.Quiesce(ctx); err != nil {
		return err
	}
	g2, err := supervisedSnapshot(ctx, s, t)
	if err != nil {
		return err
	}
	if g2.Total() != total {
		return fmt.Errorf("snapshot %d after the recovery totals %d, want %d", g2.ID, g2.Total(), total)
	}
	fmt.Fprintf(w, "✓ %s found dead in %v (%s); with no operator the survivors stopped and incarnation %d started from snapshot %d (the catalog's latest, its parts checked on disk) in %v; a new snapshot there (id %d) totals %d\n",
		rec.Death.Proc, rec.Detection.Round(time.Millisecond), howFound(rec.Death), rec.Incarnation.N, rec.Incarnation.From, rec.Restart.Round(time.Millisecond), g2.ID, g2.Total())
	return nil
}

// howFound says what found d: the nodes' detector or etcd's lease.
func howFound(d coord.Death) string {
	if strings.Contains(d.Why, "lease") {
		return "its lease in etcd expired"
	}
	return "the survivors' failure detector"
}
