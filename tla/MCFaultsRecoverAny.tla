-------------------------- MODULE MCFaultsRecoverAny --------------------------
(* Counter-example: recovery from any initiated snapshot, aborted or      *)
(* incomplete too.  The restored balances and channels do not hold all    *)
(* the money.  TLC must report MoneyConserved.                            *)
EXTENDS ChandyLamportFaults

MCProc           == {"P1", "P2"}
MCChan           == {<<"P1", "P2">>, <<"P2", "P1">>}
MCInitBal        == [P1 |-> 100, P2 |-> 50]
MCAmount         == {30}
MCBudget         == [P1 |-> 1, P2 |-> 1]
MCSnap           == {1}
MCInitiator      == <<"P1">>
MCMaxCrash       == 1
MCMaxRecover     == 1
MCFalseSuspicion == FALSE
=============================================================================
