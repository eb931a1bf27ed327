// Package testenv says what a test does when the machine lacks what it
// needs (a tool, a server, a git checkout): in CI, which must run every
// test, it fails; elsewhere it skips, saying what was not run and why.
// CI is read from $CI, which GitHub Actions, GitLab CI and .ci/run set to
// true. It imports nothing of the module, so every layer's tests may use
// it.
package testenv

import (
	"os"
	"strconv"
)

// InCI reports whether the tests run in CI: $CI is true ("true", "1",
// "TRUE", as strconv.ParseBool reads it).
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// TB is what Missing needs of a test (testing.TB has it).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Missing stops t for want of what it needs: why says what is missing
// and what is therefore not tested, hint how to provide it. In CI it is
// a failure; elsewhere a skip that says it was not run.
func Missing(t TB, why, hint string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s; CI=true, so this is a failure, not a skip: %s", why, hint)
		return
	}
	t.Skipf("SKIPPED, NOT RUN: %s; %s (CI=true makes this a failure)", why, hint)
}
