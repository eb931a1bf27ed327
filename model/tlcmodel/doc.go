// Package tlcmodel parses TLC model files: a pure parser that knows no
// model package. It reads a model's .cfg and .tla into a Raw: the names
// the .cfg gives (SPECIFICATION, INVARIANT(S), PROPERTY(IES),
// CHECK_DEADLOCK), the spec module the .tla extends, and every constant's
// raw value with the line that wrote it. The loaders beside the specs'
// Go models give the values their meaning: model.Load (the
// Chandy-Lamport modules) and barrier.Load (tla/BarrierSnapshots.tla).
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
// Parsing goes lex, then parseCfg and parseModule, then resolve (the
// .cfg's constants against the module's definitions): LoadRaw reads the
// files, ParseRaw takes their contents, Raw.Declares checks the
// constants' names against the ones the spec declares.
package tlcmodel
