package coord

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are a supervisor's recovery figures, for Prometheus: how long
// detection and the restart took, how many automatic recoveries, the
// incarnation and the snapshot it started from.
type Metrics struct {
	reg                                         *prometheus.Registry
	recoveries                                  prometheus.Counter
	detection, restart, incarnation, restoredID prometheus.Gauge
}

// NewMetrics registers the metrics in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.recoveries = prometheus.NewCounter(prometheus.CounterOpts{Name: "markerwave_supervisor_recoveries_total", Help: "Automatic recoveries: restarts from the latest complete snapshot after a node was found dead."})
	m.detection = gauge("markerwave_supervisor_last_detection_seconds", "Last recovery: from the node's death (when known: a crash or a child's exit) to its detection.")
	m.restart = gauge("markerwave_supervisor_last_recovery_seconds", "Last recovery: from the detection to every node of this supervisor running again.")
	m.incarnation = gauge("markerwave_supervisor_incarnation", "The incarnation this supervisor's nodes run in.")
	m.restoredID = gauge("markerwave_supervisor_restored_from_snapshot", "The snapshot the current incarnation started from (0: the initial state).")
	m.reg.MustRegister(m.recoveries, m.detection, m.restart, m.incarnation, m.restoredID)
	return m
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// Handler serves the metrics (GET /metrics).
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

func (m *Metrics) detected(d Death) {
	if !d.Died.IsZero() {
		m.detection.Set(d.At.Sub(d.Died).Seconds())
	}
}

func (m *Metrics) recovered(r Recovery) {
	m.recoveries.Inc()
	m.restart.Set(r.Restart.Seconds())
	m.restoredID.Set(float64(r.Incarnation.From))
}
