----------------------------- MODULE MCTwoBank -----------------------------
(* The article's two accounts: P1 holds $100, P2 holds $50, and P1 may    *)
(* transfer $30 to P2 (and P2 $30 back) while P1 takes a snapshot.  Every  *)
(* complete snapshot must total $150.                                       *)
EXTENDS ChandyLamport

MCProc      == {"P1", "P2"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P1">>}
MCInitBal   == [P1 |-> 100, P2 |-> 50]
MCAmount    == {30}
MCBudget    == [P1 |-> 2, P2 |-> 1]
MCSnap      == {1}
MCInitiator == <<"P1">>
=============================================================================
