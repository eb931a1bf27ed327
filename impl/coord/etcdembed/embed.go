// Package etcdembed starts a real, single-member etcd server in this
// process (go.etcd.io/etcd/server/v3/embed) on loopback, in a directory of
// its own, on free ports: what the supervised mode's tests, the demo and
// `markerwave supervise --etcd embed` coordinate through when no etcd is
// named by address. It is the only package that imports etcd's server (a
// cold build of it costs about 80 CPU-seconds); the coordination itself
// (impl/coord) needs only the client.
package etcdembed

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// TLS names the server's certificate, key and the CA whose client
// certificates it requires (mutual TLS on the client port).
type TLS struct {
	CA, Cert, Key string
}

// Config is what Start needs; every field may be left zero.
type Config struct {
	// Dir is the data directory; "" is a new temporary one, removed by
	// Stop.
	Dir string
	// TLS, if set, serves the client port over mutual TLS (https).
	TLS *TLS
	// StartTimeout bounds the wait for the server to be ready (default
	// 20 s).
	StartTimeout time.Duration
	// ClientPort and PeerPort, if set, are the loopback ports (0: free
	// ones): a server restarted on the same Dir and ports is the same
	// member (tests of an etcd restart).
	ClientPort, PeerPort int
}

// Server is a running embedded etcd.
type Server struct {
	e       *embed.Etcd
	tmp     string
	addr    string
	stopped bool
}

// Start starts the server and waits until it serves clients. Its raft
// ticks are 10 ms (election 100 ms), so its smallest lease TTL is one
// second and a lease expires within TTL + 0.5 s (the lessor checks every
// 500 ms).
func Start(cfg Config) (*Server, error) {
	s := &Server{}
	dir, err := s.dataDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	e, err := startOnFreePorts(dir, cfg)
	if err != nil {
		s.cleanup()
		return nil, err
	}
	s.e = e
	if err := s.ready(cfg.StartTimeout); err != nil {
		s.Stop()
		return nil, err
	}
	s.addr = e.Clients[0].Addr().String()
	return s, nil
}

// startOnFreePorts starts the server on the ports cfg names or, for
// those it leaves 0, on ports free a moment before. A port the kernel
// said was free can be handed to another socket before etcd binds it (an
// outgoing connection under load, say): then, if cfg named neither port,
// the server is started again on new ones, up to three times in all.
func startOnFreePorts(dir string, cfg Config) (*embed.Etcd, error) {
	for try := 1; ; try++ {
		ec, err := serverConfig(dir, cfg)
		if err != nil {
			return nil, err
		}
		e, err := embed.StartEtcd(ec)
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || try == 3 || cfg.ClientPort != 0 || cfg.PeerPort != 0 {
			return nil, fmt.Errorf("etcdembed: start: %w", err)
		}
	}
}

// dataDir is dir, or a new temporary directory Stop removes.
func (s *Server) dataDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	tmp, err := os.MkdirTemp("", "markerwave-etcd-")
	if err != nil {
		return "", fmt.Errorf("etcdembed: %w", err)
	}
	s.tmp = tmp
	return filepath.Join(tmp, "data"), nil
}

// serverConfig is a single member on loopback, client and peer ports
// free when asked, logging errors only.
func serverConfig(dir string, cfg Config) (*embed.Config, error) {
	ports, err := pickPorts(2)
	if err != nil {
		return nil, err
	}
	if cfg.ClientPort != 0 {
		ports[0] = cfg.ClientPort
	}
	if cfg.PeerPort != 0 {
		ports[1] = cfg.PeerPort
	}
	t := cfg.TLS
	ec := embed.NewConfig()
	ec.Name = "markerwave"
	ec.Dir = dir
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop()) // its errors reach the caller
	ec.TickMs, ec.ElectionMs = 10, 100
	scheme := "http"
	if t != nil {
		scheme = "https"
		ec.ClientTLSInfo = transport.TLSInfo{CertFile: t.Cert, KeyFile: t.Key, TrustedCAFile: t.CA, ClientCertAuth: true}
	}
	client := url.URL{Scheme: scheme, Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	return ec, nil
}

// pickPorts picks the ports cfg leaves 0 (a variable for the test of a
// port taken before etcd binds it).
var pickPorts = freePorts

// freePorts asks the kernel for n free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdembed: find a free port: %w", err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		defer ln.Close()
	}
	return ports, nil
}

// ready waits for the server to serve, or fail, or the timeout.
func (s *Server) ready(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	select {
	case <-s.e.Server.ReadyNotify():
		return nil
	case err := <-s.e.Err():
		return fmt.Errorf("etcdembed: %w", err)
	case <-time.After(timeout):
		return errors.New("etcdembed: the server was not ready within " + timeout.String())
	}
}

// Endpoint is the client URL (http://127.0.0.1:PORT, https with TLS).
func (s *Server) Endpoint() string {
	return s.e.Config().AdvertiseClientUrls[0].String()
}

// Addr is the client address, host:port.
func (s *Server) Addr() string { return s.addr }

// Ports are the client and peer ports, for a restart on the same ones.
func (s *Server) Ports() (client, peer int) {
	c := s.e.Config()
	return urlPort(c.ListenClientUrls[0]), urlPort(c.ListenPeerUrls[0])
}

func urlPort(u url.URL) int {
	var p int
	fmt.Sscan(u.Port(), &p)
	return p
}

// Stop stops the server and removes its temporary directory, if it made
// one. It may be called more than once.
func (s *Server) Stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	if s.e != nil {
		s.e.Close()
	}
	s.cleanup()
}

func (s *Server) cleanup() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}
