-------------------- MODULE MCBarrierSinkPipeline --------------------
(* Two-phase-commit sink behind an operator: two checkpoints, a failure. *)
EXTENDS BarrierSink

(* One source S1 feeds an operator X, which feeds the sink K.          *)
MCSrc    == {"S1"}
MCOp     == {"X"}
MCSnk    == "K"
MCEdge   == {<<"S1", "X">>, <<"X", "K">>}
MCBack   == {}
MCBudget == [S1 |-> 2]
MCCap    == 1
MCIter   == 0
MCMode   == "aligned"
MCMaxCkpt     == 2
MCMaxRestores == 1
MCMaxAborts   == 0
=============================================================================
