package model

// LoadModel reads a TLC model file (tla/*.cfg) for the tests of this
// package. The reader is package model/tlcmodel, which imports model, so
// the in-package tests cannot import it; tlcmodel_test.go (package
// model_test, in the same test binary) sets LoadModel to tlcmodel.Load
// before any test runs.
var LoadModel func(cfgPath string) (*Config, error)

// SpecModule names the spec module a TLC model file's module extends
// (tlcmodel.SpecModule, set like LoadModel).
var SpecModule func(cfgPath string) (string, error)
