-------------------- MODULE MCBarrierSinkTimeout --------------------
(* Two-phase-commit sink with a failure and a store timeout: the loss is reported. *)
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
MCMaxRestores == 1
MCMaxAborts   == 1
=============================================================================
