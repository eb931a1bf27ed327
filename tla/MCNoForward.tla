----------------------------- MODULE MCNoForward ----------------------------
(* Counter-example: the article's token ring where a process records on  *)
(* its first marker but forwards none.  TLC must report SnapshotsComplete. *)
EXTENDS ChandyLamportNoForward

MCProc      == {"P1", "P2", "P3"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P3">>, <<"P3", "P1">>}
MCInitBal   == [P1 |-> 0, P2 |-> 1, P3 |-> 0]
MCAmount    == {1}
MCBudget    == [P1 |-> 1, P2 |-> 2, P3 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
