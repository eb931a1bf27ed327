package sinkdb

import (
	"os"
	"testing"

	"github.com/markerwave/markerwave/impl/dataflow/sink/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}
