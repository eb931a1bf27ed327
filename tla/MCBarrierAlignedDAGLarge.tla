-------------------- MODULE MCBarrierAlignedDAGLarge --------------------
(* Aligned barriers (ABS) on the fan-in DAG, two records per source and *)
(* buffers of two.                                                      *)
EXTENDS BarrierSnapshots

(* Two sources feed a fan-in operator X, which feeds the sink K.        *)
MCSrc    == {"S1", "S2"}
MCOp     == {"X"}
MCSnk    == "K"
MCEdge   == {<<"S1", "X">>, <<"S2", "X">>, <<"X", "K">>}
MCBack   == {}
MCBudget == [S1 |-> 2, S2 |-> 2]
MCCap    == 2
MCIter   == 0
MCMode   == "aligned"
=============================================================================
