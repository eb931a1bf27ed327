-------------------------- MODULE MCFaultsRecoverAnyReach --------------------------
(* Counter-example: recovery from any initiated snapshot, checking only   *)
(* the rollback theorem.  The restored state is not the end of the        *)
(* incarnation's pre-recording steps replayed from its start: it is not   *)
(* reachable.  TLC must report RecoveryReachable.                          *)
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
