package store

// MkdirDurably is mkdirDurably, for the tests of package store_test.
var MkdirDurably = mkdirDurably

// WatchDirSyncs makes s call f, then fsync as before, for every directory
// it fsyncs.
func WatchDirSyncs(s *Store, f func(dir string)) {
	s.syncDir = func(dir string) error { f(dir); return fsyncDir(dir) }
}
