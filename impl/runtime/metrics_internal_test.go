package runtime

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// The time to detect a failure is from the peer last heard from to its
// suspicion; the time to recover from the recovery's start to running
// from the snapshot; an abort counts and forgets the snapshot's start.
func TestMetricsDetectionAndRecovery(t *testing.T) {
	m := newMetrics("P2")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.recorded(7, t0)
	m.fault(Fault{Action: spec.Suspect, Peer: "P3", Since: t0, At: t0.Add(1200 * time.Millisecond)})
	m.fault(Fault{Action: spec.Abort, Peer: "P3", Snap: 7, At: t0.Add(1200 * time.Millisecond)})
	m.partDone(7, t0.Add(2*time.Second)) // aborted: no duration
	m.restored(42, t0, t0.Add(350*time.Millisecond))

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	val := func(name string) float64 {
		f := fams[name]
		require.NotNil(t, f, name)
		m := f.GetMetric()[0]
		return m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	assert.InDelta(t, 1.2, val("markerwave_last_failure_detection_seconds"), 1e-9)
	assert.Equal(t, 1.0, val("markerwave_peers_suspected_total"))
	assert.Equal(t, 1.0, val("markerwave_snapshots_aborted_total"))
	assert.Zero(t, val("markerwave_last_snapshot_duration_seconds"))
	assert.InDelta(t, 0.35, val("markerwave_last_recovery_seconds"), 1e-9)
	assert.Equal(t, 42.0, val("markerwave_restored_from_snapshot"))
}
