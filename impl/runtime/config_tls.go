package runtime

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// TLSConfig is the config's "tls" object: mutual TLS between the nodes,
// and on their control and metrics endpoints.
//
//	"tls": {"cluster": "demo", "ca": "certs/ca.pem",
//	        "cert": "certs/{id}.pem", "key": "certs/{id}-key.pem"}
//
// CA is the PEM bundle of the cluster's certificate authority. Cert and
// Key are each node's certificate and key, "{id}" standing for the node
// (the operator's commands, markerwave snapshot, use id "operator"). A
// certificate must be signed by the CA, name its node as CommonName and
// the cluster in its Organization (see transport.TLS). Relative paths
// are relative to the config file's directory, like trace_dir.
//
// Without "tls" the nodes talk plain TCP, for trusted networks only, and
// the control and metrics endpoints must be on loopback addresses.
type TLSConfig struct {
	Cluster string `json:"cluster"`
	CA      string `json:"ca"`
	Cert    string `json:"cert"`
	Key     string `json:"key"`
}

// OperatorID is the "{id}" of the certificate the operator's commands
// present to a node's control endpoint.
const OperatorID = "operator"

// files are the CA, certificate and key files of id.
func (t *TLSConfig) files(id string) (ca, cert, key string) {
	sub := func(s string) string { return strings.ReplaceAll(s, "{id}", id) }
	return t.CA, sub(t.Cert), sub(t.Key)
}

// checkTLS: a "tls" object names every file and the cluster.
func (c *FileConfig) checkTLS(ps *problems) {
	t := c.TLS
	if t == nil {
		return
	}
	for _, f := range []struct{ name, v string }{{"cluster", t.Cluster}, {"ca", t.CA}, {"cert", t.Cert}, {"key", t.Key}} {
		if f.v == "" {
			ps.add("tls."+f.name, "missing")
		}
	}
}

// resolveTLS makes the TLS file paths relative to base (resolveDirs).
func (c *FileConfig) resolveTLS(base string) {
	if c.TLS == nil {
		return
	}
	for _, f := range []*string{&c.TLS.CA, &c.TLS.Cert, &c.TLS.Key} {
		if *f != "" && !filepath.IsAbs(*f) {
			*f = filepath.Join(base, *f)
		}
	}
}

// TLSFor loads id's certificate and key and the CA, nil without "tls".
// The error names the file that is missing or unreadable.
func (c *FileConfig) TLSFor(id spec.ProcID) (*transport.TLS, error) {
	if c.TLS == nil {
		return nil, nil
	}
	ca, cert, key := c.TLS.files(string(id))
	t, err := transport.LoadTLS(ca, cert, key, c.TLS.Cluster)
	if err != nil {
		return nil, fmt.Errorf("config: field \"tls\" for %s: %w", string(id), err)
	}
	return t, nil
}

// CheckCA checks that the CA every node shares loads (nil without
// "tls"): what markerwave node --check can tell of the TLS files without
// a node's id. Problems are reported as by ParseConfig.
func (c *FileConfig) CheckCA() error {
	var ps problems
	if c.TLS != nil {
		if _, err := transport.LoadCA(c.TLS.CA); err != nil {
			ps.add("tls.ca", "%v", err)
		}
	}
	return ps.err()
}

// tlsProblems: self's certificate, key and the CA load (CheckHost).
func (c *FileConfig) tlsProblems(self spec.ProcID, ps *problems) {
	if c.TLS == nil || !c.Topology.Has(self) {
		return
	}
	ca, cert, key := c.TLS.files(string(self))
	if _, err := transport.LoadTLS(ca, cert, key, c.TLS.Cluster); err != nil {
		ps.add("tls", "%s: %v", string(self), err)
	}
}

// refusedPeer logs a peer that mutual TLS refused (err wraps re): the
// first refusal of each host, certificate and reason, then every 100th,
// since a misconfigured peer redials several times a second.
func (p *process) refusedPeer(err error, re *transport.TLSRefusedError) {
	p.metrics.refused.Inc()
	host, _, splitErr := net.SplitHostPort(re.Remote)
	if splitErr != nil {
		host = re.Remote
	}
	key := host + "|" + re.Subject + "|" + re.Err.Error()
	if p.refusals == nil {
		p.refusals = map[string]int{}
	}
	p.refusals[key]++
	if n := p.refusals[key]; n == 1 || n%100 == 0 {
		p.say("error: %v (refused %d times)", err, n)
	}
}
