package tla

import "embed"

// Models holds the TLC model files of this folder, MC*.cfg with the MC*.tla
// module beside each, as they were when the binary was built: what the
// browser explorer (web/) loads its scenarios from with tlcmodel.Parse,
// where no file system holds the repository.
//
//go:embed MC*.cfg MC*.tla
var Models embed.FS
