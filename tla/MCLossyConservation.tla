------------------------- MODULE MCLossyConservation -------------------------
(* Counter-example: the token ring over lossy channels, checking that a  *)
(* complete snapshot holds all the money.  The token is lost in flight   *)
(* at the cut: the snapshot totals 0.  TLC must report Conservation.     *)
EXTENDS ChandyLamportLossy

MCProc      == {"P1", "P2", "P3"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P3">>, <<"P3", "P1">>}
MCInitBal   == [P1 |-> 0, P2 |-> 1, P3 |-> 0]
MCAmount    == {1}
MCBudget    == [P1 |-> 1, P2 |-> 2, P3 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
