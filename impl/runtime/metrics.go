package runtime

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// Metrics are a node's snapshot figures, the ones Flink reports for its
// checkpoints, served for Prometheus at nodes.ID.metrics (GET /metrics).
// Every metric carries the label node="ID". See docs/multi-process.md
// for the table.
type Metrics struct {
	reg *prometheus.Registry

	completed, assembled, aborted, failed, suspected, refused prometheus.Counter

	lastID, lastDuration, lastSize, lastChanBytes, lastChanMsgs prometheus.Gauge
	detection, recovery, restoredFrom                           prometheus.Gauge

	mu      sync.Mutex
	started map[spec.SnapID]time.Time // when this node recorded its state
}

// newMetrics registers node self's metrics in a registry of their own.
func newMetrics(self spec.ProcID) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), started: map[spec.SnapID]time.Time{}}
	f := factory{m.reg, prometheus.Labels{"node": string(self)}}
	m.completed = f.counter("markerwave_snapshots_completed_total", "Snapshots whose part this node recorded and saved.")
	m.assembled = f.counter("markerwave_snapshots_assembled_total", "Global snapshots this node assembled and saved: it saved a part and found every part in the store (two nodes whose last parts complete together both do).")
	m.aborted = f.counter("markerwave_snapshots_aborted_total", "Snapshots this node aborted: a peer they waited for was suspected.")
	m.failed = f.counter("markerwave_snapshots_failed_total", "Snapshots whose part this node could not save, or could not assemble.")
	m.suspected = f.counter("markerwave_peers_suspected_total", "Suspicions of a peer by the failure detector.")
	m.refused = f.counter("markerwave_peers_refused_total", "Connections refused by mutual TLS: no certificate, or one not of this cluster or not of the node it claims to be.")
	m.lastID = f.gauge("markerwave_last_snapshot_id", "Id of the last snapshot whose part this node saved.")
	m.lastDuration = f.gauge("markerwave_last_snapshot_duration_seconds", "Last saved part: from this node recording its state to the marker of its last incoming channel.")
	m.lastSize = f.gauge("markerwave_last_snapshot_size_bytes", "Last saved part: its size in the store.")
	m.lastChanBytes = f.gauge("markerwave_last_snapshot_channel_state_bytes", "Last saved part: payload bytes of the in-flight messages recorded as channel state.")
	m.lastChanMsgs = f.gauge("markerwave_last_snapshot_channel_state_messages", "Last saved part: in-flight messages recorded as channel state.")
	m.detection = f.gauge("markerwave_last_failure_detection_seconds", "Last suspicion: from the peer last being heard from to its suspicion.")
	m.recovery = f.gauge("markerwave_last_recovery_seconds", "Restored node: from the start of its recovery (the process start, or ProcessOptions.RecoveryStart) to running from the snapshot; 0 on a fresh start.")
	m.restoredFrom = f.gauge("markerwave_restored_from_snapshot", "Id of the snapshot this node was restored from, 0 on a fresh start.")
	return m
}

// factory makes metrics with constant labels in one registry.
type factory struct {
	reg    *prometheus.Registry
	labels prometheus.Labels
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: f.labels})
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: f.labels})
	f.reg.MustRegister(g)
	return g
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// recorded notes that the node recorded its state for snapshot s.
func (m *Metrics) recorded(s spec.SnapID, at time.Time) {
	m.mu.Lock()
	m.started[s] = at
	m.mu.Unlock()
}

// partDone notes that the node's part of snapshot s completed at at.
func (m *Metrics) partDone(s spec.SnapID, at time.Time) {
	m.mu.Lock()
	start, ok := m.started[s]
	delete(m.started, s)
	m.mu.Unlock()
	if ok {
		m.lastDuration.Set(at.Sub(start).Seconds())
	}
}

// saved notes part, saved at path.
func (m *Metrics) saved(part snapshot.Part, path string) {
	var bytes, msgs int
	for _, cs := range part.In {
		msgs += len(cs.Msgs)
		for _, msg := range cs.Msgs {
			bytes += len(msg.Payload)
		}
	}
	m.lastChanBytes.Set(float64(bytes))
	m.lastChanMsgs.Set(float64(msgs))
	if fi, err := os.Stat(path); err == nil {
		m.lastSize.Set(float64(fi.Size()))
	}
	m.lastID.Set(float64(part.Snap))
	m.completed.Inc()
}

// fault notes a suspicion or an abort.
func (m *Metrics) fault(f Fault) {
	switch f.Action {
	case spec.Suspect:
		m.suspected.Inc()
		if !f.Since.IsZero() {
			m.detection.Set(f.At.Sub(f.Since).Seconds())
		}
	case spec.Abort:
		m.aborted.Inc()
		m.mu.Lock()
		delete(m.started, f.Snap)
		m.mu.Unlock()
	}
}

// restored notes that the node runs from snapshot id, its recovery
// having begun at since.
func (m *Metrics) restored(id spec.SnapID, since, at time.Time) {
	m.restoredFrom.Set(float64(id))
	m.recovery.Set(at.Sub(since).Seconds())
}

// startMetrics serves self's metrics, if the config gives an address,
// on opt.MetricsListener or that address, until stopMetrics.
func (p *process) startMetrics() error {
	addr := p.cfg.Nodes[p.self].Metrics
	ln := p.opt.MetricsListener
	if addr == "" && ln == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", p.metrics.Handler())
	srv, err := p.serveHTTP("metrics endpoint", addr, ln, mux)
	if err != nil {
		return err
	}
	p.metricsSrv = srv
	p.say("metrics endpoint on %s (GET /metrics)", srv.addr)
	return nil
}

// stopMetrics stops the metrics endpoint, if any.
func (p *process) stopMetrics() {
	p.metricsSrv.stop()
	p.metricsSrv = nil
}

// endpoint is an HTTP endpoint a node serves (control, metrics).
type endpoint struct {
	srv  *http.Server
	done chan struct{}
	addr net.Addr
}

// serveHTTP serves h as what (for messages) on ln, or a listener on
// addr; with the config's TLS, only to clients presenting a certificate
// of the cluster (mutual TLS).
func (p *process) serveHTTP(what, addr string, ln net.Listener, h http.Handler) (*endpoint, error) {
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("runtime: %s of %s: %w", what, string(p.self), err)
		}
	}
	errLog := log.New(sayWriter{p, what}, "", 0) // e.g. a client refused by TLS, named by its address
	e := &endpoint{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: errLog}, done: make(chan struct{}), addr: ln.Addr()}
	if p.tls != nil {
		e.srv.TLSConfig = p.tls.ServerConfig()
	}
	go func() {
		defer close(e.done)
		var err error
		if p.tls != nil {
			err = e.srv.ServeTLS(ln, "", "")
		} else {
			err = e.srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.say("error: %s: %v", what, err)
		}
	}()
	return e, nil
}

// sayWriter writes each line an http.Server logs to the node's log,
// naming the endpoint.
type sayWriter struct {
	p    *process
	what string
}

func (w sayWriter) Write(b []byte) (int, error) {
	w.p.say("error: %s: %s", w.what, strings.TrimSpace(string(b)))
	return len(b), nil
}

// stop shuts e down, if it is not nil, waiting up to 2 s for requests
// under way.
func (e *endpoint) stop() {
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e.srv.Shutdown(ctx)
	<-e.done
}
