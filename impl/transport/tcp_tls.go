package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// TLS is mutual TLS for a cluster: this node's certificate, the cluster's
// CA and the cluster's name. A certificate is accepted only if the CA
// signed it (directly or through the intermediates it carries) and its
// subject's Organization includes Cluster; its CommonName is the node
// (process id, or an operator's name) it speaks for.
//
// On a TCP transport (TCPConfig.TLS) both ends of every connection
// present and check certificates before any hello is read: a dialer
// must present the certificate of the channel's sender (the hello's
// From), the listener that of the receiver. A peer refused is reported
// as a *ConnError of Op "tls" wrapping a *TLSRefusedError naming it, and
// nothing it sent is read, let alone delivered. ServerConfig and
// ClientConfig serve other endpoints (control, metrics) the same way.
type TLS struct {
	Cert    tls.Certificate
	CAs     *x509.CertPool
	Cluster string
}

// LoadTLS reads the CA bundle, the certificate and its key (PEM files)
// for cluster. Its error names the file that is missing or unreadable.
func LoadTLS(caFile, certFile, keyFile, cluster string) (*TLS, error) {
	if cluster == "" {
		return nil, errors.New("tls: no cluster name")
	}
	cas, err := LoadCA(caFile)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return &TLS{Cert: cert, CAs: cas, Cluster: cluster}, nil
}

// LoadCA reads the cluster's CA bundle from caFile (PEM); the error
// names the file that is missing, unreadable or holds no certificate.
func LoadCA(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls: CA file: %w", err)
	}
	cas := x509.NewCertPool()
	if !cas.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", caFile)
	}
	return cas, nil
}

// ErrNoCertificate is wrapped by a *TLSRefusedError of a peer that
// presented no certificate.
var ErrNoCertificate = errors.New("presented no certificate")

// TLSRefusedError is a peer refused by mutual TLS: Remote its address,
// Subject the subject of the certificate it presented ("" if none).
type TLSRefusedError struct {
	Remote  string
	Subject string
	Err     error
}

func (e *TLSRefusedError) Error() string {
	who := "peer " + e.Remote
	if e.Subject != "" {
		who += " (certificate " + e.Subject + ")"
	}
	return who + " refused: " + e.Err.Error()
}

func (e *TLSRefusedError) Unwrap() error { return e.Err }

// Verify checks a peer's certificate chain, leaf first: signed by the
// CA, of this cluster and, if want is not "", naming want. It returns
// the leaf's CommonName.
func (t *TLS) Verify(chain []*x509.Certificate, want string) (string, error) {
	if len(chain) == 0 {
		return "", ErrNoCertificate
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: t.CAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := leaf.Verify(opts); err != nil {
		return "", err
	}
	if !slices.Contains(leaf.Subject.Organization, t.Cluster) {
		return "", fmt.Errorf("the certificate is of cluster %q, not %q", leaf.Subject.Organization, t.Cluster)
	}
	if want != "" && leaf.Subject.CommonName != want {
		return "", fmt.Errorf("the certificate names %q, not %q", leaf.Subject.CommonName, want)
	}
	return leaf.Subject.CommonName, nil
}

// ServerConfig is the listener's side: it requires a client certificate
// and checks it with Verify (any node or operator of the cluster).
func (t *TLS) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.Cert},
		ClientAuth:   tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := t.Verify(cs.PeerCertificates, "")
			return err
		},
	}
}

// ClientConfig is the dialer's side, to the node named want ("" for
// any node of the cluster). The server's certificate is checked by
// Verify rather than against a host name: nodes are named by process
// id, wherever they run.
func (t *TLS) ClientConfig(want string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{t.Cert},
		InsecureSkipVerify: true, // checked by VerifyConnection, not by host name
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := t.Verify(cs.PeerCertificates, want)
			return err
		},
	}
}

// checkTLS checks that a transport with TLS serves one process, the
// one its certificate names, of the cluster its certificate is of:
// peers would refuse it otherwise.
func (tr *TCP) checkTLS() error {
	t := tr.cfg.TLS
	if t == nil {
		return nil
	}
	if len(tr.local) != 1 {
		return fmt.Errorf("transport: with TLS a transport serves one process (the one its certificate names), not %d", len(tr.local))
	}
	if len(t.Cert.Certificate) == 0 {
		return errors.New("transport: TLS without a certificate")
	}
	leaf, err := x509.ParseCertificate(t.Cert.Certificate[0])
	if err != nil {
		return fmt.Errorf("transport: TLS certificate: %w", err)
	}
	if !tr.local[spec.ProcID(leaf.Subject.CommonName)] {
		return fmt.Errorf("transport: the TLS certificate names %q, not the process served here", leaf.Subject.CommonName)
	}
	if !slices.Contains(leaf.Subject.Organization, t.Cluster) {
		return fmt.Errorf("transport: the TLS certificate is of cluster %q, not %q", leaf.Subject.Organization, t.Cluster)
	}
	return nil
}

// refused is the error of a failed handshake with the peer at remote on
// c: the subject of the certificate it presented, if any, and why.
func refused(c *tls.Conn, remote string, err error) *TLSRefusedError {
	e := &TLSRefusedError{Remote: remote, Err: err}
	if certs := c.ConnectionState().PeerCertificates; len(certs) > 0 {
		e.Subject = certs[0].Subject.String()
	}
	if errors.Is(err, ErrNoCertificate) || isNoClientCert(err) {
		e.Err = fmt.Errorf("%w: %w", ErrNoCertificate, err)
	}
	return e
}

// isNoClientCert is crypto/tls's refusal of a client without one (it
// exports no error value for it).
func isNoClientCert(err error) bool {
	return err != nil && err.Error() == "tls: client didn't provide a certificate"
}

// secureAccepted runs the listener's side of the handshake on accepted
// connection c, when the transport has TLS: the connection to use and
// the CommonName of the peer's certificate, or false after reporting a
// refused peer.
func (tr *TCP) secureAccepted(c net.Conn) (net.Conn, string, bool) {
	if tr.cfg.TLS == nil {
		return c, "", true
	}
	tc := tls.Server(c, tr.cfg.TLS.ServerConfig())
	c.SetDeadline(time.Now().Add(tr.cfg.HandshakeTimeout))
	if err := tc.HandshakeContext(tr.ctx); err != nil {
		tr.record(&ConnError{Op: "tls", Remote: c.RemoteAddr().String(), Err: refused(tc, c.RemoteAddr().String(), err)}, &tr.stats.Rejected)
		return nil, "", false
	}
	return tc, tc.ConnectionState().PeerCertificates[0].Subject.CommonName, true
}

// secureDialed runs the dialer's side of the handshake on c, dialed for
// o's channel, when the transport has TLS: the receiver must present
// the certificate of the channel's To.
func (o *outChan) secureDialed(c net.Conn) (net.Conn, error) {
	tr := o.t
	if tr.cfg.TLS == nil {
		return c, nil
	}
	tc := tls.Client(c, tr.cfg.TLS.ClientConfig(string(o.ch.To)))
	c.SetDeadline(time.Now().Add(tr.cfg.HandshakeTimeout))
	if err := tc.HandshakeContext(tr.ctx); err != nil {
		c.Close()
		return nil, refused(tc, c.RemoteAddr().String(), err)
	}
	return tc, nil
}

// impostor is why a hello is refused that claims a sender other than
// the one the peer's certificate names ("" if it does not).
func (tr *TCP) impostor(a *accepting) string {
	if tr.cfg.TLS == nil || a.peer == string(a.h.From) {
		return ""
	}
	return fmt.Sprintf("the peer's certificate names %q, but its hello is from %s", a.peer, string(a.h.From))
}
