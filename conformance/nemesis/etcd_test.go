package nemesis

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/coord/etcdembed"
)

// etcdDirEnv, in the environment of this test binary, makes it host a
// real etcd member (impl/coord/etcdembed) on that data directory instead
// of running the tests: the nemesis starts it as a process of its own so
// that it can kill -9 the member and start it again on the same data.
const etcdDirEnv = "NEMESIS_ETCD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(etcdDirEnv); dir != "" {
		os.Exit(hostEtcd(dir))
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// hostEtcd runs etcd on dir, says "etcd at HOST:PORT" on stdout once it
// serves, and runs until killed (or its stdin closes: the test is gone).
func hostEtcd(dir string) int {
	srv, err := etcdembed.Start(etcdembed.Config{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "nemesis etcd:", err)
		return 1
	}
	fmt.Printf("etcd at %s\n", srv.Addr())
	buf := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			srv.Stop()
			return 0
		}
	}
}

// etcdMember is the etcd member process the nemesis kills and restarts.
type etcdMember struct {
	t    *testing.T
	dir  string
	cmd  *exec.Cmd
	addr string // where it serves clients now (a new port after each start)
	// stdin is the member's stdin, kept open: it closes when this process
	// dies, and the member stops (no etcd outlives a crashed test).
	stdin io.WriteCloser
}

// startEtcd starts the member on its data directory and waits, at most
// 30 s, until it serves.
func startEtcd(t *testing.T, dir string) *etcdMember {
	t.Helper()
	e := &etcdMember{t: t, dir: dir}
	e.start()
	t.Cleanup(func() { e.kill() })
	return e
}

func (e *etcdMember) start() {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), etcdDirEnv+"="+e.dir)
	out, err := cmd.StdoutPipe()
	require.NoError(e.t, err)
	in, err := cmd.StdinPipe()
	require.NoError(e.t, err)
	cmd.Stderr = os.Stderr
	require.NoError(e.t, cmd.Start())
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-lines:
		addr, ok := strings.CutPrefix(l, "etcd at ")
		require.True(e.t, ok, "the etcd host said %q", l)
		e.addr = addr
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		e.t.Fatalf("the etcd member on %s did not serve within 30 s", e.dir)
	}
	e.cmd, e.stdin = cmd, in
}

// kill kills the member with SIGKILL (no clean shutdown: its data is
// what it had synced) and waits for it; it may be called again.
func (e *etcdMember) kill() {
	if e.cmd == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGKILL)
	_ = e.cmd.Wait()
	_ = e.stdin.Close()
	e.cmd = nil
}
