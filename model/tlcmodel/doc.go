// Package tlcmodel reads TLC model files into a model.Config: what the
// check command and the tests of package model load.
//
// A model is a .cfg file (CONSTANTS, SPECIFICATION, INVARIANT(S),
// PROPERTY(IES), CHECK_DEADLOCK) and the module of the same base name
// beside it (MCRing.cfg and MCRing.tla), whose EXTENDS names the spec
// module and whose definitions Name == expr give the values the .cfg
// substitutes with "X <- Name". Expressions are a small TLA+ subset:
// integers, strings, TRUE/FALSE, names of earlier definitions, sets {..},
// tuples <<..>>, records [k |-> v, ..] and ranges a..b. Anything else is an
// *Error naming the file and line.
//
// Use it in this order: Load(cfgPath) reads both files (Parse takes their
// contents); the result is a model.Config ready for model.Explore or
// model.Simulate. Parsing goes lex, then parseCfg and parseModule, then
// resolve (the .cfg's constants against the module's definitions), then
// the constants' shapes (topology, procFunc, posInts, initiator), then
// model.NewConfig, whose errors name a constant and are placed at its line.
package tlcmodel
