// Package loopback picks free loopback TCP addresses for tests that start
// nodes as separate processes (which must be told their addresses before
// they listen).
package loopback

import "net"

// FreeAddrs returns n distinct 127.0.0.1 addresses that were free a moment
// ago. Every listener stays open until all n are chosen: one closed at
// once leaves its port free for the next Listen, and a cluster config
// naming one address twice is refused.
func FreeAddrs(n int) ([]string, error) {
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
