-------------------- MODULE MCBarrierAdaptiveNoPersist --------------------
(* Negative: the switch persists nothing.                               *)
EXTENDS BarrierAdaptive

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
MCForceAligned == {}
MCMaxTimeouts  == 1
=============================================================================
