-------------------- MODULE MCBarrierAdaptiveForceSwitch --------------------
(* Negative: X feeds the force-aligned X -> K and switches.             *)
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
MCForceAligned == {<<"X", "K">>}
MCMaxTimeouts  == 1
=============================================================================
