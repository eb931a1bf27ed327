---------------------------- MODULE MCFaultsTwoBank ---------------------------
(* The article's two accounts with one crash and one recovery: every   *)
(* complete snapshot still totals $150, a snapshot the crash interrupts   *)
(* is aborted, and the rollback restores a state reachable from the start. *)
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
