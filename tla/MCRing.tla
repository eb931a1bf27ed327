------------------------------- MODULE MCRing -------------------------------
(* The article's three-process token ring P1 -> P2 -> P3 -> P1.  One      *)
(* token (a balance of 1) starts at P2; P1 holds none and initiates.  The  *)
(* article's trace, with the token in transit on P2 -> P3 when P1's marker *)
(* arrives at P2, is one behaviour of this model.                          *)
EXTENDS ChandyLamport

MCProc      == {"P1", "P2", "P3"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P3">>, <<"P3", "P1">>}
MCInitBal   == [P1 |-> 0, P2 |-> 1, P3 |-> 0]
MCAmount    == {1}
MCBudget    == [P1 |-> 1, P2 |-> 2, P3 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
