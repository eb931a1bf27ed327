----------------------------- MODULE MCNonFIFOPost --------------------------
(* Counter-example: the theorem's second half has teeth. Over non-FIFO    *)
(* channels, replaying the post-recording steps from the recorded state   *)
(* fails. TLC must report CurrentReachable.                               *)
EXTENDS ChandyLamportNonFIFO

MCProc      == {"P1", "P2"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P1">>}
MCInitBal   == [P1 |-> 100, P2 |-> 50]
MCAmount    == {30}
MCBudget    == [P1 |-> 2, P2 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
