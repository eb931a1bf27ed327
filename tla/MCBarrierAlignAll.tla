-------------------- MODULE MCBarrierAlignAll --------------------
(* Negative: the cycle, aligned on every input, the back-edge included   *)
(* (the acyclic rule on a cyclic graph).  A waits for the barrier of      *)
(* B -> A, which B sends only after A has forwarded its own: TLC must    *)
(* report BarriersComplete.                                              *)
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
