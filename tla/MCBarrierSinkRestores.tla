-------------------- MODULE MCBarrierSinkRestores --------------------
(* Two-phase-commit sink with two failures, one after the other.          *)
EXTENDS BarrierSink

(* One source S1 feeds the sink K.                                     *)
MCSrc    == {"S1"}
MCOp     == {}
MCSnk    == "K"
MCEdge   == {<<"S1", "K">>}
MCBack   == {}
MCBudget == [S1 |-> 2]
MCCap    == 1
MCIter   == 0
MCMode   == "aligned"
MCMaxCkpt     == 2
MCMaxRestores == 2
MCMaxAborts   == 0
=============================================================================
