package mutation

import "regexp"

func init() { mutants = append(mutants, storeMutants...) }

// storeMutants break impl/store's contract (its doc.go). Each is told
// apart from the original by an execution of impl/store's own tests:
//
//   - store-overwrite-race: concurrent savers of one id with different
//     bodies; the original lets exactly one link its file, the mutant's
//     rename lets several succeed, each replacing the last.
//   - store-list-dirs: a directory (or symlink) named snap-<id>.json
//     beside the saved files; the original lists only the saved ids.
//   - store-lenient-header: a stored file whose header decodes to the
//     same fields but is spelled otherwise (a space after a colon, keys
//     in another order); only the canonical-header check refuses it (a
//     key's letter case flipped the strict decoding refuses too).
//   - store-unchecked-id: snapshot a's file copied to snapshot b's name;
//     the original's Load(b) refuses it, the mutant returns snapshot a.
//   - store-parts-unchecked-id: a part of snapshot a copied into
//     parts/<b>/; the original's LoadParts(b) refuses it.
//   - store-same-length: saving a second snapshot whose body has the
//     same length as the stored one but differs; the original refuses
//     (ErrExists), the mutant takes it for the same body.
//   - store-temp-left: any save; the original removes its temporary file
//     once linked, the mutant leaves it beside the snapshot.
var storeMutants = []mutant{
	{
		Name: "store-overwrite-race",
		Rule: "a file is never replaced: of concurrent savers of different bodies exactly one succeeds",
		Doc:  "linkInPlace renames the temporary file into place instead of hard-linking it, so a file written since the check is replaced",
		Patches: []patch{{
			File: "impl/store/store.go",
			Old:  "\terr := os.Link(tmp, path)\n",
			New:  "\terr := os.Rename(tmp, path) // MUTANT store-overwrite-race: rename replaces a file that appeared since the check\n",
		}},
		Runs: []goTest{{Pkg: "./impl/store", Tests: []string{"TestConcurrentSavers"}}},
		Expect: []expect{outputHas("TestConcurrentSavers", "several concurrent savers of different bodies succeeded",
			regexp.MustCompile(`round \d+: [2-8] of 8 concurrent savers of different bodies succeeded, want exactly one`))},
	},
	{
		Name: "store-list-dirs",
		Rule: "List returns exactly the ids of the snapshots stored",
		Doc:  "List drops the regular-file check: a directory or symlink named snap-<id>.json is listed as a snapshot",
		Patches: []patch{{
			File: "impl/store/store.go",
			Old:  "\t\tif m == nil || !e.Type().IsRegular() {\n",
			New:  "\t\tif m == nil { // MUTANT store-list-dirs: directories and symlinks are listed\n",
		}},
		Runs: []goTest{{Pkg: "./impl/store", Tests: []string{"TestListIsExactlyWhatWasStored"}}},
		Expect: []expect{outputHas("TestListIsExactlyWhatWasStored", "List returns ids that were never saved",
			regexp.MustCompile(`List: the saved ids, ascending, nothing else`))},
	},
	{
		Name: "store-lenient-header",
		Rule: "a stored file's header is read only as the store writes it, byte for byte",
		Doc:  "parseHeader no longer requires the header line to be exactly as written, so a header spelled otherwise (a space after a colon, keys reordered) is accepted",
		Patches: []patch{{
			File: "impl/store/store.go",
			Old:  "\tif canon, err := json.Marshal(h); err != nil || !bytes.Equal(canon, text) {\n",
			New:  "\tif canon, err := json.Marshal(h); err != nil { // MUTANT store-lenient-header: any decodable header is accepted\n",
		}},
		Runs: []goTest{{Pkg: "./impl/store", Tests: []string{"TestHeaderOnlyAsWritten"}}},
		Expect: []expect{outputHas("TestHeaderOnlyAsWritten", "a header spelled otherwise is accepted",
			regexp.MustCompile(`(?s)Expected error with "corrupt snapshot file" in chain but got nil.*Messages:\s+a space after a colon`))},
	},
	{
		Name: "store-unchecked-id",
		Rule: "Load(id) returns snapshot id or refuses the file: a file holding another snapshot than its name says is refused",
		Doc:  "LoadFile no longer compares the header's id with the id asked for (header and body still agree with each other)",
		Patches: []patch{{
			File: "impl/store/store.go",
			Old: "\tif want != 0 && h.ID != uint64(want) {\n" +
				"\t\treturn g, h, fmt.Errorf(\"store: %s: %w: header says snapshot %d, want %d\", path, ErrCorrupt, h.ID, want)\n" +
				"\t}\n",
			New: "\t// MUTANT store-unchecked-id: the id the file name promises is not checked\n",
		}},
		Runs: []goTest{{Pkg: "./impl/store", Tests: []string{"TestLoadRefusesFileUnderAnotherName"}}},
		Expect: []expect{outputHas("TestLoadRefusesFileUnderAnotherName", "a snapshot loaded from another snapshot's file",
			regexp.MustCompile(`snapshot \d+ loaded from the file of snapshot \d+`))},
	},
	{
		Name: "store-parts-unchecked-id",
		Rule: "LoadParts(id) returns parts of snapshot id only",
		Doc:  "LoadParts checks that a part file's header and body agree, but not that they are of the snapshot asked for",
		Patches: []patch{{
			File: "impl/store/store.go",
			Old:  "\tif h.ID != uint64(id) || uint64(part.Snap) != h.ID ",
			New:  "\tif /* MUTANT store-parts-unchecked-id: the asked id is not checked */ uint64(part.Snap) != h.ID ",
		}},
		Runs: []goTest{{Pkg: "./impl/store", Tests: []string{"TestLoadRefusesFileUnderAnotherName"}}},
		Expect: []expect{outputHas("TestLoadRefusesFileUnderAnotherName", "a part of another snapshot loaded",
			regexp.MustCompile(`a part of snapshot \d+ loaded as one of \d+`))},
	},
	{
		Name: "store-same-length",
		Rule: "a save never replaces a different body: it is a no-op only if the file holds the same body byte for byte",
		Doc:  "holds compares the stored body's length with the new one's, not its bytes, so a different body of the same length is taken as already saved",
		Patches: []patch{{
			File: "impl/store/store.go",
			Old:  "\tcase !bytes.Equal(old, body):\n",
			New:  "\tcase len(old) != len(body): // MUTANT store-same-length: same length taken for same body\n",
		}},
		Runs: []goTest{{Pkg: "./impl/store", Tests: []string{"TestSaveNeverOverwritesADifferentBody"}}},
		Expect: []expect{outputHas("TestSaveNeverOverwritesADifferentBody", "a different body of the same length is not refused (no ErrExists)",
			regexp.MustCompile(`a different body of the same length was not refused`))},
	},
	{
		Name: "store-temp-left",
		Rule: "a save leaves no temporary file behind",
		Doc:  "writeDurably no longer removes its temporary file after linking it into place",
		Patches: []patch{{
			File: "impl/store/store.go",
			Old:  "\tdefer os.Remove(tmp)\n",
			New:  "\t// MUTANT store-temp-left: the temporary file is not removed\n",
		}},
		Runs: []goTest{{Pkg: "./impl/store", Tests: []string{"TestSaveLoadRoundTrip"}}},
		Expect: []expect{outputHas("TestSaveLoadRoundTrip", "a temporary file is left beside the snapshot",
			regexp.MustCompile(`temporary file left behind: \S+/\.tmp-snap-\d+\.json-\d+`))},
	},
}
