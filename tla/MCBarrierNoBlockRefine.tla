-------------------- MODULE MCBarrierNoBlockRefine --------------------
(* Negative: alignment without blocking on the fan-in DAG, checking the  *)
(* refinement.  TLC must report SnapshotRefinement: X takes a record S1  *)
(* sent after its barrier before it records, a post message taken before *)
(* the cut, which no step of ConsistentSnapshot.tla allows.              *)
EXTENDS BarrierSnapshots

(* Two sources feed a fan-in operator X, which feeds the sink K.        *)
MCSrc    == {"S1", "S2"}
MCOp     == {"X"}
MCSnk    == "K"
MCEdge   == {<<"S1", "X">>, <<"S2", "X">>, <<"X", "K">>}
MCBack   == {}
MCBudget == [S1 |-> 2, S2 |-> 1]
MCCap    == 1
MCIter   == 0
MCMode   == "aligned"
=============================================================================
