-------------------- MODULE MCBarrierNoPersist --------------------
(* Negative: unaligned without persisting the overtaken buffers.  TLC  *)
(* must report BarrierExactlyOnce: an overtaken record is lost by the   *)
(* restore.                                                              *)
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
MCMode   == "unaligned"
=============================================================================
