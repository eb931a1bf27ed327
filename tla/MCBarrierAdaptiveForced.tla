-------------------- MODULE MCBarrierAdaptiveForced --------------------
(* Adaptive barriers with X -> Z force-aligned: X never switches, Z only once X's barrier is in. *)
EXTENDS BarrierAdaptive

(* S1 and S2 feed X, X and S3 feed Z, Z feeds K: two fan-in operators. *)
MCSrc    == {"S1", "S2", "S3"}
MCOp     == {"X", "Z"}
MCSnk    == "K"
MCEdge   == {<<"S1", "X">>, <<"S2", "X">>, <<"X", "Z">>, <<"S3", "Z">>, <<"Z", "K">>}
MCBack   == {}
MCBudget == [S1 |-> 1, S2 |-> 1, S3 |-> 1]
MCCap    == 1
MCIter   == 0
MCMode   == "aligned"
MCForceAligned == {<<"X", "Z">>}
MCMaxTimeouts  == 2
=============================================================================
