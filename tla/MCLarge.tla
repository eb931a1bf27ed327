------------------------------- MODULE MCLarge -------------------------------
(* The larger model: four processes on a ring P1 -> P2 -> P3 -> P4 -> P1  *)
(* with a chord both ways between P1 and P3, two units of money, and two  *)
(* concurrent snapshots initiated by P1 and P3.                            *)
EXTENDS ChandyLamport

MCProc      == {"P1", "P2", "P3", "P4"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P3">>, <<"P3", "P4">>, <<"P4", "P1">>,
                <<"P1", "P3">>, <<"P3", "P1">>}
MCInitBal   == [P1 |-> 1, P2 |-> 0, P3 |-> 1, P4 |-> 0]
MCAmount    == {1}
MCBudget    == [P1 |-> 1, P2 |-> 1, P3 |-> 1, P4 |-> 1]
MCSnap      == {1, 2}
MCInitiator == <<"P1", "P3">>
=============================================================================
