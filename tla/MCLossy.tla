------------------------------ MODULE MCLossy ------------------------------
(* Counter-example: the token ring over lossy channels.  P1's marker is   *)
(* lost and the snapshot never completes.  TLC must report                *)
(* SnapshotsComplete (liveness).                                          *)
EXTENDS ChandyLamportLossy

MCProc      == {"P1", "P2", "P3"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P3">>, <<"P3", "P1">>}
MCInitBal   == [P1 |-> 0, P2 |-> 1, P3 |-> 0]
MCAmount    == {1}
MCBudget    == [P1 |-> 1, P2 |-> 2, P3 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
