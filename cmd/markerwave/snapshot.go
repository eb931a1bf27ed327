package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

const snapshotAbout = `
Takes a snapshot now on a running cluster: asks node ID (by default the
first node of the config with a control address) at its control endpoint
(nodes.ID.control in the config, a loopback address; see impl/runtime's
control.go; with the config's "tls", HTTPS presenting the certificate of
id "operator") to initiate a snapshot, then waits until the node that
completes its last part has saved the global snapshot in snapshot_dir,
and prints it: its id, total and money in flight, or, if it is not
complete within --wait, which nodes have not saved their part.
Exit 0: the snapshot is complete and saved; 1: the node did not answer or
refused, or the snapshot did not complete in time; 2: bad usage or a bad
config.`

// snapshotOptions are snapshot's flags.
type snapshotOptions struct {
	config, node string
	wait         time.Duration
	json         bool
}

func runSnapshot(args []string, stdout, stderr io.Writer) int {
	f := newFlags("snapshot", "--config FILE [--node ID] [--wait D] [--json]", snapshotAbout, stdout, stderr)
	var o snapshotOptions
	f.StringVar(&o.config, "config", "", "cluster config `FILE` (required)")
	f.StringVar(&o.node, "node", "", "the node that initiates the snapshot, by process `ID` (default: the first with a control address)")
	f.DurationVar(&o.wait, "wait", 10*time.Second, "how long to wait for the snapshot to complete")
	f.BoolVar(&o.json, "json", false, "print the snapshot as one JSON object (an error too: {\"error\": ...})")
	if code, done := f.parse(args); done {
		return code
	}
	if msg, bad := o.usage(f); bad {
		return f.usageError("%s", msg)
	}
	j := snapshotJob{f: f, o: o}
	code := j.take()
	if o.json {
		return writeJSON(f, stdout, j.out, code)
	}
	return code
}

// usage returns the usage error in o, if any.
func (o snapshotOptions) usage(f *cmdFlags) (string, bool) {
	return broken(
		f.unexpected(),
		rule{o.config == "", "--config is required"},
		rule{o.wait <= 0, "--wait must be positive"},
	)
}

// snapshotJob is one run of the snapshot command: out is its --json
// output, an error included.
type snapshotJob struct {
	f   *cmdFlags
	o   snapshotOptions
	out snapshotJSON
}

// take asks the node for a snapshot and waits for it; it returns the exit
// status, every error reported (and in j.out).
func (j *snapshotJob) take() int {
	cfg, err := runtime.LoadConfig(j.o.config, "")
	if err != nil {
		j.out.Error = fmt.Sprintf("%s: %v", j.o.config, err)
		reportConfig(j.f, j.o.config, err)
		return exitUsage
	}
	node, addr, err := controlOf(cfg, spec.ProcID(j.o.node))
	if err != nil {
		return j.fail(exitUsage, fmt.Errorf("%s: %w", j.o.config, err))
	}
	j.out.Node = node
	client, scheme, err := controlClient(cfg, node)
	if err != nil {
		return j.fail(exitUsage, fmt.Errorf("%s: %w", j.o.config, err))
	}
	// One deadline bounds the whole command: the request (which the node
	// refuses to run once it has passed) and the wait for completion.
	deadline := time.Now().Add(j.o.wait)
	id, err := askSnapshot(client, scheme, node, addr, deadline, j.o.wait)
	if err != nil {
		return j.fail(exitFail, err)
	}
	j.f.errorf("%s initiated snapshot %d; waiting for it to complete", string(node), id)
	st, err := store.Open(cfg.SnapshotDir)
	if err != nil {
		return j.fail(exitFail, err)
	}
	e, err := waitComplete(st, cfg.Topology, id, deadline, j.o.wait)
	ej := toEntryJSON(e)
	j.out.Snapshot, j.out.Path = &ej, st.Path(id)
	if err != nil {
		return j.fail(exitFail, err)
	}
	if !j.o.json {
		fmt.Fprintf(j.f.stdout, "snapshot %d (initiated by %s): %s, saved %s\n", id, string(node), e, st.Path(id))
	}
	return exitOK
}

// fail reports err, notes it for --json and returns code.
func (j *snapshotJob) fail(code int, err error) int {
	j.out.Error = err.Error()
	return j.f.fail(code, err)
}

// snapshotJSON is snapshot's --json output.
type snapshotJSON struct {
	Node     spec.ProcID `json:"node,omitempty"`
	Snapshot *entryJSON  `json:"snapshot,omitempty"`
	Path     string      `json:"path,omitempty"`
	Error    string      `json:"error,omitempty"`
}

// controlOf is the node to ask and its control address: node if given,
// else the first process of the config with one.
func controlOf(cfg *runtime.FileConfig, node spec.ProcID) (spec.ProcID, string, error) {
	if node != "" {
		n, ok := cfg.Nodes[node]
		switch {
		case !ok:
			return "", "", fmt.Errorf("--node %s is not a node of the config", string(node))
		case n.Control == "":
			return "", "", fmt.Errorf("node %s has no control address (nodes.%s.control)", string(node), string(node))
		}
		return node, n.Control, nil
	}
	for _, p := range cfg.Topology.Procs {
		if a := cfg.Nodes[p].Control; a != "" {
			return p, a, nil
		}
	}
	return "", "", errors.New("no node has a control address (nodes.ID.control): the cluster takes no snapshot on demand")
}

// controlClient is the HTTP client and URL scheme for node's control
// endpoint: with the config's "tls", https presenting the operator's
// certificate ("{id}" = runtime.OperatorID) and checking node's.
func controlClient(cfg *runtime.FileConfig, node spec.ProcID) (*http.Client, string, error) {
	c := &http.Client{}
	t, err := cfg.TLSFor(runtime.OperatorID)
	if err != nil || t == nil {
		return c, "http", err
	}
	c.Transport = &http.Transport{TLSClientConfig: t.ClientConfig(string(node))}
	return c, "https", nil
}

// askSnapshot asks node's control endpoint at addr, through c with
// scheme, to initiate a snapshot and returns its id; the request carries
// deadline, after which the node does not run it, and is given up at
// deadline (wait after the command began).
func askSnapshot(c *http.Client, scheme string, node spec.ProcID, addr string, deadline time.Time, wait time.Duration) (spec.SnapID, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	q := url.Values{runtime.ControlBefore: {deadline.UTC().Format(time.RFC3339Nano)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+"://"+addr+"/snapshot?"+q.Encode(), bytes.NewReader(nil))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	switch {
	case ctx.Err() != nil:
		return 0, fmt.Errorf("%s's control endpoint %s did not answer within --wait %v (is %s stopped?); the request is cancelled: the node will not run it later", string(node), addr, wait, string(node))
	case err != nil:
		return 0, fmt.Errorf("%s's control endpoint %s does not answer (is %s running?): %w", string(node), addr, string(node), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return 0, fmt.Errorf("%s's control endpoint %s: %w", string(node), addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, refusal(node, addr, resp.Status, body)
	}
	var ok runtime.ControlSnapshot
	if err := spec.DecodeStrict(body, &ok); err != nil || ok.Snapshot == 0 {
		return 0, fmt.Errorf("%s's control endpoint %s answered %q, not a snapshot id", string(node), addr, body)
	}
	return ok.Snapshot, nil
}

// refusal is the error of a control endpoint that answered status with
// body: the node's reason (runtime.ControlError), naming the node once.
func refusal(node spec.ProcID, addr, status string, body []byte) error {
	var e runtime.ControlError
	if spec.DecodeStrict(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("%s refused: %s", string(node), nameOnce(node, e.Error))
	}
	return fmt.Errorf("%s's control endpoint %s answered %s", string(node), addr, status)
}

// waitComplete polls the store until snapshot id is complete, or says
// at deadline (wait after the command began) what is still missing.
func waitComplete(st *store.Store, t *spec.Topology, id spec.SnapID, deadline time.Time, wait time.Duration) (store.Entry, error) {
	for {
		e, done, err := catalogEntry(st, t, id)
		switch {
		case done:
			return e, err
		case time.Now().After(deadline):
			return e, fmt.Errorf("snapshot %d not complete after %v: %s", id, wait, e)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// catalogEntry is snapshot id as the store holds it now (no part saved:
// every node missing); done once it is complete, damaged (err says how)
// or the store cannot be read.
func catalogEntry(st *store.Store, t *spec.Topology, id spec.SnapID) (e store.Entry, done bool, err error) {
	entries, err := st.Catalog(t)
	if err != nil {
		return store.Entry{ID: id}, true, err
	}
	e = store.Entry{ID: id, Missing: t.Procs}
	if i := slices.IndexFunc(entries, func(x store.Entry) bool { return x.ID == id }); i >= 0 {
		e = entries[i]
	}
	if d := e.Damage(); d != "" {
		return e, true, errors.New(d)
	}
	return e, e.Complete, nil
}
