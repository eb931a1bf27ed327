----------------------------- MODULE MCNonFIFOPre ---------------------------
(* Counter-example: the theorem's first half has teeth. Over non-FIFO     *)
(* channels a transfer overtakes the marker; replaying the pre-recording  *)
(* steps from the initial state fails. TLC must report SnapshotReachable. *)
EXTENDS ChandyLamportNonFIFO

MCProc      == {"P1", "P2"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P1">>}
MCInitBal   == [P1 |-> 100, P2 |-> 50]
MCAmount    == {30}
MCBudget    == [P1 |-> 2, P2 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
