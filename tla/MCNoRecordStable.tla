----------------------------- MODULE MCNoRecordStable -----------------------
(* Counter-example: the stable-property check has teeth. Without channel  *)
(* recording the snapshot loses the $30 in flight, so Conserved, true     *)
(* initially, fails in the snapshot. TLC must report StableCatalogue.     *)
EXTENDS ChandyLamportNoRecord

MCProc      == {"P1", "P2"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P1">>}
MCInitBal   == [P1 |-> 100, P2 |-> 50]
MCAmount    == {30}
MCBudget    == [P1 |-> 2, P2 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
