-------------------------- MODULE MCFaultsNoDetector --------------------------
(* Counter-example: no failure detector.  A crash leaves the snapshot     *)
(* pending forever, since nothing suspects the crashed process and so     *)
(* nothing aborts.  TLC must report SnapshotsEnd (liveness).              *)
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
