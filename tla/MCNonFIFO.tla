----------------------------- MODULE MCNonFIFO ------------------------------
(* Counter-example: the article's two accounts over channels that are    *)
(* not FIFO.  TLC must report ConsistentCut: an orphan message.           *)
EXTENDS ChandyLamportNonFIFO

MCProc      == {"P1", "P2"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P1">>}
MCInitBal   == [P1 |-> 100, P2 |-> 50]
MCAmount    == {30}
MCBudget    == [P1 |-> 2, P2 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
