---------------------------- MODULE MCFaultsTwoSnap ---------------------------
(* The article's two accounts with two snapshots, P1 and P2 initiating,  *)
(* two crashes and two recoveries: each recovery restores the latest      *)
(* complete snapshot of its incarnation (or the incarnation's own start), *)
(* and money is conserved across both.                                    *)
EXTENDS ChandyLamportFaults

MCProc           == {"P1", "P2"}
MCChan           == {<<"P1", "P2">>, <<"P2", "P1">>}
MCInitBal        == [P1 |-> 100, P2 |-> 50]
MCAmount         == {30}
MCBudget         == [P1 |-> 1, P2 |-> 1]
MCSnap           == {1, 2}
MCInitiator      == <<"P1", "P2">>
MCMaxCrash       == 2
MCMaxRecover     == 2
MCFalseSuspicion == FALSE
=============================================================================
