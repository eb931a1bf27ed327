// Package traces holds the project's recorded traces (conforms/, the runs
// that conform, and rejects/, those the audit rejects, each named for the
// property it breaks) for the explorer page, which offers them to audit.
// The barrier traces (barrier/) are another format, read by
// conformance/barrier, and are not embedded.
package traces

import "embed"

// Files are conforms/*.jsonl and rejects/*.jsonl.
//
//go:embed conforms/*.jsonl rejects/*.jsonl
var Files embed.FS
