package spec

import (
	"bytes"
	"strings"
	"testing"
)

const outsiderHeader = `{"format":"markerwave-outsider/1","node":"N1","topology":{"procs":["N1","N2"],"channels":[{"from":"N1","to":"N2"},{"from":"N2","to":"N1"}]},"init_bal":{"N1":10,"N2":5}}`

// TestReadOutsiderRefuses: every malformed line is refused naming its
// line and the field by its JSON path.
func TestReadOutsiderRefuses(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"ev":"send","to":"N2","amount":3,"id":[1]}`, `trace line 2: field "id": want a string or a number, got array`},
		{`{"ev":"send","to":"N2"}`, `trace line 2: field "amount": missing: a send needs the amount it transfers`},
		{`{"ev":"send","to":"N2","amount":0}`, `trace line 2: field "amount": 0, want a positive amount`},
		{`{"ev":"recv","from":"N2","to":"N1"}`, `trace line 2: field "to": a recv has none`},
		{`{"ev":"record","snap":null}`, `trace line 2: field "snap": missing: a record needs the snapshot's id`},
		{`{"ev":"record","snap":1,"state":{}}`, `trace line 2: field "state.bal": missing: a state needs its balance`},
		{`{"ev":"jump"}`, `trace line 2: field "ev": "jump", want one of`},
		{`{"ev":"send","to":"N3","amount":1}`, `trace line 2: field "to": no channel N1->N3 in the topology`},
		{`{"node":"N2","ev":"send","to":"N1","amount":1}`, `trace line 2: field "node": N2, but the header says this is N1's log`},
		{`{"ev":"send","to":"N2","amount":1,"vc":[1]}`, `trace line 2: field "vc": 1 entries, want 2`},
		{`{"ev":"send","to":"N2","amount":1,"colour":"red"}`, `trace line 2: unknown field "colour"`},
		{`{"snapshot":{"snap":"a","chans":{"N1->N3":{}}}}`, `trace line 2: field "snapshot.chans.N1->N3": no channel N1->N3 in the topology`},
		{`{"snapshot":{"procs":{}}}`, `trace line 2: field "snapshot.snap": missing`},
		{`{"snapshot":{"snap":1,"chans":{"N1->N2":{"ids":[1],"amounts":[2]}}}}`, `both ids and amounts`},
		{`{"restore":{}}`, `trace line 2: field "restore.snap": missing`},
	}
	for _, c := range cases {
		_, err := ReadOutsider(strings.NewReader(outsiderHeader + "\n" + c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.line, err, c.want)
		}
	}
	headers := []struct{ header, want string }{
		{`{"format":"markerwave-outsider/1","topology":{"procs":["N1"]}}`, `trace line 1: header: field "init_bal": missing`},
		{`{"format":"markerwave-outsider/1","topology":{"procs":["N1","N2"],"channels":[{"from":"N1","to":"N2"},{"from":"N2","to":"N1"}]},"init_bal":{"N1":1}}`, `header: field "init_bal.N2": missing`},
		{`{"format":"markerwave-outsider/1","init_bal":{}}`, `header: field "topology": missing`},
		{`{"format":"markerwave-outsider/1","node":"N9","topology":{"procs":["N1"]},"init_bal":{"N1":1}}`, `header: field "node": "N9" is no process`},
		{`{"format":"markerwave-outsider/1","topology":{"procs":["N1"]},"init_bal":{"N1":1},"restored_from":true}`, `header: field "restored_from": want a string or a number, got bool`},
	}
	for _, c := range headers {
		_, err := ReadOutsider(strings.NewReader(c.header))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.header, err, c.want)
		}
	}
}

// TestOutsiderRoundTrip: what WriteOutsider writes ReadOutsider reads
// back the same, ids as the implementation wrote them (0, strings).
func TestOutsiderRoundTrip(t *testing.T) {
	in := outsiderHeader + "\n" + strings.Join([]string{
		`{"ev":"record","snap":0,"state":{"bal":10}}`,
		`{"ev":"marker_send","to":"N2","snap":0}`,
		`{"ev":"send","to":"N2","id":"t-1","amount":3,"payload":{"memo":"rent"}}`,
		`{"restore":{"snap":0}}`,
		`{"ev":"recv","from":"N2","id":7,"amount":2}`,
		`{"snapshot":{"snap":0,"procs":{"N1":{"bal":10}},"chans":{"N2->N1":{"amounts":[2]}}}}`,
	}, "\n") + "\n"
	l, err := ReadOutsider(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if *l.Events[0].Snap != "0" || *l.Events[2].ID != "t-1" || *l.Events[3].ID != "7" || l.Restores[0].At != 3 {
		t.Fatalf("read %+v", l)
	}
	var b bytes.Buffer
	if err := WriteOutsider(&b, l); err != nil {
		t.Fatal(err)
	}
	first := b.String()
	l2, err := ReadOutsider(&b)
	if err != nil {
		t.Fatal(err)
	}
	var b2 bytes.Buffer
	if err := WriteOutsider(&b2, l2); err != nil {
		t.Fatal(err)
	}
	if first != b2.String() {
		t.Fatalf("round trip differs:\n%s\n%s", first, b2.String())
	}
	if got := ObsID("7").String() + ObsID("t-1").String() + ObsID("007").String(); got != `7"t-1""007"` {
		t.Fatalf("ObsID.String: %s", got)
	}
}

// FuzzReadOutsider: the reader never panics or hangs, and what it
// accepts WriteOutsider writes back to a log it reads the same. The seed
// corpus runs in the normal test.
func FuzzReadOutsider(f *testing.F) {
	for _, l := range []string{
		`{"ev":"send","to":"N2","id":"t1","amount":3,"payload":{"a":[1,2]}}`,
		`{"ev":"recv","from":"N2","id":7,"amount":2,"seq":1,"after":{"bal":1,"sent":0,"rcvd":1},"vc":[0,1]}`,
		`{"ev":"record","snap":0,"state":{"bal":10}}` + "\n" + `{"ev":"marker_send","to":"N2","snap":0}`,
		`{"ev":"marker_recv","from":"N2","snap":"alpha","first":true,"step":1}`,
		`{"snapshot":{"snap":1,"initiator":"N1","procs":{"N1":{"bal":10}},"chans":{"N2->N1":{"amounts":[2],"sent":1,"got":0}}}}`,
		`{"restore":{"snap":1}}`,
		`{"ev":"abort","snap":1,"peer":"N2"}`,
		`{"ev":"send","to":"N2","amount":-1}`,
		`{"ev":"send","to":"N2","amount":1e400}`,
		`{"ev":"record","snap":[]}`,
		`{"snapshot":null}`,
		"{\"ev\":\"send\",\"to\":\"N2\",\"amount\":1}\n\n{",
	} {
		f.Add(outsiderHeader + "\n" + l)
	}
	f.Add(`{"format":"markerwave-outsider/1","topology":{"procs":["A"]},"init_bal":{"A":0},"snaps":{"0":"A"},"restored_from":"x"}`)
	f.Fuzz(func(t *testing.T, in string) {
		l, err := ReadOutsider(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "trace line ") && !strings.HasPrefix(err.Error(), "trace: ") {
				t.Fatalf("error names no line: %v", err)
			}
			return
		}
		var b bytes.Buffer
		if err := WriteOutsider(&b, l); err != nil {
			t.Fatal(err)
		}
		first := b.String()
		back, err := ReadOutsider(&b)
		if err != nil {
			t.Fatalf("WriteOutsider wrote what ReadOutsider refuses: %v\n%s", err, first)
		}
		var b2 bytes.Buffer
		_ = WriteOutsider(&b2, back)
		if b2.String() != first {
			t.Fatalf("not stable:\n%s\n%s", first, b2.String())
		}
	})
}

// TestReadOutsiderNotAnObject: a line that is not a JSON object (null,
// an array, a number) is refused as such, not read as an observation
// with every field missing ("field \"node\": missing").
func TestReadOutsiderNotAnObject(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{outsiderHeader + "\nnull", `trace line 2: the line is null, not a JSON object`},
		{outsiderHeader + "\n[1,2]", `trace line 2: the line is an array, not a JSON object`},
		{outsiderHeader + "\n7", `trace line 2: the line is 7, not a JSON object`},
		{outsiderHeader + "\n\n\"send\"", `trace line 3: the line is a string, not a JSON object`},
		{"null\n" + `{"ev":"send","to":"N2","amount":1}`, `trace line 1: header: the line is null, not a JSON object`},
	} {
		_, err := ReadOutsider(strings.NewReader(c.in))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
}

// TestReadOutsiderKeysExact: a key given twice in one object, and a key
// that names a field only case-insensitively ("Amount"), are refused
// naming the line and the key, at any depth: encoding/json keeps the
// last of two keys and matches keys case-insensitively, so both were
// read silently (f/dupkey.jsonl, f/casekey.jsonl of the audit review).
func TestReadOutsiderKeysExact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{outsiderHeader + "\n" + `{"ev":"send","to":"N2","amount":30,"amount":40}`, `trace line 2: field "amount": given twice`},
		{outsiderHeader + "\n" + `{"ev":"send","to":"N2","Amount":30}`, `trace line 2: unknown field "Amount": keys are case-sensitive, the field is "amount"`},
		{outsiderHeader + "\n" + `{"ev":"send","to":"N2","amount":30,"Amount":40}`, `trace line 2: unknown field "Amount": keys are case-sensitive, the field is "amount"`},
		{outsiderHeader + "\n" + `{"ev":"record","snap":1,"state":{"bal":1,"bal":2}}`, `trace line 2: field "state.bal": given twice`},
		{outsiderHeader + "\n" + `{"ev":"record","snap":1,"state":{"BAL":1}}`, `trace line 2: unknown field "state.BAL": keys are case-sensitive, the field is "state.bal"`},
		{outsiderHeader + "\n" + `{"ev":"send","to":"N2","amount":3,"payload":{"memo":"a","memo":"b"}}`, `trace line 2: field "payload.memo": given twice`},
		{outsiderHeader + "\n" + `{"snapshot":{"snap":1,"procs":{"N1":{"bal":1},"N1":{"bal":2}}}}`, `trace line 2: snapshot: field "snapshot.procs.N1": given twice`},
		{outsiderHeader + "\n" + `{"snapshot":{"snap":1,"chans":{"N2->N1":{"ids":[1],"Ids":[2]}}}}`, `trace line 2: snapshot: unknown field "snapshot.chans.N2->N1.Ids": keys are case-sensitive, the field is "snapshot.chans.N2->N1.ids"`},
		{outsiderHeader + "\n" + `{"restore":{"snap":1,"snap":2}}`, `trace line 2: restore: field "restore.snap": given twice`},
		{`{"format":"markerwave-outsider/1","node":"N1","Node":"N2","topology":{"procs":["N1","N2"],"channels":[{"from":"N1","to":"N2"},{"from":"N2","to":"N1"}]},"init_bal":{"N1":1,"N2":1}}`, `trace line 1: header: unknown field "Node": keys are case-sensitive, the field is "node"`},
		{`{"format":"markerwave-outsider/1","topology":{"procs":["N1","N2"],"channels":[{"from":"N1","to":"N2"},{"from":"N2","to":"N1"}]},"init_bal":{"N1":1,"N2":1,"N1":2}}`, `trace line 1: header: field "init_bal.N1": given twice`},
		{`{"format":"markerwave-outsider/1","topology":{"procs":["N1","N2"],"channels":[{"from":"N1","to":"N2"},{"from":"N2","to":"N1"}],"Procs":["N1"]},"init_bal":{"N1":1,"N2":1}}`, `trace line 1: header: unknown field "topology.Procs": keys are case-sensitive, the field is "topology.procs"`},
		{`{"format":"markerwave-outsider/1","topology":{"procs":["N1","N2"],"channels":[{"from":"N1","to":"N2","to":"N2"},{"from":"N2","to":"N1"}]},"init_bal":{"N1":1,"N2":1}}`, `trace line 1: header: field "topology.channels[0].to": given twice`},
	} {
		_, err := ReadOutsider(strings.NewReader(c.in))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.in[strings.LastIndex(c.in, "\n")+1:], err, c.want)
		}
	}
}

// TestReadOutsiderUTF8: a line that is not UTF-8, or a string that
// escapes half a surrogate pair, is refused naming the line and the
// field: encoding/json replaces both with U+FFFD, so the ids "t\xff1"
// and "t\xfe1" were one id (f/nonutf8-id-differ2.jsonl of the audit
// review) and ids that differ read as one sent twice.
func TestReadOutsiderUTF8(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{outsiderHeader + "\n" + "{\"ev\":\"send\",\"to\":\"N2\",\"id\":\"t\xff1\",\"amount\":3}", `trace line 2: field "id": invalid UTF-8: byte 0xff at byte 31 (JSON text must be UTF-8)`},
		{outsiderHeader + "\n\n" + "{\"ev\":\"send\",\"to\":\"N2\",\"amount\":3,\"payload\":{\"memo\":[\"ok\",\"r\xc3\"]}}", `trace line 3: field "payload.memo[1]": invalid UTF-8: byte 0xc3 at byte 61 (`},
		{outsiderHeader + "\n" + "{\"ev\":\"record\",\"snap\":\"s\xed\xa0\x80\"}", `trace line 2: field "snap": invalid UTF-8: byte 0xed at byte 25 (`},
		{outsiderHeader + "\n" + "{\"ev\":\"send\",\"to\":\"N2\",\"amount\":3,\"c\xffolour\":1}", `trace line 2: a key: invalid UTF-8: byte 0xff at byte 37 (`},
		{outsiderHeader + "\n" + "{\"snapshot\":{\"snap\":1,\"procs\":{\"N\xff\":{\"bal\":1}}}}", `trace line 2: snapshot: a key in field "snapshot.procs": invalid UTF-8: byte 0xff at byte 34 (`},
		{outsiderHeader + "\n" + "{\"ev\":\"send\",\xff\"to\":\"N2\",\"amount\":3}", `trace line 2: invalid UTF-8: byte 0xff at byte 14 (`},
		{outsiderHeader + "\n" + `{"ev":"send","to":"N2","id":"t\ud800","amount":3}`, `trace line 2: field "id": \ud800 is half a UTF-16 surrogate pair, no character`},
		{outsiderHeader + "\n" + `{"ev":"send","to":"N2","id":"\udc00\ud800","amount":3}`, `trace line 2: field "id": \udc00 is half a UTF-16 surrogate pair, no character`},
		{"{\"format\":\"markerwave-outsider/1\",\"run\":\"r\xff\",\"topology\":{\"procs\":[\"N1\"]},\"init_bal\":{\"N1\":1}}", `trace line 1: header: field "run": invalid UTF-8: byte 0xff at byte 43 (`},
	} {
		_, err := ReadOutsider(strings.NewReader(c.in))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.in[strings.LastIndex(c.in, "\n")+1:], err, c.want)
		}
	}
	// A pair is one character, and U+FFFD written as such is no error.
	in := outsiderHeader + "\n" + `{"ev":"send","to":"N2","id":"t\ud83d\ude00","amount":3}` + "\n" + "{\"ev\":\"send\",\"to\":\"N2\",\"id\":\"\ufffd\\ufffd\u00e9\",\"amount\":3}"
	l, err := ReadOutsider(strings.NewReader(in))
	if err != nil || *l.Events[0].ID != "t\U0001F600" || *l.Events[1].ID != "\ufffd\ufffd\u00e9" {
		t.Fatalf("got %v, %+v", err, l.Events)
	}
}

// TestReadOutsiderCountsFrom1: a step or seq given as 0 is refused (the
// schema's minimum is 1; read into a uint64 with omitempty it was taken
// for none, so v/k-step0 and v/k-seq0 of the audit review conformed),
// and the format's counts are bounded at 2^63-1 as the schema says
// (step's bound was 2^64-1, v/a-stepbig).
func TestReadOutsiderCountsFrom1(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"ev":"send","to":"N2","amount":1,"step":0}`, `trace line 2: field "step": 0, want 1 or more (leave it out to have it derived)`},
		{`{"ev":"send","to":"N2","amount":1,"seq":0}`, `trace line 2: field "seq": 0, want 1 or more (leave it out to have it derived)`},
		{`{"ev":"recv","from":"N2","seq":0}`, `trace line 2: field "seq": 0, want 1 or more`},
		{`{"ev":"send","to":"N2","amount":1,"step":9223372036854775808}`, `trace line 2: field "step": 9223372036854775808 is out of range: at most 9223372036854775807`},
		{`{"ev":"send","to":"N2","amount":1,"step":18446744073709551616}`, `trace line 2: field "step": 18446744073709551616 is out of range: at most 9223372036854775807`},
		{`{"ev":"send","to":"N2","amount":1,"seq":18446744073709551615}`, `trace line 2: field "seq": 18446744073709551615 is out of range: at most 9223372036854775807`},
		{`{"ev":"send","to":"N2","amount":1,"vc":[1,9223372036854775808]}`, `trace line 2: field "vc[1]": 9223372036854775808 is out of range: at most 9223372036854775807`},
		{`{"snapshot":{"snap":1,"chans":{"N2->N1":{"sent":9223372036854775808}}}}`, `trace line 2: snapshot: field "snapshot.chans.N2->N1.sent": 9223372036854775808 is out of range`},
	} {
		_, err := ReadOutsider(strings.NewReader(outsiderHeader + "\n" + c.line))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.line, err, c.want)
		}
	}
	l, err := ReadOutsider(strings.NewReader(outsiderHeader + "\n" + `{"ev":"send","to":"N2","amount":1,"step":9223372036854775807,"seq":1,"vc":[0,0]}`))
	if err != nil || l.Events[0].Step != 1<<63-1 {
		t.Fatalf("got %v, %+v", err, l.Events)
	}
}

// TestOutsiderFormatNamed: a header with a wrong or missing format is
// refused for its format, saying what it found and what is read, before
// any field the format does not have: "markerwave-outsider/2" or no
// format with a "run" said unknown field "run", and without one want
// "markerwave-trace/3" alone (bf.jsonl, nof.jsonl, bf2.jsonl of the
// audit review). A header of another outsider version is an outsider
// trace, to be refused by ReadOutsider for its version.
func TestOutsiderFormatNamed(t *testing.T) {
	const rest = `"topology":{"procs":["N1","N2"],"channels":[{"from":"N1","to":"N2"},{"from":"N2","to":"N1"}]},"init_bal":{"N1":1,"N2":1}}`
	const formats = `(the trace formats: markerwave-trace/3, markerwave-outsider/1, markerwave-barrier-trace/1, markerwave-sink-trace/1)`
	for _, c := range []struct{ header, want string }{
		{`{"format":"markerwave-outsider/2","run":"x",` + rest, `trace line 1: header: field "format": "markerwave-outsider/2", want "markerwave-outsider/1" ` + formats},
		{`{"run":"x",` + rest, `trace line 1: header: field "format": missing, want "markerwave-outsider/1" ` + formats},
		{`{"format":"markerwave-trace/3",` + rest, `trace line 1: header: field "format": "markerwave-trace/3", want "markerwave-outsider/1" ` + formats},
	} {
		_, err := ReadOutsider(strings.NewReader(c.header))
		if err == nil || err.Error() != c.want {
			t.Errorf("ReadOutsider %s:\n got %v\nwant %s", c.header, err, c.want)
		}
	}
	for _, c := range []struct{ header, want string }{
		{`{"format":"markerwave-outsider/2",` + rest, `trace line 1: header: field "format": "markerwave-outsider/2", want "markerwave-trace/3" ` + formats},
		{`{"run":"x",` + rest, `trace line 1: header: field "format": missing, want "markerwave-trace/3" ` + formats},
	} {
		_, _, err := ReadTraceLines(strings.NewReader(c.header))
		if err == nil || err.Error() != c.want {
			t.Errorf("ReadTraceLines %s:\n got %v\nwant %s", c.header, err, c.want)
		}
	}
	for h, want := range map[string]bool{
		`{"format":"markerwave-outsider/1"}`: true, `{"format":"markerwave-outsider/2","run":1}`: true,
		`{"format":"markerwave-trace/3"}`: false, `{"run":"x"}`: false, `{"format":"markerwave-outsiders"}`: false,
	} {
		if got := IsOutsiderTrace([]byte(h)); got != want {
			t.Errorf("IsOutsiderTrace(%s) = %v, want %v", h, got, want)
		}
	}
}
