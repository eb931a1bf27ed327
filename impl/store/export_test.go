package store

// MkdirDurably is mkdirDurably, for the tests of package store_test.
var MkdirDurably = mkdirDurably
