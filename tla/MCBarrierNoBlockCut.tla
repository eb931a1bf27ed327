-------------------- MODULE MCBarrierNoBlockCut --------------------
(* Negative: alignment without blocking, checking the cut.  TLC must     *)
(* report BarrierConsistentCut: X takes a record S1 sent after its       *)
(* barrier, then records: an orphan, as in the article's $180.           *)
EXTENDS BarrierSnapshots

(* Two sources feed a fan-in operator X, which feeds the sink K.        *)
MCSrc    == {"S1", "S2"}
MCOp     == {"X"}
MCSnk    == "K"
MCEdge   == {<<"S1", "X">>, <<"S2", "X">>, <<"X", "K">>}
MCBack   == {}
MCBudget == [S1 |-> 2, S2 |-> 1]
MCCap    == 1
MCIter   == 0
MCMode   == "aligned"
=============================================================================
