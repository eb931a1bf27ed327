package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a TB that records how Missing stopped it.
type recorder struct{ fatal, skip string }

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Skipf(format string, args ...any)  { r.skip = fmt.Sprintf(format, args...) }

// TestInCI: $CI as strconv.ParseBool reads it; anything else is not CI.
func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "1": true, "TRUE": true, "false": false, "": false, "yes": false} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %t, want %t", v, got, want)
		}
	}
}

// TestMissing: under CI=true a failure naming the cause, the hint and CI;
// elsewhere a skip naming the cause and the hint, never a failure.
func TestMissing(t *testing.T) {
	t.Setenv("CI", "true")
	var r recorder
	Missing(&r, "python3 is not installed", "install python3")
	if r.skip != "" || r.fatal != "python3 is not installed; CI=true, so this is a failure, not a skip: install python3" {
		t.Errorf("in CI: fatal %q, skip %q; want a failure naming the cause, the hint and CI", r.fatal, r.skip)
	}
	t.Setenv("CI", "")
	r = recorder{}
	Missing(&r, "python3 is not installed", "install python3")
	if r.fatal != "" || !strings.HasPrefix(r.skip, "SKIPPED, NOT RUN: python3 is not installed; install python3") {
		t.Errorf("outside CI: fatal %q, skip %q; want a skip naming the cause and the hint", r.fatal, r.skip)
	}
}
