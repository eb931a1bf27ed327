-------------------- MODULE MCBarrierNoLog --------------------
(* Negative: the cycle, aligned, without back-edge logging.  TLC must   *)
(* report BarrierExactlyOnce: a record in flight on the back-edge at the *)
(* cut is in no recorded state and is lost by the restore.               *)
EXTENDS BarrierSnapshots

(* S feeds A; A and B form a cycle (B -> A the back-edge), each record *)
(* goes round it once, and B feeds the sink K.                           *)
MCSrc    == {"S"}
MCOp     == {"A", "B"}
MCSnk    == "K"
MCEdge   == {<<"S", "A">>, <<"A", "B">>, <<"B", "A">>, <<"B", "K">>}
MCBack   == {<<"B", "A">>}
MCBudget == [S |-> 2]
MCCap    == 1
MCIter   == 1
MCMode   == "aligned"
=============================================================================
