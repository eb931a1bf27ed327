package mutation

import "regexp"

func init() { mutants = append(mutants, traceMutants...) }

// traceRun runs tests of impl/trace (its own property tests: a second or
// two), with extra go test flags.
func traceRun(flags []string, tests ...string) []goTest {
	return []goTest{{Pkg: "./impl/trace", Tests: tests, Args: append([]string{"-rapid.nofailfile"}, flags...)}}
}

// traceMutants break the contract of impl/trace (its package doc), one
// clause each. None is equivalent: each comment says what execution tells
// the mutant from the original.
var traceMutants = []mutant{
	{
		// Headers and events without <, > or & are written the same; a
		// payload or note with one is rewritten (\u003c), so the bytes
		// differ from spec.WriteTrace's and the payload read back is not
		// the one emitted.
		Name: "trace-escape-html",
		Rule: "the sink writes spec.WriteTrace's bytes: payloads as given",
		Doc:  "the sink's JSON encoder escapes HTML characters (encoding/json's default)",
		Patches: []patch{{
			File: "impl/trace/sink.go",
			Old:  "\ts.enc.SetEscapeHTML(false)",
			New:  "\t// MUTANT trace-escape-html: encoding/json's default escaping\n\t_ = 0",
		}},
		Runs: traceRun(nil, "TestSinkWritesWhatWriteTraceWritesProperty"),
		Expect: []expect{outputHas("TestSinkWritesWhatWriteTraceWritesProperty", "the sink's bytes differ from spec.WriteTrace's",
			regexp.MustCompile(`the sink's bytes are not spec\.WriteTrace's`))},
	},
	{
		// Valid events are written as before; an invalid one (a clock of
		// the wrong length, an unknown process) is written too, and the
		// trace no longer reads.
		Name: "trace-no-validate",
		Rule: "Emit refuses an event spec.ReadTrace would refuse (ErrInvalidEvent)",
		Doc:  "Emit skips spec.Event.Validate (only an encoding error is refused)",
		Patches: []patch{{
			File: "impl/trace/sink.go",
			Old:  "\tif err := e.Validate(s.top); err != nil {\n",
			New:  "\tif err := e.Validate(s.top); false && err != nil { // MUTANT trace-no-validate\n",
		}},
		Runs: traceRun(nil, "TestSinkFlushAndErrorsProperty"),
		Expect: []expect{outputHas("TestSinkFlushAndErrorsProperty", "an invalid event is accepted",
			regexp.MustCompile(`Emit of an invalid event \([^\n]*\) returned <nil>, want ErrInvalidEvent`))},
	},
	{
		// Until an event is refused nothing differs; after one, later
		// events are written again: the trace has a gap where the refused
		// event was.
		Name: "trace-gap-after-error",
		Rule: "the events written are a prefix of the Emit calls: errors stick",
		Doc:  "an invalid event is refused without making the error stick",
		Patches: []patch{{
			File: "impl/trace/sink.go",
			Old: "\tif err := e.Validate(s.top); err != nil {\n" +
				"\t\ts.err = fmt.Errorf(\"trace: event %d (%s): %w: %w\", s.n+1, e, ErrInvalidEvent, err)\n" +
				"\t\treturn s.err\n",
			New: "\tif err := e.Validate(s.top); err != nil { // MUTANT trace-gap-after-error: a bad event does not stop the trace\n" +
				"\t\treturn fmt.Errorf(\"trace: event %d (%s): %w: %w\", s.n+1, e, ErrInvalidEvent, err)\n",
		}},
		Runs: traceRun(nil, "TestSinkFlushAndErrorsProperty"),
		Expect: []expect{outputHas("TestSinkFlushAndErrorsProperty", "events are written after a refused one",
			regexp.MustCompile(`(Emit|Flush|Close) after the error "[^\n]*invalid event[^\n]*" returned (<nil>|[^\n]*), want the same error`))},
	},
	{
		// Count agrees while every Emit succeeds; a refused event is
		// counted although it is not in the trace.
		Name: "trace-count-refused",
		Rule: "Count is the number of Emits that returned nil",
		Doc:  "Emit counts the event before checking it",
		Patches: []patch{
			{
				File: "impl/trace/sink.go",
				Old:  "\tif err := e.Validate(s.top); err != nil {\n",
				New:  "\ts.n++ // MUTANT trace-count-refused: counted before it is checked\n\tif err := e.Validate(s.top); err != nil {\n",
			},
			{
				File: "impl/trace/sink.go",
				Old:  "\ts.n++\n\tif s.each {\n",
				New:  "\tif s.each {\n",
			},
		},
		Runs: traceRun(nil, "TestSinkFlushAndErrorsProperty"),
		Expect: []expect{outputHas("TestSinkFlushAndErrorsProperty", "a refused event is counted",
			regexp.MustCompile(`Count is (\d+), but (\d+) Emits returned nil`))},
	},
	{
		// Emit, Flush and Count are unchanged; only a Flush that writes
		// less than 4 KiB differs: it returns nil and writes nothing.
		Name: "trace-flush-lazy",
		Rule: "after Flush returns nil the writer holds every event emitted before it",
		Doc:  "Flush leaves less than 4 KiB of output in the buffer, to save small writes",
		Patches: []patch{{
			File: "impl/trace/sink.go",
			Old:  "\tif err := s.bw.Flush(); err != nil {\n",
			New: "\tif s.bw.Buffered() < 4096 && !s.closed { // MUTANT trace-flush-lazy: small output waits\n" +
				"\t\treturn nil\n" +
				"\t}\n" +
				"\tif err := s.bw.Flush(); err != nil {\n",
		}},
		Runs: traceRun(nil, "TestSinkFlushAndErrorsProperty"),
		Expect: []expect{outputHas("TestSinkFlushAndErrorsProperty", "Flush returned nil with events still buffered",
			regexp.MustCompile(`after Flush \(op \d+\): (the writer holds \d+ events, want the \d+ whose Emit returned nil|the output is not a readable trace)`))},
	},
	{
		// A first Close is unchanged; a second one closes the writer
		// again (a file: "file already closed", or worse, a descriptor
		// reused since).
		Name: "trace-double-close",
		Rule: "Close closes the writer exactly once; later Closes return the first one's result",
		Doc:  "Close does not remember that it ran",
		Patches: []patch{{
			File: "impl/trace/sink.go",
			Old:  "\tif s.closed {\n\t\treturn s.err\n\t}\n\ts.closed = true\n",
			New:  "\ts.closed = true // MUTANT trace-double-close: every Close closes the writer\n",
		}},
		Runs: traceRun(nil, "TestSinkFlushAndErrorsProperty", "TestSinkEmitAfterCloseIsErrClosed"),
		Expect: []expect{outputHas("TestSinkFlushAndErrorsProperty", "a second Close closes the writer again",
			regexp.MustCompile(`a second Close returned [^\n]* and closed the writer 2 times in all, want the first's result and once`))},
	},
	{
		// With a working writer nothing differs; when the flush fails
		// (disk full) the writer, a file, is never closed: a descriptor
		// leaks per failed trace.
		Name: "trace-close-skips-closer",
		Rule: "Close closes the writer even when the flush failed",
		Doc:  "Close returns the flush error before closing the writer",
		Patches: []patch{{
			File: "impl/trace/sink.go",
			Old:  "\terr := s.flush()\n",
			New:  "\terr := s.flush()\n\tif err != nil {\n\t\treturn err // MUTANT trace-close-skips-closer\n\t}\n",
		}},
		Runs: traceRun(nil, "TestSinkFlushAndErrorsProperty"),
		Expect: []expect{outputHas("TestSinkFlushAndErrorsProperty", "a failed flush leaves the writer open",
			regexp.MustCompile(`Close closed the writer 0 times, want once`))},
	},
	{
		// Every value Count returns is still right on a single goroutine;
		// read while another goroutine emits, it is a data race (the
		// runtime reads Count while its node emits). Only the race
		// detector tells: the mutant runs the test under -race.
		Name: "trace-count-unlocked",
		Rule: "a Sink is safe for concurrent use (Count included)",
		Doc:  "Count reads the event count without the lock",
		Patches: []patch{{
			File: "impl/trace/sink.go",
			Old:  "\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\treturn s.n\n",
			New:  "\treturn s.n // MUTANT trace-count-unlocked: \"just a read\"\n",
		}},
		Runs: traceRun([]string{"-race"}, "TestSinkConcurrentEmittersProperty"),
		Expect: []expect{outputHas("TestSinkConcurrentEmittersProperty", "the race detector: Count races with Emit",
			regexp.MustCompile(`(?s)WARNING: DATA RACE.*\(\*Sink\)\.Count\(\)`))},
	},
}
