//go:build race

package transport

// raceEnabled: the tests run under the race detector, which makes copying
// and checking a 16 MiB frame take seconds.
const raceEnabled = true
