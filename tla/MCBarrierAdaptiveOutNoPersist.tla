-------------------- MODULE MCBarrierAdaptiveOutNoPersist --------------------
(* Negative: X's barrier overtakes its output buffer without persisting it. Expected violation: BarrierExactlyOnce. *)
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
