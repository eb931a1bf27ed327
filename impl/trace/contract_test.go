package trace_test

// Property tests of the contract in doc.go, one test per promise.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/spec/spectest"
)

// genText draws a string with the characters JSON encoders treat
// specially: quotes, backslashes, HTML's <, > and &, control characters,
// and non-ASCII.
var genText = rapid.StringOfN(rapid.SampledFrom([]rune("aZ09 \"\\<>&\n\t\u2028é☃/")), 0, 12, -1)

// genPayload draws an application payload: compact JSON (the form an
// encoder writes a json.RawMessage in), or none.
func genPayload(t *rapid.T) json.RawMessage {
	switch rapid.IntRange(0, 3).Draw(t, "payload kind") {
	case 0:
		return nil
	case 1:
		return json.RawMessage(fmt.Sprint(rapid.Int64().Draw(t, "payload number")))
	case 2:
		// A JSON string holding <, > and & as they are: valid JSON that
		// an HTML-escaping encoder rewrites.
		return json.RawMessage(`"` + rapid.StringOfN(rapid.SampledFrom([]rune("ab<>&")), 0, 8, -1).Draw(t, "payload raw") + `"`)
	default:
		b, err := json.Marshal(map[string]string{"note": genText.Draw(t, "payload text")})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// genEvent draws an event that spec.Event.Validate accepts on top, taken
// by proc (any process if proc is ""), with seq seq.
func genEvent(t *rapid.T, top *spec.Topology, proc spec.ProcID, seq uint64) spec.Event {
	var out, in []spec.Channel
	for _, c := range top.Chans {
		if proc == "" || c.From == proc {
			out = append(out, c)
		}
		if proc == "" || c.To == proc {
			in = append(in, c)
		}
	}
	e := spec.Event{Seq: seq, VC: make([]uint64, len(top.Procs))}
	for i := range e.VC {
		e.VC[i] = rapid.Uint64().Draw(t, "vc")
	}
	e.After = spec.LocalState{Bal: rapid.Int64().Draw(t, "bal"), Sent: rapid.IntRange(0, 1000).Draw(t, "sent"), Rcvd: rapid.IntRange(0, 1000).Draw(t, "rcvd")}
	actions := []spec.Action{spec.Initiate}
	if len(out) > 0 {
		actions = append(actions, spec.SendApp)
	}
	if len(in) > 0 {
		actions = append(actions, spec.RecvApp, spec.RecvMarker)
	}
	e.Action = rapid.SampledFrom(actions).Draw(t, "action")
	switch e.Action {
	case spec.Initiate:
		e.Proc = proc
		if proc == "" {
			e.Proc = rapid.SampledFrom(top.Procs).Draw(t, "initiator")
		}
		e.Snap = spec.SnapID(rapid.Uint64Min(1).Draw(t, "snap"))
	case spec.SendApp, spec.RecvApp:
		c := rapid.SampledFrom(out).Draw(t, "send channel")
		e.Proc = c.From
		if e.Action == spec.RecvApp {
			c = rapid.SampledFrom(in).Draw(t, "recv channel")
			e.Proc = c.To
		}
		e.From, e.To = c.From, c.To
		e.Amount = rapid.Int64Min(1).Draw(t, "amount")
		e.Msg = rapid.Uint64Min(1).Draw(t, "msg")
		e.Payload = genPayload(t)
	case spec.RecvMarker:
		c := rapid.SampledFrom(in).Draw(t, "marker channel")
		e.Proc, e.From, e.To = c.To, c.From, c.To
		e.Snap = spec.SnapID(rapid.Uint64Min(1).Draw(t, "snap"))
		e.First = rapid.Bool().Draw(t, "first")
	}
	return e
}

func genHeader(t *rapid.T, top *spec.Topology) spec.Header {
	h := spec.Header{Topology: top, InitBal: map[spec.ProcID]int64{}, Source: genText.Draw(t, "source"), Note: genText.Draw(t, "note")}
	for _, p := range top.Procs {
		h.InitBal[p] = rapid.Int64Range(0, 1000).Draw(t, "init bal")
	}
	return h
}

// TestSinkWritesWhatWriteTraceWritesProperty: the sink writes, byte for
// byte, what spec.WriteTrace writes for the same header and events, and
// spec.ReadTrace reads back exactly the events emitted.
func TestSinkWritesWhatWriteTraceWritesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		top := spectest.Topology(t, rapid.IntRange(2, 5).Draw(t, "procs"))
		h := genHeader(t, top)
		evs := make([]spec.Event, rapid.IntRange(0, 20).Draw(t, "events"))
		for i := range evs {
			evs[i] = genEvent(t, top, "", uint64(i+1))
		}
		var got, want bytes.Buffer
		s, err := trace.NewSink(&got, h)
		require.NoError(t, err)
		for i, e := range evs {
			if err := s.Emit(e); err != nil {
				t.Fatalf("Emit of valid event %d (%s): %v", i, e, err)
			}
		}
		require.NoError(t, s.Close())
		require.NoError(t, spec.WriteTrace(&want, spec.Trace{Header: h, Events: evs}))
		if got.String() != want.String() {
			t.Fatalf("the sink's bytes are not spec.WriteTrace's:\n sink  %q\n write %q", got.String(), want.String())
		}
		tr, err := spec.ReadTrace(&got)
		require.NoError(t, err)
		require.Len(t, tr.Events, len(evs))
		for i := range evs {
			if !equalEvent(evs[i], tr.Events[i]) {
				t.Fatalf("event %d read back differs from the one emitted:\n emitted %+v (payload %s)\n read    %+v (payload %s)", i, evs[i], evs[i].Payload, tr.Events[i], tr.Events[i].Payload)
			}
		}
		if s.Count() != len(evs) {
			t.Fatalf("Count is %d after %d events", s.Count(), len(evs))
		}
	})
}

func equalEvent(a, b spec.Event) bool {
	pa, pb := a.Payload, b.Payload
	a.Payload, b.Payload = nil, nil
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb) && bytes.Equal(pa, pb)
}

// lines splits JSON-lines output into its lines; a last line without its
// newline is returned as partial.
func lines(b []byte) (whole []string, partial string) {
	s := string(b)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return whole, s
		}
		whole = append(whole, s[:i])
		s = s[i+1:]
	}
}

// TestSinkConcurrentEmittersProperty: emitters on several goroutines, one
// process each, with Flush and Count called concurrently: after Close
// every event appears exactly once, whole on its own line, each
// process's events in the order it emitted them; Count never goes down
// and ends at the number of events. Run under -race.
func TestSinkConcurrentEmittersProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		top := spectest.Topology(t, rapid.IntRange(2, 5).Draw(t, "procs"))
		h := genHeader(t, top)
		per := map[spec.ProcID][]spec.Event{}
		total := 0
		for _, p := range top.Procs {
			n := rapid.IntRange(0, 30).Draw(t, "events of "+string(p))
			for i := 0; i < n; i++ {
				per[p] = append(per[p], genEvent(t, top, p, uint64(i+1)))
			}
			total += n
		}
		var buf bytes.Buffer
		s, err := trace.NewSink(&buf, h)
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, total+1)
		for _, p := range top.Procs {
			wg.Add(1)
			go func(evs []spec.Event) {
				defer wg.Done()
				for _, e := range evs {
					if err := s.Emit(e); err != nil {
						errs <- err
					}
				}
			}(per[p])
		}
		done := make(chan struct{})
		var watch sync.WaitGroup
		watch.Add(1)
		go func() {
			defer watch.Done()
			last := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := s.Flush(); err != nil {
					errs <- err
				}
				c := s.Count()
				if c < last || c > total {
					errs <- fmt.Errorf("Count went from %d to %d (of %d events)", last, c, total)
				}
				last = c
			}
		}()
		wg.Wait()
		close(done)
		watch.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent use: %v", err)
		}
		require.NoError(t, s.Close())
		if s.Count() != total {
			t.Fatalf("Count is %d after %d events", s.Count(), total)
		}
		whole, partial := lines(buf.Bytes())
		if partial != "" {
			t.Fatalf("the output ends with a partial line %q", partial)
		}
		if len(whole) != 1+total {
			t.Fatalf("%d lines after the header, want %d (one per event)", len(whole)-1, total)
		}
		next := map[spec.ProcID]int{}
		for i, l := range whole[1:] {
			var e spec.Event
			if err := spec.DecodeStrict([]byte(l), &e); err != nil {
				t.Fatalf("line %d is not one event (lines interleaved?): %v\n%s", i+2, err, l)
			}
			k := next[e.Proc]
			if k >= len(per[e.Proc]) || !equalEvent(per[e.Proc][k], e) {
				t.Fatalf("line %d: %s's event %d is %s (seq %d), want its event %d in emit order, once", i+2, string(e.Proc), k+1, e, e.Seq, k+1)
			}
			next[e.Proc]++
		}
	})
}

// failAfter is a writer that takes limit bytes, then fails every write.
type failAfter struct {
	buf    bytes.Buffer
	limit  int
	closes int
}

var errDiskFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.limit >= 0 && f.buf.Len()+len(p) > f.limit {
		n := max(0, f.limit-f.buf.Len())
		f.buf.Write(p[:n])
		return n, errDiskFull
	}
	return f.buf.Write(p)
}

func (f *failAfter) Close() error { f.closes++; return nil }

// TestSinkFlushAndErrorsProperty runs random sequences of Emit (valid and
// invalid events, some large enough to spill the sink's buffer) and
// Flush on a writer that may fail after some bytes, then Close, and
// checks the contract against a model of it:
//   - after a Flush that returns nil, the writer holds the header and
//     exactly the events whose Emit returned nil so far, in order;
//   - the events written are a prefix of the Emit calls: the first
//     refused Emit (an invalid event: ErrInvalidEvent; a write error:
//     wrapping the writer's error) stops the trace, and every later
//     Emit, Flush and Close returns that error;
//   - Count is the number of Emits that returned nil;
//   - Close closes the writer exactly once, whatever failed before, and
//     a second Close returns the first's result without closing again;
//     Emit after Close is ErrClosed.
func TestSinkFlushAndErrorsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		top := spectest.Topology(t, rapid.IntRange(2, 5).Draw(t, "procs"))
		h := genHeader(t, top)
		w := &failAfter{limit: rapid.OneOf(rapid.Just(-1), rapid.IntRange(0, 200<<10)).Draw(t, "fail after")}
		s, err := trace.NewSink(w, h)
		require.NoError(t, err)
		r := &sinkRun{t: t, top: top, w: w, s: s}
		nops := rapid.IntRange(0, 40).Draw(t, "ops")
		for i := 0; i < nops; i++ {
			switch kind := rapid.SampledFrom([]string{"emit", "emit", "emit", "big", "bad", "flush"}).Draw(t, "op"); kind {
			case "emit", "big", "bad":
				r.emit(i, kind)
			case "flush":
				if !r.flush(i) {
					continue
				}
			}
			r.checkCount(i)
		}
		err = r.checkClose()
		r.checkAfterClose(err)
	})
}

// sinkRun is one case of TestSinkFlushAndErrorsProperty: the sink, its
// writer, and the model of the contract.
type sinkRun struct {
	t      *rapid.T
	top    *spec.Topology
	w      *failAfter
	s      *trace.Sink
	ok     []spec.Event // the events whose Emit returned nil
	sticky error        // the first error the sink returned
}

// emit draws an event of kind ("emit", "big" or "bad") for op i, emits
// it, and checks what Emit returned against the model.
func (r *sinkRun) emit(i int, kind string) {
	t := r.t
	e := r.genOpEvent(kind)
	err := r.s.Emit(e)
	switch {
	case r.sticky != nil:
		if err == nil || err.Error() != r.sticky.Error() {
			t.Fatalf("op %d: Emit after the error %q returned %v, want the same error", i, r.sticky, err)
		}
	case kind == "bad":
		if !errors.Is(err, trace.ErrInvalidEvent) {
			t.Fatalf("op %d: Emit of an invalid event (%s) returned %v, want ErrInvalidEvent", i, e, err)
		}
		r.sticky = err
	case err != nil:
		if !errors.Is(err, errDiskFull) {
			t.Fatalf("op %d: Emit of a valid event failed with %v, which is not the writer's error", i, err)
		}
		r.sticky = err
	default:
		r.ok = append(r.ok, e)
	}
}

// genOpEvent draws the event of an op of kind: a valid one, a valid one
// large enough to spill the sink's buffer ("big"), or an invalid one
// ("bad").
func (r *sinkRun) genOpEvent(kind string) spec.Event {
	t, top := r.t, r.top
	e := genEvent(t, top, "", uint64(len(r.ok)+1))
	if kind == "big" {
		e.Action, e.From, e.To, e.Snap, e.First = spec.SendApp, top.Chans[0].From, top.Chans[0].To, 0, false
		e.Proc, e.Amount, e.Msg = e.From, 1, 1
		e.Payload = json.RawMessage(`"` + strings.Repeat("x", rapid.IntRange(32<<10, 100<<10).Draw(t, "big payload")) + `"`)
	}
	if kind == "bad" {
		switch rapid.IntRange(0, 2).Draw(t, "bad kind") {
		case 0:
			e.Payload = json.RawMessage("{not json")
			e.Action, e.From, e.To, e.Snap, e.First = spec.SendApp, top.Chans[0].From, top.Chans[0].To, 0, false
			e.Proc, e.Amount, e.Msg = e.From, 1, 1
		case 1:
			e.Proc = "Nobody"
		default:
			e.VC = append(e.VC, 0)
		}
	}
	return e
}

// flush flushes the sink for op i and checks what Flush returned and, if
// nil, what the writer holds; it says whether Flush returned nil with no
// error before it.
func (r *sinkRun) flush(i int) bool {
	t := r.t
	err := r.s.Flush()
	if r.sticky != nil {
		if err == nil || err.Error() != r.sticky.Error() {
			t.Fatalf("op %d: Flush after the error %q returned %v, want the same error", i, r.sticky, err)
		}
		return false
	}
	if err != nil {
		if !errors.Is(err, errDiskFull) {
			t.Fatalf("op %d: Flush failed with %v, which is not the writer's error", i, err)
		}
		r.sticky = err
		return false
	}
	checkHolds(t, fmt.Sprintf("after Flush (op %d)", i), r.w.buf.Bytes(), r.ok)
	return true
}

// checkCount checks that after op i Count is the number of Emits that
// returned nil.
func (r *sinkRun) checkCount(i int) {
	if c := r.s.Count(); c != len(r.ok) {
		r.t.Fatalf("op %d: Count is %d, but %d Emits returned nil", i, c, len(r.ok))
	}
}

// checkClose closes the sink and checks that Close returned the sticky
// error or the writer's, closed the writer once, and, returning nil, left
// the writer holding every event; it returns what Close returned.
func (r *sinkRun) checkClose() error {
	t, w, sticky := r.t, r.w, r.sticky
	err := r.s.Close()
	if sticky == nil && err != nil && !errors.Is(err, errDiskFull) {
		t.Fatalf("Close failed with %v, which is not the writer's error", err)
	}
	if sticky != nil && (err == nil || err.Error() != sticky.Error()) {
		t.Fatalf("Close after the error %q returned %v, want the same error", sticky, err)
	}
	if w.closes != 1 {
		t.Fatalf("Close closed the writer %d times, want once", w.closes)
	}
	if err == nil {
		checkHolds(t, "after Close", w.buf.Bytes(), r.ok)
	}
	return err
}

// checkAfterClose checks, the first Close having returned err, that a
// second Close returns the same without closing the writer again, that
// Emit after Close fails (ErrClosed), and that Count is unchanged.
func (r *sinkRun) checkAfterClose(err error) {
	t, w, s := r.t, r.w, r.s
	if err2 := s.Close(); fmt.Sprint(err2) != fmt.Sprint(err) || w.closes != 1 {
		t.Fatalf("a second Close returned %v (the first %v) and closed the writer %d times in all, want the first's result and once", err2, err, w.closes)
	}
	err = s.Emit(genEvent(t, r.top, "", 1))
	if r.sticky == nil && err != nil && !errors.Is(err, trace.ErrClosed) && !errors.Is(err, errDiskFull) {
		t.Fatalf("Emit after Close returned %v, want ErrClosed", err)
	}
	if err == nil {
		t.Fatalf("Emit after Close returned nil")
	}
	if c := s.Count(); c != len(r.ok) {
		t.Fatalf("after Close, Count is %d, but %d Emits returned nil", c, len(r.ok))
	}
}

// checkHolds fails t unless out is the header and exactly the events
// want, in order, each on its own line.
func checkHolds(t *rapid.T, when string, out []byte, want []spec.Event) {
	whole, partial := lines(out)
	if partial != "" {
		t.Fatalf("%s: the output ends with a partial line of %d bytes", when, len(partial))
	}
	tr, err := spec.ReadTrace(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("%s: the output is not a readable trace: %v", when, err)
	}
	if len(tr.Events) != len(want) || len(whole) != 1+len(want) {
		t.Fatalf("%s: the writer holds %d events, want the %d whose Emit returned nil", when, len(tr.Events), len(want))
	}
	for i := range want {
		if !equalEvent(want[i], tr.Events[i]) {
			t.Fatalf("%s: event %d is %s, want %s", when, i+1, tr.Events[i], want[i])
		}
	}
}

// TestNewSinkRefuses: NewSink refuses a nil writer and a header without
// topology with ErrInvalidArg, writing nothing.
func TestNewSinkRefuses(t *testing.T) {
	_, err := trace.NewSink(nil, header())
	require.ErrorIs(t, err, trace.ErrInvalidArg)
	var buf bytes.Buffer
	_, err = trace.NewSink(&buf, spec.Header{InitBal: map[spec.ProcID]int64{"P1": 1}})
	require.ErrorIs(t, err, trace.ErrInvalidArg)
	require.Zero(t, buf.Len())
}

// TestSinkEmitAfterCloseIsErrClosed: Emit after a clean Close is
// ErrClosed and writes nothing; Flush after Close does nothing.
func TestSinkEmitAfterCloseIsErrClosed(t *testing.T) {
	w := &failAfter{limit: -1}
	s, err := trace.NewSink(w, header())
	require.NoError(t, err)
	require.NoError(t, s.Emit(events()[0]))
	require.NoError(t, s.Close())
	n := w.buf.Len()
	require.ErrorIs(t, s.Emit(events()[1]), trace.ErrClosed)
	require.NoError(t, s.Flush())
	require.NoError(t, s.Close())
	require.Equal(t, n, w.buf.Len(), "nothing is written after Close")
	require.Equal(t, 1, w.closes, "the writer is closed once")
	require.Equal(t, 1, s.Count())
}
