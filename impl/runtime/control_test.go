package runtime

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/markerwave/markerwave/spec"
)

// TestControlHandler: POST /snapshot initiates and answers the id; a
// refusal, another method and another path are errors saying so.
func TestControlHandler(t *testing.T) {
	var next spec.SnapID = 41
	var refuse error
	h := controlHandler("P2", func() (spec.SnapID, error) {
		if refuse != nil {
			return 0, refuse
		}
		next++
		return next, nil
	})
	do := func(method, path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	code, body := do(http.MethodPost, "/snapshot")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, `{"snapshot":42,"node":"P2"}`, body)

	refuse = errors.New("snapshot 43 is already taken")
	code, body = do(http.MethodPost, "/snapshot")
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, `{"error":"P2: snapshot 43 is already taken"}`, body)

	code, body = do(http.MethodGet, "/snapshot")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.Equal(t, `{"error":"GET /snapshot: use POST"}`, body)

	code, body = do(http.MethodPost, "/stop")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, `{"error":"no command /stop (the commands: POST /snapshot)"}`, body)
}

// TestConfigControlAddress: a control address must be host:port on
// loopback and used by nothing else of the config.
func TestConfigControlAddress(t *testing.T) {
	base := `{"topology": {"procs": ["P1", "P2"], "channels": [{"from": "P1", "to": "P2"}, {"from": "P2", "to": "P1"}]},
  "nodes": {"P1": {"listen": "127.0.0.1:7101", "control": CTL1}, "P2": {"listen": "127.0.0.1:7102", "control": CTL2}},
  "app": {"kind": "bank", "balances": {"P1": 10, "P2": 10}}, "snapshot_dir": "snaps"}`
	for _, c := range []struct {
		ctl1, ctl2 string
		want       string
	}{
		{`"127.0.0.1:7201"`, `"localhost:7202"`, ""},
		{`"[::1]:7201"`, `""`, ""},
		{`"10.0.0.1:7201"`, `""`, `config: field "nodes.P1.control": "10.0.0.1:7201" is not a loopback address (127.0.0.1, ::1 or localhost): without "tls" the control endpoint has no authentication`},
		{`"127.0.0.1:7102"`, `""`, `config: field "nodes.P2.listen": "127.0.0.1:7102" is also P1's control address`},
		{`"127.0.0.1:7201"`, `"127.0.0.1:7201"`, `config: field "nodes.P2.control": "127.0.0.1:7201" is also P1's control address`},
		{`"127.0.0.1"`, `""`, `config: field "nodes.P1.control": "127.0.0.1" is not host:port`},
		{`"127.0.0.1:0"`, `""`, `config: field "nodes.P1.control": port 0 out of range 1-65535`},
	} {
		_, err := ParseConfig([]byte(strings.NewReplacer("CTL1", c.ctl1, "CTL2", c.ctl2).Replace(base)))
		if c.want == "" {
			assert.NoError(t, err, c.ctl1)
		} else {
			assert.EqualError(t, err, c.want)
		}
	}
}

// TestControlExpiredNotRun: a request read after the deadline its asker
// gave (ControlBefore), or whose asker hung up, is refused (408) and not
// run; one within it runs (issue #20: a request `snapshot --wait`
// reported as failed ran later, when the stopped node resumed).
func TestControlExpiredNotRun(t *testing.T) {
	ran := 0
	h := controlHandler("P1", func() (spec.SnapID, error) { ran++; return 7, nil })
	do := func(r *http.Request) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	past := time.Now().Add(-1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	code, body := do(httptest.NewRequest(http.MethodPost, "/snapshot?before="+past, nil))
	assert.Equal(t, http.StatusRequestTimeout, code)
	assert.Contains(t, body, "P1: the request expired at ")
	assert.Contains(t, body, "(the asker gave up): not run")
	assert.Zero(t, ran)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, body = do(httptest.NewRequest(http.MethodPost, "/snapshot", nil).WithContext(ctx))
	assert.Equal(t, http.StatusRequestTimeout, code)
	assert.Contains(t, body, "the asker hung up")
	assert.Zero(t, ran)

	code, body = do(httptest.NewRequest(http.MethodPost, "/snapshot?before=soon", nil))
	assert.Equal(t, http.StatusRequestTimeout, code)
	assert.Contains(t, body, `is not an RFC 3339 time: not run`)
	assert.Zero(t, ran)

	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	code, _ = do(httptest.NewRequest(http.MethodPost, "/snapshot?before="+future, nil))
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 1, ran)
}
