package runtime_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/impl/transport/tlstest"
	"github.com/markerwave/markerwave/spec"
)

// tlsCluster writes a CA of cluster "test" and certificates for every
// node and the operator under dir, and gives cfg the "tls" object.
func tlsCluster(t *testing.T, cfg *mwrt.FileConfig, dir string) *tlstest.CA {
	ca, err := tlstest.NewCA("test")
	require.NoError(t, err)
	for _, id := range append(append([]spec.ProcID(nil), cfg.Topology.Procs...), mwrt.OperatorID) {
		_, _, _, err := ca.WriteFiles(dir, string(id))
		require.NoError(t, err)
	}
	cfg.TLS = &mwrt.TLSConfig{Cluster: "test", CA: filepath.Join(dir, "ca.pem"),
		Cert: filepath.Join(dir, "{id}.pem"), Key: filepath.Join(dir, "{id}-key.pem")}
	return ca
}

// tlsRun is a cluster of RunProcess nodes with mutual TLS and a metrics
// endpoint each, running until stop.
type tlsRun struct {
	cfg     *mwrt.FileConfig
	st      *store.Store
	metrics map[spec.ProcID]string // metrics addresses
	control string                 // P1's control address
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	log     strings.Builder
	errs    []error
}

func startTLSRun(t *testing.T, cfg *mwrt.FileConfig) *tlsRun {
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	r := &tlsRun{cfg: cfg, st: st, metrics: map[spec.ProcID]string{}, errs: make([]error, len(cfg.Topology.Procs))}
	lns, mlns := map[spec.ProcID]net.Listener{}, map[spec.ProcID]net.Listener{}
	ctl := listenLoopback(t)
	r.control = ctl.Addr().String()
	for _, p := range cfg.Topology.Procs {
		lns[p], mlns[p] = listenLoopback(t), listenLoopback(t)
		cfg.Nodes[p] = mwrt.NodeAddress{Listen: lns[p].Addr().String()}
		r.metrics[p] = mlns[p].Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	w := writerFunc(func(b []byte) (int, error) { r.mu.Lock(); defer r.mu.Unlock(); return r.log.Write(b) })
	for i, p := range cfg.Topology.Procs {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			opt := mwrt.ProcessOptions{Store: st, Out: w, Listener: lns[p], MetricsListener: mlns[p]}
			if p == "P1" {
				opt.ControlListener = ctl
			}
			r.errs[i] = mwrt.RunProcess(ctx, cfg, p, opt)
		}()
	}
	t.Cleanup(r.stop)
	return r
}

func listenLoopback(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

func (r *tlsRun) stop() {
	r.cancel()
	r.wg.Wait()
}

func (r *tlsRun) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// scrape GETs node p's /metrics through c and parses it with
// Prometheus' text parser: the value of each metric, by name.
func (r *tlsRun) scrape(c *http.Client, p spec.ProcID) (map[string]float64, error) {
	resp, err := c.Get("https://" + r.metrics[p] + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	vals := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			if label(m, "node") != string(p) {
				return nil, fmt.Errorf("%s of %s has node=%q", name, string(p), label(m, "node"))
			}
			vals[name] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return vals, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Nodes with mutual TLS run the workload and the snapshot schedule;
// an intruder with another cluster's certificate is refused and named
// in the log; the metrics endpoint, scraped over mutual TLS with the
// operator's certificate, reports what the store holds.
func TestProcessTLSAndMetrics(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	tlsCluster(t, cfg, dir)
	r := startTLSRun(t, cfg)
	op, err := cfg.TLSFor(mwrt.OperatorID)
	require.NoError(t, err)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: op.ClientConfig("")}}

	// An intruder, as an attacker would, skips checking the node.
	other, err := tlstest.NewCA("other")
	require.NoError(t, err)
	cert, err := other.Cert("P1", "")
	require.NoError(t, err)
	conn, err := tls.Dial("tcp", cfg.Nodes["P2"].Listen, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}})
	if err == nil {
		conn.Read(make([]byte, 1))
		conn.Close()
	}
	// Nor does a client without a certificate get the metrics.
	_, err = (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}).Get("https://" + r.metrics["P1"] + "/metrics")
	assert.Error(t, err, "a client without a certificate read the metrics")

	// The control endpoint is HTTPS with mutual TLS too: the operator
	// takes a snapshot there, a client without a certificate cannot.
	_, err = (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}).Post("https://"+r.control+"/snapshot", "application/json", nil)
	assert.Error(t, err, "a client without a certificate asked for a snapshot")
	resp, err := client.Post("https://"+r.control+"/snapshot", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	want := float64(len(cfg.Snapshots.Initiators)*cfg.Snapshots.Count + 1)
	var vals map[spec.ProcID]map[string]float64
	require.Eventually(t, func() bool {
		vals = map[spec.ProcID]map[string]float64{}
		assembled := 0.0
		for _, p := range cfg.Topology.Procs {
			v, err := r.scrape(client, p)
			if err != nil {
				t.Logf("scrape %s: %v", string(p), err)
				return false
			}
			vals[p] = v
			assembled += v["markerwave_snapshots_assembled_total"]
			if v["markerwave_snapshots_completed_total"] != want {
				return false
			}
		}
		ids, err := r.st.List()
		return err == nil && len(ids) == int(want) && assembled >= want
	}, 30*time.Second, 50*time.Millisecond, "the cluster did not complete %v snapshots", want)
	log := r.logText()
	assert.Contains(t, log, "(certificate CN=P1,O=other) refused: x509: certificate signed by unknown authority (refused 1 times)")

	assembled := 0.0
	for _, p := range cfg.Topology.Procs {
		checkMetrics(t, r.st, p, vals[p], want)
		assembled += vals[p]["markerwave_snapshots_assembled_total"]
	}
	// Each snapshot is assembled by the node(s) whose part completed it.
	assert.True(t, assembled >= want && assembled <= float64(len(cfg.Topology.Procs))*want, "assembled %v of %v", assembled, want)
	assert.Equal(t, 1.0, vals["P2"]["markerwave_peers_refused_total"])
	assert.Contains(t, log, "P1: error: control endpoint: http: TLS handshake error from 127.0.0.1:")
	assert.Contains(t, log, "P1: error: metrics endpoint: http: TLS handshake error from 127.0.0.1:")
	r.stop()
	for _, err := range r.errs {
		assert.NoError(t, err)
	}
}

// checkMetrics compares node p's scraped metrics with the store: every
// snapshot's part saved, the last one's size and channel state.
func checkMetrics(t *testing.T, st *store.Store, p spec.ProcID, v map[string]float64, want float64) {
	t.Helper()
	assert.Equal(t, want, v["markerwave_snapshots_completed_total"], "%s completed", string(p))
	assert.Zero(t, v["markerwave_snapshots_aborted_total"], "%s aborted", string(p))
	assert.Zero(t, v["markerwave_snapshots_failed_total"], "%s failed", string(p))
	assert.Zero(t, v["markerwave_restored_from_snapshot"])
	last := spec.SnapID(v["markerwave_last_snapshot_id"])
	require.NotZero(t, last, "%s: no last snapshot", string(p))
	g, err := st.Load(last)
	require.NoError(t, err)
	bytes, msgs := 0, 0
	for _, cs := range g.Chans {
		if cs.Chan.To != p {
			continue
		}
		msgs += len(cs.Msgs)
		for _, m := range cs.Msgs {
			bytes += len(m.Payload)
		}
	}
	assert.Equal(t, float64(bytes), v["markerwave_last_snapshot_channel_state_bytes"], "%s channel-state bytes", string(p))
	assert.Equal(t, float64(msgs), v["markerwave_last_snapshot_channel_state_messages"], "%s channel-state messages", string(p))
	fi, err := os.Stat(st.PartPath(last, p))
	require.NoError(t, err)
	assert.Equal(t, float64(fi.Size()), v["markerwave_last_snapshot_size_bytes"], "%s part size", string(p))
	d := v["markerwave_last_snapshot_duration_seconds"]
	assert.True(t, d > 0 && d < 30, "%s duration %v s", string(p), d)
}
