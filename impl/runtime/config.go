package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/spec"
)

// FileConfig is a cluster config file: one topology shared by every node
// process, each started with its own id.
//
//	{
//	  "topology": {"procs": ["P1","P2","P3"], "channels": [{"from":"P1","to":"P2"}, ...]},
//	  "nodes": {"P1": {"listen": "127.0.0.1:7101"}, ...},
//	  "app": {"kind": "bank", "balances": {"P1": 100, ...}},
//	  "trace_dir": "out/cluster/nodes",
//	  "snapshot_dir": "out/cluster/snapshots",
//	  "workload": {"transfers": 200, "max_amount": 20, "pause_ms": 5, "seed": 1},
//	  "snapshots": {"initiators": ["P1","P2"], "every_ms": 300, "count": 3},
//	  "failures": {"heartbeat_ms": 100, "timeout_ms": 1000, "drain_ms": 5000, "startup_ms": 10000}
//	}
//
// "app" names a kind registered in impl/app; its other fields are that
// kind's parameters (kind "token" takes "holder" instead of "balances").
//
// A relative trace_dir or snapshot_dir is relative to the directory of
// the config file (LoadConfig resolves it there), not to the working
// directory: every process started with the file, from wherever, uses
// the same directories. ParseConfig, which has no file, leaves them as
// written.
type FileConfig struct {
	Topology    *spec.Topology              `json:"-"`
	Nodes       map[spec.ProcID]NodeAddress `json:"nodes"`
	App         AppConfig                   `json:"-"`
	TraceDir    string                      `json:"trace_dir,omitempty"`
	SnapshotDir string                      `json:"snapshot_dir"`
	Workload    *Workload                   `json:"workload,omitempty"`
	Snapshots   *Schedule                   `json:"snapshots,omitempty"`
	Failures    *Failures                   `json:"failures,omitempty"`
	TLS         *TLSConfig                  `json:"tls,omitempty"`
}

// Failures configures failure detection and the graceful stop; each
// field left out (or 0) takes its default.
type Failures struct {
	// HeartbeatMS is the failure detector's interval (default 100).
	HeartbeatMS int `json:"heartbeat_ms"`
	// TimeoutMS is how long a silent peer is trusted (default 1000; at
	// least 3 heartbeats).
	TimeoutMS int `json:"timeout_ms"`
	// DrainMS bounds the wait, on a stop, for peers to finish sending and
	// for snapshots under way to complete (default 5000).
	DrainMS int `json:"drain_ms"`
	// StartupMS is how long a peer never heard from is trusted after
	// this node starts (default 10000): nodes started by hand come up
	// seconds apart.
	StartupMS int `json:"startup_ms"`
}

// Defaults of Failures.
const (
	DefaultHeartbeatMS = 100
	DefaultTimeoutMS   = 1000
	DefaultDrainMS     = 5000
	DefaultStartupMS   = 10000
)

// orDefault is v, or def if v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Detector is the failure detector the config asks for.
func (c *FileConfig) Detector() DetectorConfig {
	var f Failures
	if c.Failures != nil {
		f = *c.Failures
	}
	return DetectorConfig{
		Interval: time.Duration(orDefault(f.HeartbeatMS, DefaultHeartbeatMS)) * time.Millisecond,
		Timeout:  time.Duration(orDefault(f.TimeoutMS, DefaultTimeoutMS)) * time.Millisecond,
		Startup:  time.Duration(orDefault(f.StartupMS, DefaultStartupMS)) * time.Millisecond,
	}
}

// DrainTimeout bounds a graceful stop's wait (Failures.DrainMS).
func (c *FileConfig) DrainTimeout() time.Duration {
	d := DefaultDrainMS
	if c.Failures != nil {
		d = orDefault(c.Failures.DrainMS, d)
	}
	return time.Duration(d) * time.Millisecond
}

// NodeAddress is where a node listens for its incoming channels and,
// optionally, for the operator's commands.
type NodeAddress struct {
	Listen string `json:"listen"`
	// Control, if set, is the host:port of the node's control endpoint
	// (ServeControl): markerwave snapshot asks the node there to take a
	// snapshot now. Without "tls" it has no authentication, so only a
	// loopback address is accepted; with it, any address, and clients
	// must present a certificate of the cluster.
	Control string `json:"control,omitempty"`
	// Metrics, if set, is the host:port of the node's Prometheus
	// endpoint (GET /metrics, see Metrics); loopback only unless "tls"
	// is set, as for Control.
	Metrics string `json:"metrics,omitempty"`
}

// AppConfig is the config's "app" object: the name of a kind registered in
// impl/app and that kind's parameters.
type AppConfig struct {
	Kind   string
	Params app.Params
}

// Workload is what each node sends on its own: Transfers random transfers
// (token: attempts to pass the token on) of 1..MaxAmount to random
// neighbours, PauseMS apart.
type Workload struct {
	Transfers int    `json:"transfers"`
	MaxAmount int64  `json:"max_amount"`
	PauseMS   int    `json:"pause_ms"`
	Seed      uint64 `json:"seed"`
}

// Schedule makes each initiator start Count snapshots, EveryMS apart.
type Schedule struct {
	Initiators []spec.ProcID `json:"initiators"`
	EveryMS    int           `json:"every_ms"`
	Count      int           `json:"count"`
}

// FieldProblem is what is wrong with one field of a cluster config,
// named by its JSON path ("nodes.P2.listen"), or with the file as a whole
// (Field "").
type FieldProblem struct {
	Field   string
	Problem string
}

func (p FieldProblem) Error() string {
	if p.Field == "" {
		return "config: " + p.Problem
	}
	return fmt.Sprintf("config: field %q: %s", p.Field, p.Problem)
}

// ConfigError is every problem found in a cluster config, in the order of
// the file's fields; Error puts one per line.
type ConfigError struct {
	Problems []FieldProblem
}

func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// problems collects a config's problems.
type problems []FieldProblem

func (ps *problems) add(field, format string, args ...any) {
	*ps = append(*ps, FieldProblem{Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ConfigError{Problems: ps}
}

// ParseConfig reads a cluster config strictly and checks everything that
// does not depend on the machine (for that, see CheckHost): the topology
// (spec.ParseTopology: well formed and strongly connected), one listen
// address per process with a port in 1-65535 and no address used twice,
// the application's parameters (impl/app's Params.Check: e.g. balances
// non-negative, a total that fits in an int64, transfers within it), the
// workload and the snapshot schedule. It returns a *ConfigError naming
// every problem by its field's JSON path, or, if the file is not a
// config at all (malformed JSON, a value of the wrong type, an unknown
// field), that single problem.
func ParseConfig(b []byte) (*FileConfig, error) {
	cfg, ps := parseConfig(b)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// LoadConfig reads the cluster config file at path and checks it for node
// self: everything ParseConfig and CheckHost check, with every problem of
// both in one *ConfigError. Relative directories are resolved against
// path's directory (resolveDirs). A node should run it on every start.
func LoadConfig(path string, self spec.ProcID) (*FileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, ps := parseConfig(b)
	if cfg != nil {
		cfg.resolveDirs(filepath.Dir(path))
		ps = append(ps, cfg.hostProblems(self)...)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parseConfig is ParseConfig returning the config (nil if b is not a
// config at all) and its problems.
func parseConfig(b []byte) (*FileConfig, problems) {
	cfg, rawApp, err := decodeConfig(b)
	if err != nil {
		return nil, problems{*err}
	}
	var ps problems
	cfg.checkNodes(&ps)
	cfg.decodeApp(rawApp, &ps)
	cfg.checkSnapshotDir(&ps)
	cfg.checkWorkload(&ps)
	cfg.checkSchedule(&ps)
	cfg.checkFailures(&ps)
	cfg.checkTLS(&ps)
	return cfg, ps
}

// decodeConfig decodes b with spec.DecodeStrict, leaving the "app" object
// raw until its kind is known, and parses the topology. The top-level
// object is split first so that errors name fields by their path in the
// file.
func decodeConfig(b []byte) (*FileConfig, map[string]json.RawMessage, *FieldProblem) {
	var top map[string]json.RawMessage
	if err := spec.DecodeStrict(b, &top); err != nil {
		return nil, nil, &FieldProblem{Problem: err.Error()}
	}
	rawTopo, rawApp := top["topology"], top["app"]
	delete(top, "topology")
	delete(top, "app")
	var cfg FileConfig
	rest, err := json.Marshal(top)
	if err == nil {
		err = spec.DecodeStrict(rest, &cfg)
	}
	if err != nil {
		return nil, nil, &FieldProblem{Problem: err.Error()}
	}
	var app map[string]json.RawMessage
	if err := spec.DecodeStrict(orNull(rawApp), &app); err != nil {
		return nil, nil, &FieldProblem{Field: "app", Problem: err.Error()}
	}
	t, fp := decodeTopology(rawTopo)
	if fp != nil {
		return nil, nil, fp
	}
	cfg.Topology = t
	return &cfg, app, nil
}

// resolveDirs makes the config's relative directories relative to base,
// the config file's directory, as FileConfig's doc says.
func (c *FileConfig) resolveDirs(base string) {
	for _, d := range []*string{&c.TraceDir, &c.SnapshotDir} {
		if *d != "" && !filepath.IsAbs(*d) {
			*d = filepath.Join(base, *d)
		}
	}
	c.resolveTLS(base)
}

// decodeTopology parses the config's topology field, raw, which must be
// there.
func decodeTopology(raw json.RawMessage) (*spec.Topology, *FieldProblem) {
	if string(orNull(raw)) == "null" {
		return nil, &FieldProblem{Field: "topology", Problem: "missing"}
	}
	t, err := spec.ParseTopology(raw)
	if err != nil {
		return nil, &FieldProblem{Field: "topology", Problem: err.Error()}
	}
	return t, nil
}

// orNull is b, or null if b is absent.
func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// checkNodes: every process, and only those, has a listen address
// host:port with a port in range, and no two share one.
func (c *FileConfig) checkNodes(ps *problems) {
	t := c.Topology
	for _, p := range slices.Sorted(maps.Keys(keySet(c.Nodes))) {
		if !t.Has(p) {
			ps.add("nodes."+string(p), "not a process of the topology (%s)", procList(t.Procs))
		}
	}
	owner := addrOwners{}
	for _, p := range t.Procs {
		field := "nodes." + string(p)
		n, ok := c.Nodes[p]
		switch {
		case !ok:
			ps.add(field, "missing (every process needs a listen address)")
		case n.Listen == "":
			ps.add(field+".listen", "missing")
		default:
			owner.claim(ps, field+".listen", n.Listen, addrOwner{p, "listen"}, false)
			c.claimEndpoint(ps, owner, field, "control", n.Control, p)
			c.claimEndpoint(ps, owner, field, "metrics", n.Metrics, p)
		}
	}
}

// claimEndpoint claims addr, if set, as p's endpoint use (control,
// metrics): loopback only, unless the config has TLS.
func (c *FileConfig) claimEndpoint(ps *problems, owner addrOwners, field, use, addr string, p spec.ProcID) {
	if addr != "" {
		owner.claim(ps, field+"."+use, addr, addrOwner{p, use}, c.TLS == nil)
	}
}

// addrOwners maps each address claimed so far to its claimant.
type addrOwners map[string]addrOwner

// claim checks address s of field, claimed by o: host:port with a port in
// range, loopback if it must be (a control or metrics endpoint without
// TLS, which has no authentication), and not claimed before.
func (owner addrOwners) claim(ps *problems, field, s string, o addrOwner, loopback bool) {
	addr, ok := checkAddr(ps, field, s)
	if !ok {
		return
	}
	if host, _, _ := net.SplitHostPort(addr); loopback && !isLoopback(host) {
		ps.add(field, "%q is not a loopback address (127.0.0.1, ::1 or localhost): without \"tls\" the %s endpoint has no authentication", s, o.use)
		return
	}
	if q, dup := owner[addr]; dup {
		ps.add(field, "%q is also %s", s, q)
		return
	}
	owner[addr] = o
}

// addrOwner is the node and the use ("listen", "control") of an address.
type addrOwner struct {
	p   spec.ProcID
	use string
}

func (o addrOwner) String() string { return fmt.Sprintf("%s's %s address", string(o.p), o.use) }

// checkAddr checks that addr, the value of field, is host:port with a port
// in 1-65535, and returns it in canonical form.
func checkAddr(ps *problems, field, addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		ps.add(field, "%q is not host:port", addr)
		return "", false
	}
	num, err := CheckPort(port, 1)
	if errors.Is(err, errNotANumber) {
		ps.add(field, "%q: %v", addr, err)
		return "", false
	}
	if err != nil {
		ps.add(field, "%v", err)
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(num)), true
}

// CheckPort is the one check of a port every command makes of an
// address (the config's listen and control addresses, serve's --addr):
// a decimal number in lowest-65535 (lowest 0 lets the system pick one).
func CheckPort(port string, lowest int) (int, error) {
	num, err := strconv.Atoi(port)
	if err != nil {
		return 0, fmt.Errorf("port %q %w", port, errNotANumber)
	}
	if num < lowest || num > 65535 {
		return 0, fmt.Errorf("port %d out of range %d-65535", num, lowest)
	}
	return num, nil
}

var errNotANumber = errors.New("is not a number")

// isLoopback reports whether host names this machine's loopback
// interface only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// decodeApp looks up the kind registered under "app"."kind", decodes the
// other fields of "app" into its parameters and checks them.
func (c *FileConfig) decodeApp(raw map[string]json.RawMessage, ps *problems) {
	kinds := strings.Join(app.Kinds(), ", ")
	if raw == nil {
		ps.add("app", "missing (want an object naming a kind: %s)", kinds)
		return
	}
	if err := spec.DecodeStrict(raw["kind"], &c.App.Kind); err != nil || c.App.Kind == "" {
		ps.add("app.kind", "missing or not a string (want one of %s)", kinds)
		return
	}
	params, ok := app.NewParams(c.App.Kind)
	if !ok {
		ps.add("app.kind", "%q is not an application kind (want one of %s)", c.App.Kind, kinds)
		return
	}
	delete(raw, "kind")
	if !c.decodeParams(raw, params, ps) {
		return
	}
	c.App.Params = params
	params.Check(c.Topology, c.maxAmount(), func(field, problem string) { ps.add("app."+field, "%s", problem) })
}

// decodeParams decodes the application's parameters, raw, into params,
// at their place in the file so that errors name the field by its full
// path ("app.balances.P3"); it reports whether they decoded.
func (c *FileConfig) decodeParams(raw map[string]json.RawMessage, params app.Params, ps *problems) bool {
	b, err := json.Marshal(map[string]any{"app": raw})
	if err != nil {
		ps.add("app", "%v", err)
		return false
	}
	err = spec.DecodeStrict(b, &struct {
		App any `json:"app"`
	}{params})
	switch {
	case err == nil:
		return true
	case strings.HasPrefix(err.Error(), "field "):
		ps.add("", "%s", err.Error())
	default:
		ps.add("app", "%s for kind %q", err.Error(), c.App.Kind)
	}
	return false
}

// maxAmount is the largest amount a workload message may have, 0 without
// transfers.
func (c *FileConfig) maxAmount() int64 {
	if w := c.Workload; w != nil && w.Transfers > 0 {
		return max(w.MaxAmount, 1)
	}
	return 0
}

func (c *FileConfig) checkSnapshotDir(ps *problems) {
	if c.SnapshotDir == "" {
		ps.add("snapshot_dir", "missing")
	}
}

func (c *FileConfig) checkWorkload(ps *problems) {
	w := c.Workload
	if w == nil {
		return
	}
	if w.Transfers < 0 {
		ps.add("workload.transfers", "%d is negative", w.Transfers)
	} else if w.Transfers > 0 && len(c.Topology.Chans) == 0 {
		ps.add("workload.transfers", "%d, but the topology has no channels to send on", w.Transfers)
	}
	notNegative(ps, "workload.max_amount", int64(w.MaxAmount))
	checkMS(ps, "workload.pause_ms", w.PauseMS)
}

// notNegative requires field's value v to be a natural number.
func notNegative(ps *problems, field string, v int64) {
	if v < 0 {
		ps.add(field, "%d is negative", v)
	}
}

// MaxMS is the largest value a config's *_ms field takes: a day. Beyond
// it a duration is a typo, and far beyond it (about 2^63 ns, 292 years)
// it would wrap round in time.Duration to a wrong or negative figure.
const MaxMS = 24 * 60 * 60 * 1000

// checkMS requires a *_ms field to be a natural number of at most MaxMS
// and reports whether it is.
func checkMS(ps *problems, field string, ms int) bool {
	switch {
	case ms < 0:
		ps.add(field, "%d is negative", ms)
	case ms > MaxMS:
		ps.add(field, "%d is out of range: at most %d (a day)", ms, MaxMS)
	default:
		return true
	}
	return false
}

func (c *FileConfig) checkSchedule(ps *problems) {
	s := c.Snapshots
	if s == nil {
		return
	}
	t := c.Topology
	checkInitiators(ps, t, s.Initiators)
	if s.EveryMS <= 0 {
		ps.add("snapshots.every_ms", "%d, want > 0", s.EveryMS)
	} else {
		checkMS(ps, "snapshots.every_ms", s.EveryMS)
	}
	if limit := (1<<SnapSeqBits - 1) / len(t.Procs); s.Count < 0 {
		ps.add("snapshots.count", "%d is negative", s.Count)
	} else if s.Count > limit {
		ps.add("snapshots.count", "%d, at most %d for %d processes", s.Count, limit, len(t.Procs))
	}
}

// checkInitiators requires every scheduled initiator to be a process of t.
func checkInitiators(ps *problems, t *spec.Topology, initiators []spec.ProcID) {
	for i, p := range initiators {
		if !t.Has(p) {
			ps.add(fmt.Sprintf("snapshots.initiators[%d]", i), "%q is not a process of the topology", string(p))
		}
	}
}

func (c *FileConfig) checkFailures(ps *problems) {
	f := c.Failures
	if f == nil {
		return
	}
	bad := false
	for _, v := range []struct {
		field string
		ms    int
	}{{"failures.heartbeat_ms", f.HeartbeatMS}, {"failures.timeout_ms", f.TimeoutMS}, {"failures.drain_ms", f.DrainMS}, {"failures.startup_ms", f.StartupMS}} {
		if !checkMS(ps, v.field, v.ms) {
			bad = true
		}
	}
	if bad {
		return
	}
	if err := c.Detector().Check(); err != nil {
		if f.TimeoutMS == 0 {
			ps.add("failures.heartbeat_ms", "%v (the timeout is timeout_ms's default, %d: set timeout_ms, or lower heartbeat_ms)", err, DefaultTimeoutMS)
		} else {
			ps.add("failures.timeout_ms", "%v", err)
		}
	}
}

// CheckHost checks what ParseConfig cannot, on this machine, before node
// self starts: self is a process of the topology, and the snapshot and
// trace directories are usable (each exists or can be created, and is
// writable). Self "" skips the first check. Problems are reported as by
// ParseConfig.
func (c *FileConfig) CheckHost(self spec.ProcID) error { return c.hostProblems(self).err() }

func (c *FileConfig) hostProblems(self spec.ProcID) problems {
	var ps problems
	if self != "" && !c.Topology.Has(self) {
		ps.add("", "node %s is not a process of the topology (%s)", string(self), procList(c.Topology.Procs))
	}
	if c.SnapshotDir != "" {
		if err := UsableDir(c.SnapshotDir); err != nil {
			ps.add("snapshot_dir", "%v", err)
		}
	}
	if c.TraceDir != "" {
		if err := UsableDir(c.TraceDir); err != nil {
			ps.add("trace_dir", "%v", err)
		}
	}
	c.tlsProblems(self, &ps)
	return ps
}

// UsableDir reports why dir cannot hold files: it, or the nearest
// existing directory it would be created in, is not a directory or not
// writable. It creates nothing but a temporary file, removed at once.
func UsableDir(dir string) error {
	d := filepath.Clean(dir)
	for {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return err
		}
		d = parent
	}
	f, err := os.CreateTemp(d, ".markerwave-check-*")
	if err != nil {
		return fmt.Errorf("%s is not writable: %w", d, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

func keySet[V any](m map[spec.ProcID]V) map[spec.ProcID]bool {
	s := make(map[spec.ProcID]bool, len(m))
	for k := range m {
		s[k] = true
	}
	return s
}

func procList(ps []spec.ProcID) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// NewApp returns p's initial application.
func (c *FileConfig) NewApp(p spec.ProcID) (core.App, error) { return c.App.Params.New(p) }

// Header is the trace header for this cluster: the topology and every
// process's initial balance.
func (c *FileConfig) Header() spec.Header {
	h := spec.Header{Topology: c.Topology, InitBal: map[spec.ProcID]int64{}}
	for _, p := range c.Topology.Procs {
		if a, err := c.NewApp(p); err == nil {
			h.InitBal[p] = core.InitialBalance(a)
		}
	}
	return h
}
