-------------------------------- MODULE MCHuge --------------------------------
(* The large model, for checkers at scale: five processes on a ring       *)
(* P1 -> P2 -> P3 -> P4 -> P5 -> P1, one unit of money each, a budget of  *)
(* two transfers each, and three concurrent snapshots initiated by P1, P3 *)
(* and P5. Over 1.6 x 10^8 distinct states: the Go explorer had found     *)
(* 163,967,198 when it was stopped at depth 29, its levels still growing  *)
(* (tla/manifest.json records how far each checker got). cmd/tlcrun      *)
(* skips it unless asked (-large); the Go explorer checks it in           *)
(* fingerprint mode (markerwave check --fingerprint).                     *)
EXTENDS ChandyLamport

MCProc      == {"P1", "P2", "P3", "P4", "P5"}
MCChan      == {<<"P1", "P2">>, <<"P2", "P3">>, <<"P3", "P4">>, <<"P4", "P5">>,
                <<"P5", "P1">>}
MCInitBal   == [P1 |-> 1, P2 |-> 1, P3 |-> 1, P4 |-> 1, P5 |-> 1]
MCAmount    == {1}
MCBudget    == [P1 |-> 2, P2 |-> 2, P3 |-> 2, P4 |-> 2, P5 |-> 2]
MCSnap      == {1, 2, 3}
MCInitiator == <<"P1", "P3", "P5">>
=============================================================================
