package mutation

import "regexp"

func init() { mutants = append(mutants, wireMutants...) }

// wireRun runs tests of impl/wire (its own property tests: a second or
// two).
func wireRun(tests ...string) []goTest {
	return []goTest{{Pkg: "./impl/wire", Tests: tests, Args: []string{"-rapid.nofailfile"}}}
}

// wireMutants break the contract of impl/wire (its package doc), one
// clause each. None is equivalent: each comment says what execution tells
// the mutant from the original.
var wireMutants = []mutant{
	{
		// Encode writes into a fresh slice, so only AppendFrame onto a
		// non-empty dst (a transport reusing a buffer) tells them apart:
		// the length field then counts dst's bytes too.
		Name: "wire-append-offset",
		Rule: "AppendFrame(dst, f) is dst followed by Encode(f)",
		Doc:  "AppendFrame computes the length field from the start of the buffer, not of the frame",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\tn := len(b) - start - prefixLen\n",
			New:  "\tn := len(b) - prefixLen // MUTANT wire-append-offset: counts dst's bytes too\n",
		}},
		Runs: wireRun("TestAppendFrameProperty"),
		Expect: []expect{outputHas("TestAppendFrameProperty", "AppendFrame onto a non-empty dst is not dst followed by Encode(f)",
			regexp.MustCompile(`AppendFrame onto [1-9]\d* bytes is not those bytes followed by Encode\(f\)`))},
	},
	{
		// A frame whose body is exactly the reader's limit is refused; one
		// below it is read as before.
		Name: "wire-limit-exclusive",
		Rule: "ReadFrame's size limit is inclusive",
		Doc:  "ReadFrame refuses a length equal to its limit (>= for >)",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\tif uint64(n) > uint64(maxSize) {\n",
			New:  "\tif uint64(n) >= uint64(maxSize) { // MUTANT wire-limit-exclusive\n",
		}},
		Runs: wireRun("TestReadFrameLimitProperty"),
		Expect: []expect{outputHas("TestReadFrameLimitProperty", "a frame exactly at the limit is refused",
			regexp.MustCompile(`ReadFrame\(maxSize (\d+), limit (\d+)\) refused a frame of (\d+) bytes: wire: frame too large`))},
	},
	{
		// Only a maxSize above MaxFrameSize tells them apart: the length
		// is then checked against it, and a peer may announce up to 4 GiB.
		Name: "wire-limit-above-max",
		Rule: "no frame above MaxFrameSize is read, whatever maxSize says",
		Doc:  "ReadFrame takes a maxSize above MaxFrameSize as the limit",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\tif maxSize <= 0 || maxSize > hardMax {\n",
			New:  "\tif maxSize <= 0 { // MUTANT wire-limit-above-max: a larger maxSize raises the hard limit\n",
		}},
		Runs: wireRun("TestReadFrameAboveMaxFrameSize", "TestReadFrameLimitProperty"),
		Expect: []expect{outputHas("TestReadFrameAboveMaxFrameSize", "a maxSize above MaxFrameSize raised the limit",
			regexp.MustCompile(`a maxSize above MaxFrameSize raised the limit`))},
	},
	{
		// Every frame still decodes; only the memory a short input costs
		// differs: the announced length, up to 16 MiB a connection.
		Name: "wire-alloc-announced",
		Rule: "ReadFrame allocates no more than the bytes that arrive plus 64 KiB",
		Doc:  "ReadFrame allocates the body's announced length up front",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\tif n <= smallBody {\n",
			New:  "\tif n <= MaxFrameSize { // MUTANT wire-alloc-announced: allocate what the peer announces\n",
		}},
		Runs: wireRun("TestReadFrameAllocatesWhatArrives"),
		Expect: []expect{outputHas("TestReadFrameAllocatesWhatArrives", "a short input allocates the announced length",
			regexp.MustCompile(`ReadFrame of a \d+-byte frame of which 100 bytes arrive allocated \d+ bytes, want at most \d+: it allocates what the peer announces`))},
	},
	{
		// Only a clock of exactly MaxVCLen entries tells them apart:
		// Encode refuses it, though Decode accepts its encoding.
		Name: "wire-vc-limit-exclusive",
		Rule: "MaxVCLen is inclusive: a clock of MaxVCLen entries is valid",
		Doc:  "Frame.Validate refuses a vector clock of exactly MaxVCLen entries (>= for >)",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\tif len(f.VC) > MaxVCLen {\n",
			New:  "\tif len(f.VC) >= MaxVCLen { // MUTANT wire-vc-limit-exclusive\n",
		}},
		Runs: wireRun("TestVCLimitAtTheBoundary"),
		Expect: []expect{outputHas("TestVCLimitAtTheBoundary", "a clock of exactly MaxVCLen entries is refused",
			regexp.MustCompile(`(?s)65536 vector clock entries, max 65536.*a vector clock of exactly MaxVCLen entries is valid`))},
	},
	{
		// A reader that returns the whole body in one Read (a bytes.Reader)
		// cannot tell them apart; one that returns it in pieces (a TCP
		// connection) gets a body with a zeroed tail and a stream out of
		// step.
		Name: "wire-short-read",
		Rule: "ReadFrame reads one frame from any io.Reader, whatever pieces it returns",
		Doc:  "ReadFrame reads the body with one Read call instead of io.ReadFull",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\t\tif _, err := io.ReadFull(r, body); err != nil {\n",
			New:  "\t\tif _, err := r.Read(body); err != nil { // MUTANT wire-short-read\n",
		}},
		Runs: wireRun("TestStreamPiecesProperty"),
		Expect: []expect{outputHas("TestStreamPiecesProperty", "a reader returning data in pieces breaks the stream",
			regexp.MustCompile(`(one-byte|half|data-err) reader: (frame \d+|after the last frame)`))},
	},
	{
		// Frames that differ only in their snapshot id (two markers of
		// different snapshots) are Equal: a test comparing markers with
		// Equal cannot see a wrong id.
		Name: "wire-equal-ignores-snap",
		Rule: "Frame.Equal is equality of every field",
		Doc:  "Frame.Equal does not compare Snap",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "f.Kind == g.Kind && f.Snap == g.Snap && f.Seq == g.Seq &&",
			New:  "f.Kind == g.Kind && /* MUTANT wire-equal-ignores-snap */ f.Seq == g.Seq &&",
		}},
		Runs: wireRun("TestFrameEqualProperty"),
		Expect: []expect{outputHas("TestFrameEqualProperty", "frames differing in their snapshot id are Equal",
			regexp.MustCompile(`frames differing in snap are Equal`))},
	},
	{
		// The clone is Equal; only a write into its clock (the runtime
		// keeps clones of frames it holds) shows the shared memory.
		Name: "wire-clone-shares-vc",
		Rule: "Frame.Clone shares no memory with the frame",
		Doc:  "Frame.Clone copies the payload but not the vector clock",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\tif f.VC != nil {\n\t\tf.VC = append([]uint64(nil), f.VC...)\n\t}\n",
			New:  "\t// MUTANT wire-clone-shares-vc: the clock is shared\n",
		}},
		Runs: wireRun("TestCloneProperty"),
		Expect: []expect{outputHas("TestCloneProperty", "writing into a clone's clock changes the original",
			regexp.MustCompile(`writing into the clone's vector clock changed the original's`))},
	},
	{
		// Only a sender id of exactly 64 bytes (valid per
		// spec.ValidateProcID) tells them apart: EncodeHello writes it,
		// ReadHello refuses it.
		Name: "wire-hello-id-63",
		Rule: "every hello EncodeHello accepts, ReadHello reads back (64-byte ids included)",
		Doc:  "ReadHello bounds the sender id at 63 bytes",
		Patches: []patch{{
			File: "impl/wire/handshake.go",
			Old:  "From: spec.ProcID(d.s(\"hello sender\", 64))",
			New:  "From: spec.ProcID(d.s(\"hello sender\", 63 /* MUTANT wire-hello-id-63 */))",
		}},
		Runs: wireRun("TestHandshakeLimitsAtTheBoundary", "TestHelloProperty"),
		Expect: []expect{outputHas("TestHandshakeLimitsAtTheBoundary", "a 64-byte sender id is refused",
			regexp.MustCompile(`(?s)hello sender length 64, max 63.*ReadHello refuses 64-byte process ids`))},
	},
	{
		// Minimal encodings decode as before; a varint padded with a
		// 0x80... 0x00 tail is accepted, so a frame has two encodings.
		Name: "wire-varint-nonminimal",
		Rule: "the encoding is canonical: varints are minimal",
		Doc:  "the varint reader accepts non-minimal encodings (as binary.Uvarint does)",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\t\t\tif c == 0 && i > 0 {\n\t\t\t\treturn 0, fmt.Errorf(",
			New:  "\t\t\tif false && c == 0 && i > 0 { // MUTANT wire-varint-nonminimal\n\t\t\t\treturn 0, fmt.Errorf(",
		}},
		Runs: wireRun("TestDecodeErrors", "FuzzDecode"),
		Expect: []expect{
			outputHas("TestDecodeErrors", "a non-minimal varint is decoded",
				regexp.MustCompile(`--- FAIL: TestDecodeErrors/non-minimal_varint`)),
			outputHas("FuzzDecode", "its seed corpus entry nonminimal-varint is not canonical",
				regexp.MustCompile(`=== RUN   FuzzDecode/nonminimal-varint\n\s+fuzz_test\.go:\d+: not canonical`)),
		},
	},
	{
		Name: "wire-shortvarint-nonminimal",
		Rule: "the encoding is canonical: varints are minimal",
		Doc:  "the one-pass varint reader of the common case (shortUvarint) accepts non-minimal encodings",
		Patches: []patch{{
			File: "impl/wire/codec.go",
			Old:  "\t\t\tif c == 0 && i > 0 {\n\t\t\t\treturn 0, 0\n",
			New:  "\t\t\tif false && c == 0 && i > 0 { // MUTANT wire-shortvarint-nonminimal\n\t\t\t\treturn 0, 0\n",
		}},
		Runs: wireRun("TestDecodeErrors", "FuzzDecode"),
		Expect: []expect{
			outputHas("TestDecodeErrors", "a non-minimal varint is decoded",
				regexp.MustCompile(`--- FAIL: TestDecodeErrors/non-minimal_varint`)),
			outputHas("FuzzDecode", "its seed corpus entry nonminimal-varint is not canonical",
				regexp.MustCompile(`=== RUN   FuzzDecode/nonminimal-varint\n\s+fuzz_test\.go:\d+: not canonical`)),
		},
	},
}
