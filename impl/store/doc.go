// Package store keeps completed global snapshots (and, for multi-process
// clusters, nodes' local parts) on disk, durably and checked.
//
// Use it in this order: Open a directory; Save each assembled
// snapshot.Global (SavePart each node's snapshot.Part); List or Used the
// ids held; Load a snapshot (LoadParts the parts of one) to restore or
// audit it.
//
// A file is one header line, then the body:
//
//	{"format":"markerwave-snapshot","version":1,"id":3,"taken":"2026-12-02T02:05:32.41Z","length":1234,"sha256":"..."}
//	<length bytes of JSON body>
//
// taken is when the file was saved, by the saver's clock (UseClock), and
// is covered by the checksum (sha256 of taken, a newline, then the body;
// of the body alone in files written before taken was recorded, which
// have none).
//
// Snapshot id lives in snap-<id>.json; process p's part of snapshot id in
// parts/<id>/<p>.json. A tool that reads a directory someone named
// (markerwave snapshots --dir, Recover) opens it with OpenExisting, which
// creates nothing and calls Recognize: a directory holding none of these
// entries, only others, is not an empty store.
//
// What it promises:
//
//   - Durability: a save writes a temporary file in the same directory,
//     fsyncs it, links it into place and fsyncs the directory; a reader
//     (or a crash) sees either no file or the complete one, never a part
//     of it, and no temporary file is left behind.
//   - No overwrite: a file is never replaced. Saving a snapshot or part
//     whose file exists succeeds, as a no-op, only if the file holds the
//     same body byte for byte (two nodes may assemble the same snapshot);
//     otherwise, and if the file is damaged, the save fails with an error
//     wrapping ErrExists and naming the file, and the file is untouched.
//     Of concurrent savers of one file with different bodies exactly one
//     succeeds (on file systems with hard links; elsewhere the temporary
//     file is renamed into place after the same check, which a
//     concurrent saver can race).
//   - Round trip: Load returns what Save was given, field for field;
//     LoadParts returns the saved parts of the topology's processes in
//     topology order and lists exactly the processes whose part is
//     absent.
//   - Refusal: Save refuses a snapshot that does not validate
//     (snapshot.Global.Validate) and SavePart a part of snapshot 0 or of a
//     malformed process id (so no path leaves the directory); nothing is
//     written then. Load refuses, with an error wrapping ErrCorrupt and
//     naming the file and the fault: an empty file; a header line that is
//     missing, longer than 4096 bytes or not exactly as the store writes
//     it; another format or version; a body shorter or longer than the
//     header says; a checksum mismatch; a body that does not decode
//     strictly, holds another snapshot or part than the file's name says,
//     or does not validate. So every truncation and every single-byte
//     change of a stored file is refused (only a body rewritten with its
//     checksum recomputed can pass, and then only if it is a valid
//     snapshot of the right id). A missing file is ErrNotFound.
//   - Listing: List returns the ids of exactly the snapshots stored,
//     ascending, ignoring temporary files, directories and any name that
//     is not snap-<id>.json with a canonical id; Used adds the ids that
//     have parts. Catalog lists every id Used lists, oldest first by the
//     time the snapshot's own record gives (its global file's header,
//     else its latest part's; never a file's modification time, so a
//     `cp -r` or a `touch` of the store changes nothing), then by id;
//     each complete (its global file loads: with its total) or not, with
//     each stored part's size and checksum, the processes whose part is
//     intact, those whose part is damaged (each with the refusal naming
//     the file) and, given a topology, those without one.
//   - Recovery: LatestComplete picks the snapshot taken last among those
//     whose global file loads and whose every node's part is stored and
//     loads; it never picks an incomplete or damaged one, and says for
//     each newer snapshot why it was passed over (the nodes without a
//     part, each damaged part, naming the intact ones, the damage). None:
//     the cluster restarts from its initial state.
//   - Aborts: SaveAbort records, durably and checked like a part, that a
//     node aborted a snapshot and why (spec.AbortVerdict), in
//     parts/<id>/aborted/<node>.json; Aborts reads them; Catalog reports
//     such a snapshot "aborted: " and the verdict's words, and
//     LatestComplete passes it over saying so.
//   - Retention: Prune keeps the last N recoverable snapshots and
//     removes every older one, global file and parts; newer incomplete
//     ones are left (one may be under way).
//   - Catalog file (the operator mode's): WriteCatalog records the
//     recoverable snapshots (Records: id, time, each part's size and
//     checksum) in catalog.json, replaced whole; CheckCatalog names every
//     way the parts on disk disagree with it.
//
// Values: ids are any positive uint64; bodies up to 64 GiB.
package store
