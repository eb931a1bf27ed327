-------------------- MODULE MCBarrierUnalignedCycle --------------------
(* Unaligned checkpoints on a cycle.                                    *)
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
MCMode   == "unaligned"
=============================================================================
