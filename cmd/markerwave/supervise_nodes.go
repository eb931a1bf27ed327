package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/impl/coord"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/spec"
)

// childNodes runs a supervised cluster's nodes as child processes of
// this binary (coord.Nodes): `markerwave node --config FILE --id P`,
// with --restore from the incarnation's snapshot.
type childNodes struct {
	exe, config string
	cfg         *runtime.FileConfig
	run         []spec.ProcID // the nodes this supervisor runs (--procs)
	log         *lockedWriter

	mu        sync.Mutex
	procs     map[spec.ProcID]*child
	deaths    chan coord.Death
	stopping  bool
	failures  []string  // the last Stop's
	published time.Time // when a snapshot was last published in the catalog
}

// child is one node process.
type child struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed when it has exited
	err     error
}

func newChildNodes(exe, config string, cfg *runtime.FileConfig, run []spec.ProcID, log *lockedWriter) *childNodes {
	return &childNodes{exe: exe, config: config, cfg: cfg, run: run, log: log, deaths: make(chan coord.Death)}
}

// onPublish notes a snapshot published in the catalog
// (coord.SupervisorConfig.OnPublish).
func (n *childNodes) onPublish(spec.SnapID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.published = time.Now()
}

// notUpYet says, as it is stopped, whether c may not yet have heard from
// every peer without anything being wrong: it started less than its
// detector's startup grace ago (a peer never heard from is trusted that
// long: it may be starting too), and no snapshot complete at every
// process has been published since (one would prove that every node had
// heard from every peer: a marker on every channel). Such a node,
// stopped, names the peers it never heard from as dead and the
// snapshots waiting for them as aborted, and exits 1: the supervisor,
// which starts and stops them all, knows them not dead.
func (n *childNodes) notUpYet(c *child, now time.Time) bool {
	d := n.cfg.Detector()
	n.mu.Lock()
	defer n.mu.Unlock()
	return now.Sub(c.started) < max(d.Startup, d.Timeout) && !n.published.After(c.started)
}

// Start starts a process per node it runs, restored from inc.From.
func (n *childNodes) Start(_ context.Context, inc coord.Incarnation) error {
	procs := n.run
	deaths := make(chan coord.Death, len(procs))
	n.mu.Lock()
	n.procs, n.deaths, n.stopping, n.failures = map[spec.ProcID]*child{}, deaths, false, nil
	n.mu.Unlock()
	for _, p := range procs {
		if err := n.startChild(p, inc, deaths); err != nil {
			n.Stop(context.Background())
			return err
		}
	}
	return nil
}

// startChild starts node p's process and waits for it in the background.
func (n *childNodes) startChild(p spec.ProcID, inc coord.Incarnation, deaths chan coord.Death) error {
	args := []string{"node", "--config", n.config, "--id", string(p)}
	if inc.From != 0 {
		args = append(args, "--restore", fmt.Sprint(uint64(inc.From)))
	}
	cmd := exec.Command(n.exe, args...)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	cmd.Env = append(os.Environ(), recoverChildEnv+"=1", supervisedChildEnv+"=1")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s did not start: %w", p, err)
	}
	c := &child{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	n.mu.Lock()
	n.procs[p] = c
	n.mu.Unlock()
	n.log.printf("supervisor: incarnation %d: started %s (pid %d): markerwave %s\n", inc.N, p, cmd.Process.Pid, strings.Join(args, " "))
	go n.wait(p, c, deaths)
	return nil
}

// wait reports p's exit as a death at once, unless Stop asked for it.
func (n *childNodes) wait(p spec.ProcID, c *child, deaths chan coord.Death) {
	c.err = c.cmd.Wait()
	died := time.Now()
	close(c.done)
	n.mu.Lock()
	stopping := n.stopping
	n.mu.Unlock()
	if stopping {
		return
	}
	why := "its process exited: " + exitDescription(c.err)
	n.log.printf("supervisor: %s (pid %d) died: %s\n", p, c.cmd.Process.Pid, exitDescription(c.err))
	deaths <- coord.Death{Proc: p, Died: died, At: time.Now(), Why: why, Fatal: exitCode(c.err) == exitUsage}
}

// exitDescription says how a process ended.
func exitDescription(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// exitCode is a process's exit status (-1 if killed by a signal).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// Stop sends SIGTERM to every node still running and waits for each, up
// to its drain bound plus 3 s, then kills it; a node that did not exit 0
// is a failure of this stop, unless it exited 1 (stopped with failures)
// when it was not up yet (notUpYet): the cluster was stopped as it
// started, which is no failure of its nodes.
func (n *childNodes) Stop(context.Context) error {
	n.mu.Lock()
	n.stopping = true
	procs := n.procs
	n.mu.Unlock()
	bound := n.cfg.DrainTimeout() + 3*time.Second
	var failures []string
	running := map[spec.ProcID]*child{}
	early := map[spec.ProcID]bool{}
	now := time.Now()
	for p, c := range procs {
		select {
		case <-c.done: // the dead one, reported
		default:
			running[p], early[p] = c, n.notUpYet(c, now)
			c.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for p, c := range running {
		why := stopChild(c, bound)
		switch {
		case why == "":
		case early[p] && exitCode(c.err) == exitFail:
			n.log.printf("supervisor: %s stopped %v after it started, before any snapshot of its cluster was complete and within its startup grace: the peers it names dead or never heard from were starting with it (no failure of this stop)\n",
				p, now.Sub(c.started).Round(time.Millisecond))
		default:
			failures = append(failures, fmt.Sprintf("%s: %s", p, why))
		}
	}
	n.mu.Lock()
	n.failures = failures
	n.mu.Unlock()
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

// stopChild waits for c up to bound, then kills it; it says what went
// wrong ("" if it exited 0).
func stopChild(c *child, bound time.Duration) string {
	select {
	case <-c.done:
	case <-time.After(bound):
		c.cmd.Process.Kill()
		<-c.done
		return fmt.Sprintf("did not stop within %v of SIGTERM: killed", bound)
	}
	if c.err != nil && !terminated(c.err) {
		return "stopped: " + c.err.Error()
	}
	return ""
}

// terminated says whether a process ended by the SIGTERM it was sent
// before it had installed its handler (just started: nothing to drain).
func terminated(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

func (n *childNodes) Deaths() <-chan coord.Death {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.deaths
}

// finalFailures are the last stop's failures: at the end of the run,
// the nodes that did not stop cleanly.
func (n *childNodes) finalFailures() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failures
}

var _ coord.Nodes = (*childNodes)(nil)
