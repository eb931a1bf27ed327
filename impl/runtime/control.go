package runtime

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// The control endpoint. A node of a multi-process cluster whose config
// gives it a control address (nodes.ID.control, loopback only) serves
// the operator's commands there over HTTP (HTTPS with mutual TLS when
// the config has "tls": see FileConfig.TLS):
//
//	POST /snapshot   initiate a snapshot now, at this node, with the next id
//	                 of the node's run; 200 {"snapshot": ID, "node": "P1"}
//
// Errors are {"error": "..."} with status 405 (another method), 404
// (another path), 408 (the request expired: see ControlBefore) or 409
// (the node refused to initiate). The snapshot is
// then taken like a scheduled one: each node saves its part, and the node
// that completes the last assembles and saves it (markerwave snapshot
// waits for that file).

// ControlSnapshot is the answer to POST /snapshot.
type ControlSnapshot struct {
	Snapshot spec.SnapID `json:"snapshot"`
	Node     spec.ProcID `json:"node"`
}

// ControlError is the body of a refused control request.
type ControlError struct {
	Error string `json:"error"`
}

// controlHandler serves the control endpoint of node self; initiate
// starts a snapshot and returns its id.
func controlHandler(self spec.ProcID, initiate func() (spec.SnapID, error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/snapshot", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeControl(w, http.StatusMethodNotAllowed, ControlError{Error: fmt.Sprintf("%s /snapshot: use POST", r.Method)})
			return
		}
		if err := expired(r, time.Now()); err != nil {
			writeControl(w, http.StatusRequestTimeout, ControlError{Error: fmt.Sprintf("%s: %v", string(self), err)})
			return
		}
		id, err := initiate()
		if err != nil {
			writeControl(w, http.StatusConflict, ControlError{Error: fmt.Sprintf("%s: %v", string(self), err)})
			return
		}
		writeControl(w, http.StatusOK, ControlSnapshot{Snapshot: id, Node: self})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeControl(w, http.StatusNotFound, ControlError{Error: fmt.Sprintf("no command %s (the commands: POST /snapshot)", r.URL.Path)})
	})
	return mux
}

// ControlBefore is POST /snapshot's optional query parameter: the time
// (RFC 3339, UTC) after which the asker no longer waits for the answer.
// A request read after it, or whose asker hung up, is not run (status
// 408): a snapshot asked for by a command that gave up is never taken
// later, when a stopped node resumes and reads its backlog.
const ControlBefore = "before"

// expired is why request r, read at now, must not run: its asker's
// deadline has passed or it hung up; nil if it may run.
func expired(r *http.Request, now time.Time) error {
	if err := r.Context().Err(); err != nil {
		return fmt.Errorf("the asker hung up before the request was read: not run")
	}
	b := r.URL.Query().Get(ControlBefore)
	if b == "" {
		return nil
	}
	before, err := time.Parse(time.RFC3339Nano, b)
	switch {
	case err != nil:
		return fmt.Errorf("%s=%q is not an RFC 3339 time: not run", ControlBefore, b)
	case now.After(before):
		return fmt.Errorf("the request expired at %s, %v before it was read (the asker gave up): not run", before.UTC().Format("15:04:05.000"), now.Sub(before).Round(time.Millisecond))
	}
	return nil
}

func writeControl(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// startControl serves self's control endpoint, if the config gives one,
// on opt.ControlListener or the configured address, until stopControl.
func (p *process) startControl(tag uint64) error {
	addr := p.cfg.Nodes[p.self].Control
	ln := p.opt.ControlListener
	if addr == "" && ln == nil {
		return nil
	}
	initiate := func() (spec.SnapID, error) { return p.initiateAsked(tag) }
	srv, err := p.serveHTTP("control endpoint", addr, ln, controlHandler(p.self, initiate))
	if err != nil {
		return err
	}
	p.control = srv
	p.say("control endpoint on %s (POST /snapshot)", srv.addr)
	return nil
}

// initiateAsked initiates the next snapshot of the run of tag, asked
// for at the control endpoint, and returns its id.
func (p *process) initiateAsked(tag uint64) (spec.SnapID, error) {
	id, err := p.nextSnapID(tag)
	if err != nil {
		return 0, err
	}
	if err := p.node.Initiate(id); err != nil {
		return 0, err
	}
	p.say("initiated snapshot %d (asked at the control endpoint)", id)
	return id, nil
}

// stopControl stops the control endpoint, if any, waiting for requests
// under way.
func (p *process) stopControl() {
	p.control.stop()
	p.control = nil
}
