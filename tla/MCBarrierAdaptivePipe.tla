-------------------- MODULE MCBarrierAdaptivePipe --------------------
(* Adaptive barriers on a pipeline: X's barrier, queued behind a record, may overtake it (TimeoutOut). *)
EXTENDS BarrierAdaptive

(* A pipeline: S feeds X, X feeds the sink K.  X has one input, so it    *)
(* records on its barrier's arrival and never blocks: its only timeout  *)
(* is the one in its output buffer (TimeoutOut), behind backpressure.    *)
MCSrc    == {"S"}
MCOp     == {"X"}
MCSnk    == "K"
MCEdge   == {<<"S", "X">>, <<"X", "K">>}
MCBack   == {}
MCBudget == [S |-> 2]
MCCap    == 1
MCIter   == 0
MCMode   == "aligned"
MCForceAligned == {}
MCMaxTimeouts  == 1
=============================================================================
