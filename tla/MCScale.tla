-------------------------------- MODULE MCScale -------------------------------
(* The explorer's scale model: MCHuge with P4 starting with two units of  *)
(* money and P5 with a budget of one transfer.  Five processes on a ring  *)
(* P1 -> P2 -> P3 -> P4 -> P5 -> P1, three concurrent snapshots initiated *)
(* by P1, P3 and P5: 137,025,063 distinct states, depth 37, which the Go  *)
(* explorer checks completely in fingerprint mode (markerwave check       *)
(* --fingerprint) in 15 minutes on 2 cores (tla/manifest.json, README).   *)
(* cmd/tlcrun skips it unless asked (-large).                              *)
EXTENDS ChandyLamport

MCProc      == {"P1", "P2", "P3", "P4", "P5"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P3">>, <<"P3", "P4">>, <<"P4", "P5">>,
                <<"P5", "P1">>}
MCInitBal   == [P1 |-> 1, P2 |-> 1, P3 |-> 1, P4 |-> 2, P5 |-> 1]
MCAmount    == {1}
MCBudget    == [P1 |-> 2, P2 |-> 2, P3 |-> 2, P4 |-> 2, P5 |-> 1]
MCSnap      == {1, 2, 3}
MCInitiator == <<"P1", "P3", "P5">>
=============================================================================
