// Package tlstest makes certificate authorities and certificates for
// tests of mutual TLS (impl/transport's TLS): a CA per cluster, and for each
// node a certificate whose CommonName is the node and whose Organization
// is the cluster, as impl/transport's TLS.Verify expects (this package imports nothing of
// markerwave, so that transport's own tests can use it). Keys are ECDSA P-256;
// nothing here is for production use.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority for one cluster.
type CA struct {
	Cluster string
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	PEM     []byte // the CA certificate
}

// NewCA makes a self-signed CA for cluster.
func NewCA(cluster string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(pkix.Name{CommonName: cluster + " CA", Organization: []string{cluster}})
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cluster: cluster, cert: cert, key: key, PEM: encode("CERTIFICATE", der)}, nil
}

// template is a certificate template for subject, valid for a day.
func template(subject pkix.Name) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	return &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
	}
}

func encode(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// Issue makes a certificate for name in organization org (the CA's
// cluster if org is ""), returned as PEM certificate and key.
func (ca *CA) Issue(name, org string) (certPEM, keyPEM []byte, err error) {
	return ca.issue(name, org, nil)
}

// IssueLoopback is Issue for a server on loopback: the certificate also
// names 127.0.0.1 and localhost (what a TLS client checks, e.g. etcd's).
func (ca *CA) IssueLoopback(name string) (certPEM, keyPEM []byte, err error) {
	return ca.issue(name, "", []net.IP{net.IPv4(127, 0, 0, 1)})
}

func (ca *CA) issue(name, org string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	if org == "" {
		org = ca.Cluster
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := template(pkix.Name{CommonName: name, Organization: []string{org}})
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if len(ips) > 0 {
		tmpl.IPAddresses, tmpl.DNSNames = ips, []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encode("CERTIFICATE", der), encode("EC PRIVATE KEY", kder), nil
}

// Cert is a certificate for name in organization org ("" the CA's
// cluster), ready for a tls.Config.
func (ca *CA) Cert(name, org string) (tls.Certificate, error) {
	c, k, err := ca.Issue(name, org)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(c, k)
}

// Pool is a certificate pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// WriteFiles writes the CA certificate to dir/ca.pem (once) and name's
// certificate and key to dir/name.pem and dir/name-key.pem, returning
// the three paths.
func (ca *CA) WriteFiles(dir, name string) (caFile, certFile, keyFile string, err error) {
	c, k, err := ca.Issue(name, "")
	if err != nil {
		return "", "", "", err
	}
	caFile = filepath.Join(dir, "ca.pem")
	certFile = filepath.Join(dir, name+".pem")
	keyFile = filepath.Join(dir, name+"-key.pem")
	for _, f := range []struct {
		path string
		b    []byte
	}{{caFile, ca.PEM}, {certFile, c}, {keyFile, k}} {
		if err := os.WriteFile(f.path, f.b, 0o600); err != nil {
			return "", "", "", err
		}
	}
	return caFile, certFile, keyFile, nil
}
