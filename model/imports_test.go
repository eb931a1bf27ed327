package model

import (
	"go/build"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The model is a library: command-line concerns (flags, files, exit
// codes, printing) live in cmd/markerwave, model files are read by
// model/tlcmodel.
func TestModelHasNoCLI(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	for _, bad := range []string{"flag", "os", "io/ioutil"} {
		require.False(t, slices.Contains(pkg.Imports, bad), "package model imports %s", bad)
	}
}
