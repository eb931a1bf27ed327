// Package loopback picks free loopback TCP addresses for tests that start
// nodes as separate processes (which must be told their addresses before
// they listen, and listen again on them after a restart).
//
// A port the kernel handed out for "127.0.0.1:0" and then saw closed is
// the kernel's to hand out again: to the next listener on port 0 or as
// the local port of an outgoing connection, from any process, while the
// node told to use it has not bound it yet or has been killed and is
// about to restart. Under a loaded make test (two go test runs side by
// side, hundreds of connections a second) that happened: a restarted
// node failed with "bind: address already in use". So FreeAddrs picks
// ports below the kernel's ephemeral range, which the kernel never picks
// by itself, and reserves each one for every process on the machine
// with a file (see reserve) for ReserveFor.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ReserveFor is how long a port FreeAddrs returned is kept from every
// other FreeAddrs call on the machine: longer than any test that uses one.
const ReserveFor = 15 * time.Minute

// FreeAddrs returns n distinct 127.0.0.1 addresses free a moment ago, on
// ports below the kernel's ephemeral range that no other FreeAddrs call
// on this machine returned in the last ReserveFor. Where that range
// leaves no room below it, the kernel picks (port 0), as it once did
// always.
func FreeAddrs(n int) ([]string, error) {
	lo, hi := portRange()
	if hi-lo < 1000 {
		return kernelAddrs(n)
	}
	dir := filepath.Join(os.TempDir(), "markerwave-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("loopback: reserving ports: %w", err)
	}
	var out []string
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("loopback: no free port in %d-%d after %d tries", lo, hi-1, tries)
		}
		port := lo + rand.IntN(hi-lo)
		ok, err := reserve(dir, port)
		if err != nil {
			return nil, err
		}
		if ok && free(port) {
			out = append(out, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		}
	}
	return out, nil
}

// portRange is the range FreeAddrs picks from: the 12,000 ports below the
// kernel's ephemeral range (Linux's ip_local_port_range; 32768 where it
// cannot be read), and none below 10000.
func portRange() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				hi = v
			}
		}
	}
	return max(10000, hi-12000), hi
}

// reserve creates dir/port, failing (false) when another call holds it: a
// file younger than ReserveFor. An older one is a reservation that ran
// out, and is taken over.
func reserve(dir string, port int) (bool, error) {
	path := filepath.Join(dir, strconv.Itoa(port))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err == nil {
		return true, f.Close()
	}
	if !errors.Is(err, os.ErrExist) {
		return false, fmt.Errorf("loopback: reserving port %d: %w", port, err)
	}
	st, err := os.Stat(path)
	if err != nil || time.Since(st.ModTime()) < ReserveFor {
		return false, nil
	}
	// Taken over: a fresh time, so the next caller sees it held.
	now := time.Now()
	return true, os.Chtimes(path, now, now)
}

// free reports whether 127.0.0.1:port can be listened on now.
func free(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// kernelAddrs returns n distinct addresses the kernel picked. Every
// listener stays open until all n are chosen: one closed at once leaves
// its port free for the next Listen, and a cluster config naming one
// address twice is refused.
func kernelAddrs(n int) ([]string, error) {
	var out []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}
