---------------------------- MODULE MCConcurrent ----------------------------
(* Three processes, fully connected, two snapshots running at once, one   *)
(* initiated by P1 and one by P3.  Markers of both share the channels.     *)
EXTENDS ChandyLamport

MCProc      == {"P1", "P2", "P3"}
MCChan      == {<<"P1", "P2">>, <<"P1", "P3">>, <<"P2", "P1">>,
                <<"P2", "P3">>, <<"P3", "P1">>, <<"P3", "P2">>}
MCInitBal   == [P1 |-> 1, P2 |-> 0, P3 |-> 0]
MCAmount    == {1}
MCBudget    == [P1 |-> 1, P2 |-> 1, P3 |-> 0]
MCSnap      == {1, 2}
MCInitiator == <<"P1", "P3">>
=============================================================================
