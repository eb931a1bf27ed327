-------------------- MODULE MCBarrierAdaptiveCycle --------------------
(* Adaptive barriers on a cycle: A aligns on S1 and S2 and may switch.  *)
EXTENDS BarrierAdaptive

(* S1 and S2 feed A (which aligns on them); A and B form a cycle (B -> A *)
(* the back-edge), each record goes round it once, and B feeds K.       *)
MCSrc    == {"S1", "S2"}
MCOp     == {"A", "B"}
MCSnk    == "K"
MCEdge   == {<<"S1", "A">>, <<"S2", "A">>, <<"A", "B">>, <<"B", "A">>, <<"B", "K">>}
MCBack   == {<<"B", "A">>}
MCBudget == [S1 |-> 1, S2 |-> 1]
MCCap    == 1
MCIter   == 1
MCMode   == "aligned"
MCForceAligned == {}
MCMaxTimeouts  == 1
=============================================================================
