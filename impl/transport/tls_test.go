package transport_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/transport/tlstest"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// tlsRig is a cluster "c1" of three processes; b serves P2 with mutual
// TLS, and every refusal it reports is kept.
type tlsRig struct {
	top   *spec.Topology
	ca    *tlstest.CA
	addrs map[spec.ProcID]string
	b     *transport.TCP
	mu    sync.Mutex
	errs  []error
}

func newTLSRig(t *testing.T) *tlsRig {
	r := &tlsRig{top: spec.Complete(3), addrs: map[spec.ProcID]string{}}
	var err error
	r.ca, err = tlstest.NewCA("c1")
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	for _, p := range r.top.Procs {
		r.addrs[p] = "127.0.0.1:1" // never dialed: only P2 is reached
	}
	r.addrs["P2"] = ln.Addr().String()
	r.b, err = transport.NewTCP(r.top, transport.TCPConfig{Addrs: r.addrs, Local: []spec.ProcID{"P2"},
		Listeners: map[spec.ProcID]net.Listener{"P2": ln}, TLS: r.tls(t, "P2", ""), DrainTimeout: 200 * time.Millisecond,
		OnError: func(err error) { r.mu.Lock(); r.errs = append(r.errs, err); r.mu.Unlock() }})
	require.NoError(t, err)
	t.Cleanup(func() { r.b.Close() })
	return r
}

func (r *tlsRig) tls(t *testing.T, name, org string) *transport.TLS {
	return issue(t, r.ca, name, org)
}

// issue is a transport.TLS for name in org ("" ca's cluster), issued
// by ca and checking peers against ca's cluster.
func issue(t testing.TB, ca *tlstest.CA, name, org string) *transport.TLS {
	c, err := ca.Cert(name, org)
	require.NoError(t, err)
	return &transport.TLS{Cert: c, CAs: ca.Pool(), Cluster: ca.Cluster}
}

// sender is a transport serving P1 only, with tlsc (nil: plain TCP).
func (r *tlsRig) sender(t *testing.T, tlsc *transport.TLS) *transport.TCP {
	tr, err := transport.NewTCP(r.top, transport.TCPConfig{Addrs: r.addrs, Local: []spec.ProcID{"P1"},
		Listeners: map[spec.ProcID]net.Listener{"P1": listen(t)}, TLS: tlsc, DrainTimeout: 100 * time.Millisecond,
		RedialMin: 20 * time.Millisecond, RedialMax: 50 * time.Millisecond})
	require.NoError(t, err)
	return tr
}

func listen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

var p1p2 = spec.Channel{From: "P1", To: "P2"}

func frame(n uint64) wire.Envelope {
	return wire.Envelope{Chan: p1p2, Frame: wire.Frame{Kind: wire.KindApp, Seq: n, Payload: []byte(fmt.Sprintf("#%d", n)), VC: []uint64{n, 0, 0}}}
}

// refusal waits for b to report a refused peer whose error contains
// want, and returns it.
func (r *tlsRig) refusal(t *testing.T, want string) *transport.TLSRefusedError {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, err := range r.errs {
			var ce *transport.ConnError
			var re *transport.TLSRefusedError
			if errors.As(err, &ce) && ce.Op == "tls" && errors.As(err, &re) && strings.Contains(err.Error(), want) {
				r.mu.Unlock()
				return re
			}
		}
		r.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no TLS refusal containing %q; reported: %v", want, r.errs)
	return nil
}

// nothingDelivered checks that P2's inbox holds nothing.
func (r *tlsRig) nothingDelivered(t *testing.T) {
	t.Helper()
	in, err := r.b.Inbox("P2")
	require.NoError(t, err)
	batch, _ := in.Take(nil, 0)
	assert.Empty(t, batch, "frames of a refused peer were delivered")
}

// An intruder is refused and named before any frame of it is read, and
// the cluster's own sender then talks to P2 undisturbed: it gets 1..n
// in order on a channel the intruders tried first.
func TestTCPTLSRefusesIntruders(t *testing.T) {
	r := newTLSRig(t)
	other, err := tlstest.NewCA("c2")
	require.NoError(t, err)
	wrongCA, err := tlstest.NewCA("c1") // same cluster name, another CA
	require.NoError(t, err)
	mk := func(ca *tlstest.CA, name, org string) *transport.TLS { return issue(t, ca, name, org) }
	// An attacker does not check the listener: it dials with a raw
	// client that skips verifying it, presents its certificate, then
	// sends a hello and a frame.
	cases := []struct {
		name string
		tls  *transport.TLS
		want string // in b's report
	}{
		{"wrong CA", mk(wrongCA, "P1", ""), "(certificate CN=P1,O=c1) refused: x509: certificate signed by unknown authority"},
		{"another cluster's CA", mk(other, "P1", ""), "(certificate CN=P1,O=c2) refused: x509: certificate signed by unknown authority"},
		{"another cluster's certificate from this CA", mk(r.ca, "P1", "c2"), `(certificate CN=P1,O=c2) refused: the certificate is of cluster ["c2"], not "c1"`},
		{"no certificate", nil, "refused: presented no certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := &tls.Config{InsecureSkipVerify: true}
			if c.tls != nil {
				cfg.Certificates = []tls.Certificate{c.tls.Cert}
			}
			_, err := intrude(r.addrs["P2"], cfg)
			assert.Error(t, err, "the intruder was answered")
			re := r.refusal(t, c.want)
			assert.NotEmpty(t, re.Remote)
			r.nothingDelivered(t)
		})
	}
	t.Run("plain TCP", func(t *testing.T) {
		in := r.sender(t, nil)
		require.NoError(t, in.Send(frame(1)))
		r.refusal(t, "first record does not look like a TLS handshake")
		in.Close()
		r.nothingDelivered(t)
	})
	t.Run("an honest node of another cluster", func(t *testing.T) {
		// It refuses b's certificate first; b names it by address.
		in := r.sender(t, mk(other, "P1", ""))
		require.NoError(t, in.Send(frame(1)))
		r.refusal(t, "refused: remote error: tls: bad certificate")
		in.Close()
		r.nothingDelivered(t)
	})
	impostor := t.Run("a node claiming to be another", func(t *testing.T) {
		cfg := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{mk(r.ca, "P3", "").Cert}}
		rep, err := intrude(r.addrs["P2"], cfg) // its certificate is good: it is answered
		require.NoError(t, err)
		require.False(t, rep.Accepted, "an impostor's hello was accepted")
		assert.Contains(t, rep.Reason, `the peer's certificate names "P3", but its hello is from P1`)
		waitReported(t, r, `the peer's certificate names "P3", but its hello is from P1`)
		r.nothingDelivered(t)
		assert.Zero(t, r.b.Stats().Accepted)
	})
	if !impostor {
		return // the channel may be the impostor's now
	}
	t.Run("good peer talks", func(t *testing.T) {
		a := r.sender(t, mk(r.ca, "P1", ""))
		defer a.Close()
		const n = 200
		for i := uint64(1); i <= n; i++ {
			require.NoError(t, a.Send(frame(i)))
		}
		in, err := r.b.Inbox("P2")
		require.NoError(t, err)
		var got, batch []wire.Envelope
		for len(got) < n {
			select {
			case <-in.Ready():
			case <-time.After(10 * time.Second):
				t.Fatalf("got %d of %d frames", len(got), n)
			}
			batch, _ = in.Take(batch, 0)
			got = append(got, batch...)
		}
		for i, env := range got {
			require.Equal(t, uint64(i+1), env.Frame.Seq)
		}
		assert.Zero(t, r.b.Stats().Failed, "no channel failed: no intruder's frame reached P1->P2")
	})
}

// intrude dials addr with cfg, writes a hello of P1->P2 and a frame,
// and reads the reply: the error that ends the connection if it is not
// answered.
func intrude(addr string, cfg *tls.Config) (wire.HelloReply, error) {
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return wire.HelloReply{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	hello, _ := wire.EncodeHello(wire.Hello{From: "P1", To: "P2", Incarnation: 7})
	f, _ := wire.Encode(frame(1).Frame)
	if _, err := conn.Write(append(hello, f...)); err != nil {
		return wire.HelloReply{}, err
	}
	return wire.ReadHelloReply(bufio.NewReader(conn)) // TLS 1.3: a refused certificate shows here
}

// waitReported waits for b to report an error containing want.
func waitReported(t *testing.T, r *tlsRig, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, err := range r.errs {
			if strings.Contains(err.Error(), want) {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no report containing %q", want)
}

// The dialer checks the listener too: a listener with the certificate
// of another node than the channel's receiver is refused.
func TestTCPTLSDialerChecksReceiver(t *testing.T) {
	ca, err := tlstest.NewCA("c1")
	require.NoError(t, err)
	top := spec.Complete(2)
	imp := issue(t, ca, "P1", "") // listens as P2 with P1's certificate
	ln, err := tls.Listen("tcp", "127.0.0.1:0", imp.ServerConfig())
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	addrs := map[spec.ProcID]string{"P1": "127.0.0.1:1", "P2": ln.Addr().String()}
	errc := make(chan error, 16)
	a, err := transport.NewTCP(top, transport.TCPConfig{Addrs: addrs, Local: []spec.ProcID{"P1"}, Listeners: map[spec.ProcID]net.Listener{"P1": listen(t)},
		TLS: issue(t, ca, "P1", ""), DrainTimeout: 100 * time.Millisecond, RedialMin: 20 * time.Millisecond,
		OnError: func(err error) {
			select {
			case errc <- err:
			default:
			}
		}})
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.Send(wire.Envelope{Chan: spec.Channel{From: "P1", To: "P2"}, Frame: wire.Frame{Kind: wire.KindApp, Seq: 1, VC: []uint64{1, 0}}}))
	select {
	case err := <-errc:
		var re *transport.TLSRefusedError
		require.ErrorAs(t, err, &re)
		assert.Contains(t, err.Error(), `(certificate CN=P1,O=c1) refused: the certificate names "P1", not "P2"`)
	case <-time.After(10 * time.Second):
		t.Fatal("the dialer did not refuse a receiver with another node's certificate")
	}
}

// A transport's own certificate must be of its process and cluster.
func TestTCPTLSOwnCertificateChecked(t *testing.T) {
	ca, err := tlstest.NewCA("c1")
	require.NoError(t, err)
	top := spec.Complete(2)
	addrs := map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": "127.0.0.1:1"}
	for _, c := range []struct {
		tls   *transport.TLS
		local []spec.ProcID
		want  string
	}{
		{issue(t, ca, "P2", ""), []spec.ProcID{"P1"}, `the TLS certificate names "P2", not the process served here`},
		{&transport.TLS{Cert: issue(t, ca, "P1", "c2").Cert, CAs: ca.Pool(), Cluster: "c1"}, []spec.ProcID{"P1"}, `the TLS certificate is of cluster ["c2"], not "c1"`},
		{issue(t, ca, "P1", ""), nil, "with TLS a transport serves one process"},
		{&transport.TLS{CAs: ca.Pool(), Cluster: "c1"}, []spec.ProcID{"P1"}, "TLS without a certificate"},
	} {
		_, err := transport.NewTCP(top, transport.TCPConfig{Addrs: addrs, Local: c.local, TLS: c.tls})
		assert.ErrorContains(t, err, c.want)
	}
}

func TestLoadTLSNamesFiles(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("c1")
	require.NoError(t, err)
	caf, cert, key, err := ca.WriteFiles(dir, "P1")
	require.NoError(t, err)
	c, err := transport.LoadTLS(caf, cert, key, "c1")
	require.NoError(t, err)
	assert.Equal(t, "c1", c.Cluster)
	_, err = transport.LoadTLS(dir+"/missing.pem", cert, key, "c1")
	assert.ErrorContains(t, err, "missing.pem")
	_, err = transport.LoadTLS(caf, dir+"/nocert.pem", key, "c1")
	assert.ErrorContains(t, err, "nocert.pem")
	_, err = transport.LoadTLS(cert+"x", cert, key, "c1")
	assert.ErrorContains(t, err, cert+"x")
	_, err = transport.LoadTLS(key, cert, key, "c1") // a key is no CA
	assert.ErrorContains(t, err, "holds no PEM certificate")
}
