-------------------- MODULE MCBarrierNoBlock --------------------
(* Negative: alignment without blocking on the fan-in DAG.  TLC must    *)
(* report BarrierExactlyOnce: a post-barrier record reaches the sink    *)
(* before the snapshot and is emitted again after the restore.          *)
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
