-------------------- MODULE MCBarrierSinkNoNotify --------------------
(* Negative: the commit waits for a notification that need not arrive. *)
EXTENDS BarrierSink

(* One source S1 feeds the sink K.                                     *)
MCSrc    == {"S1"}
MCOp     == {}
MCSnk    == "K"
MCEdge   == {<<"S1", "K">>}
MCBack   == {}
MCBudget == [S1 |-> 1]
MCCap    == 1
MCIter   == 0
MCMode   == "aligned"
MCMaxCkpt     == 1
MCMaxRestores == 0
MCMaxAborts   == 0
=============================================================================
