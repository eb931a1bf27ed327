-------------------------- MODULE MCFaultsRing --------------------------
(* The article's token ring with one crash, one recovery and a failure    *)
(* detector that may also suspect a live process: a false suspicion      *)
(* aborts a snapshot that could have completed, which is safe.            *)
EXTENDS ChandyLamportFaults

MCProc           == {"P1", "P2", "P3"}
MCChan           == {<<"P1", "P2">>, <<"P2", "P3">>, <<"P3", "P1">>}
MCInitBal        == [P1 |-> 0, P2 |-> 1, P3 |-> 0]
MCAmount         == {1}
MCBudget         == [P1 |-> 1, P2 |-> 1, P3 |-> 1]
MCSnap           == {1}
MCInitiator      == <<"P1">>
MCMaxCrash       == 1
MCMaxRecover     == 1
MCFalseSuspicion == TRUE
=============================================================================
