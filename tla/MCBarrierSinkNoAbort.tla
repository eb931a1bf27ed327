-------------------- MODULE MCBarrierSinkNoAbort --------------------
(* Negative: the restore does not abort the interrupted checkpoint's transactions. *)
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
MCMaxCkpt     == 2
MCMaxRestores == 1
MCMaxAborts   == 0
=============================================================================
