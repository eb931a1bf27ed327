// Package pgtest starts a real PostgreSQL server for tests (Debian's
// postgresql package): initdb in a temporary data directory, the server
// on 127.0.0.1 at a free port with max_prepared_transactions as asked,
// run as the postgres user when the tests run as root (the server
// refuses root), stopped and removed after. Never a mock.
//
// Shared(t) is one server for a test binary, started on first use; the
// package's TestMain calls StopShared after m.Run. Without the server's
// binaries a test skips, saying so, unless CI=true, where it fails.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/markerwave/markerwave/internal/testenv"

	"github.com/jackc/pgx/v5"
)

// Options says how to start a server.
type Options struct {
	MaxPrepared int  // max_prepared_transactions (0 is 0: no prepared transactions)
	Fsync       bool // fsync on (off: faster tests; on: measurements)
}

// Server is a running PostgreSQL server.
type Server struct {
	Port   int
	dir    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	log    string
}

// Bin is the directory of the server's binaries (initdb, postgres), or
// an error saying they are absent: MARKERWAVE_PG_BIN's folder if it is
// set (an error naming it if either binary is not there), else the
// newest of Debian's, else initdb's on PATH.
func Bin() (string, error) {
	if d := os.Getenv("MARKERWAVE_PG_BIN"); d != "" {
		for _, b := range []string{"initdb", "postgres"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				return "", fmt.Errorf("pgtest: MARKERWAVE_PG_BIN=%s holds no %s (%v): it names the folder of PostgreSQL's server binaries, such as /usr/lib/postgresql/15/bin", d, b, err)
			}
		}
		return d, nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(m) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres): install Debian's postgresql package, or set MARKERWAVE_PG_BIN")
	}
	return filepath.Dir(m[len(m)-1]), nil
}

// Start initialises a data directory and starts a server on it.
func Start(opt Options) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	s, err := newDataDir(cred)
	if err != nil {
		return nil, err
	}
	if err := s.initdb(bin, cred); err != nil {
		s.remove()
		return nil, err
	}
	if err := s.start(bin, cred, opt); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// newDataDir makes the server's temporary data directory, owned by cred's
// user if cred is not nil.
func newDataDir(cred *syscall.Credential) (*Server, error) {
	dir, err := os.MkdirTemp("", "markerwave-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir}
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			s.remove()
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	return s, nil
}

// credential is the postgres user's when running as root, else nil (the
// server runs as the current user).
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and the server refuses root: no postgres user to run it as (%w)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command is bin/name args, run as cred, its output to the server's log.
func (s *Server) command(bin, name string, cred *syscall.Credential, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGTERM}
	cmd.Dir = s.dir
	return cmd
}

func (s *Server) initdb(bin string, cred *syscall.Credential) error {
	data := filepath.Join(s.dir, "data")
	out, err := s.command(bin, "initdb", cred, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

// start runs the server and waits until it accepts connections. A port
// the kernel said was free can be handed to another socket before the
// server binds it (under load, an outgoing connection): the server then
// exits at once ("could not bind"), and is started again on another
// port, up to three times in all.
func (s *Server) start(bin string, cred *syscall.Credential, opt Options) error {
	for try := 1; ; try++ {
		err := s.startOnce(bin, cred, opt)
		if !errors.Is(err, errPortTaken) || try == 3 {
			return err
		}
	}
}

// errPortTaken is a server that exited because its port was taken.
var errPortTaken = errors.New("pgtest: the port was taken before the server bound it")

// startOnce runs the server on a free port and waits for it.
func (s *Server) startOnce(bin string, cred *syscall.Credential, opt Options) error {
	port, err := pickPort()
	if err != nil {
		return err
	}
	s.Port = port
	fsync := "off"
	if opt.Fsync {
		fsync = "on"
	}
	s.log = filepath.Join(s.dir, "server.log")
	logf, err := os.Create(s.log)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	if cred != nil {
		_ = logf.Chown(int(cred.Uid), int(cred.Gid))
	}
	s.cmd = s.command(bin, "postgres", cred, "-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		"-c", "max_prepared_transactions="+strconv.Itoa(opt.MaxPrepared), "-c", "fsync="+fsync, "-c", "max_connections=50")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(s.cmd, s.exited)
	return s.await()
}

// await waits up to a minute for the server to accept a connection, and
// no longer once the server has exited: then the error quotes its log.
func (s *Server) await() error {
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := s.connect()
		if err == nil {
			return c.Close(context.Background())
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(s.log)
			s.cmd = nil
			if bytes.Contains(log, []byte("could not bind")) {
				return fmt.Errorf("%w (port %d): %s", errPortTaken, s.Port, bytes.TrimSpace(log))
			}
			return fmt.Errorf("pgtest: the server exited before it served:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(s.log)
			return fmt.Errorf("pgtest: the server did not start: %w\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// connect tries a connection for up to 2 s, given up when the server
// exits (a port another socket holds may accept and never answer).
func (s *Server) connect() (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	go func() {
		select {
		case <-s.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	return pgx.Connect(ctx, s.URL("postgres"))
}

// pickPort picks the server's port (a variable for the test of a port
// taken before the server binds it).
var pickPort = freePort

// freePort is a loopback port the kernel said was free.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL is the URL of database db on the server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// NewDB creates database name and returns its URL.
func (s *Server) NewDB(name string) (string, error) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgtest: creating %s: %w", name, err)
	}
	return s.URL(name), nil
}

// Stop stops the server (fast shutdown) and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	s.remove()
}

func (s *Server) remove() { _ = os.RemoveAll(s.dir) }

// SharedOptions are the shared server's options: max_prepared_transactions
// 10, fsync off (tests); a benchmark sets Fsync before its first Shared.
var SharedOptions = Options{MaxPrepared: 10}

var shared struct {
	once sync.Once
	s    *Server
	err  error
	dbs  int
	mu   sync.Mutex
}

// Shared is the test binary's server (max_prepared_transactions 10),
// started on first use, with a new database for the calling test (its
// URL). Without the binaries the test skips, unless CI=true: it fails.
func Shared(t testing.TB) string {
	t.Helper()
	s := Require(t, func() (*Server, error) {
		shared.once.Do(func() { shared.s, shared.err = Start(SharedOptions) })
		return shared.s, shared.err
	})
	shared.mu.Lock()
	shared.dbs++
	name := fmt.Sprintf("t%d", shared.dbs)
	shared.mu.Unlock()
	url, err := s.NewDB(name)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// Require returns the server start gives, skipping the test if the
// binaries are absent and CI is not "true", failing it otherwise.
func Require(t testing.TB, start func() (*Server, error)) *Server {
	t.Helper()
	RequireBin(t)
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// RequireBin skips t, saying why, when the server's binaries are absent,
// and fails it instead under CI=true (testenv.Missing).
func RequireBin(t testing.TB) {
	t.Helper()
	if _, err := Bin(); err != nil {
		testenv.Missing(t, fmt.Sprintf("%v, so the PostgreSQL test is not run", err), "Debian's postgresql package has the server (.ci/run installs it)")
	}
}

// StopShared stops the shared server, if it started: call it from
// TestMain after m.Run.
func StopShared() {
	if shared.s != nil {
		shared.s.Stop()
	}
}
