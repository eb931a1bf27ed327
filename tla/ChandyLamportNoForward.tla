------------------------ MODULE ChandyLamportNoForward ------------------------
(* Counter-example: a process records its state on its first marker but    *)
(* forwards no markers.  Processes further on never hear of the snapshot, *)
(* and channels into the initiator never see their closing marker: the    *)
(* snapshot never completes.  TLC reports SnapshotsComplete (liveness).    *)
EXTENDS ChandyLamport

(* Like RecvMarker, but case 1 sends no markers. *)
RecvMarkerNoForward(p, q) ==
    LET c == <<p, q>> IN
    /\ chan[c] # <<>>
    /\ Head(chan[c]).kind = "marker"
    /\ LET s == Head(chan[c]).snap IN
       IF q \notin recorded[s]
       THEN /\ RecordState(q, s, c)
            /\ chan' = [chan EXCEPT ![c] = Tail(@)]
            /\ UNCHANGED <<proc, nSent, got, recMsgs, pre>>
       ELSE /\ recChan' = [recChan EXCEPT ![s][c] = "done"]
            /\ chan' = [chan EXCEPT ![c] = Tail(@)]
            /\ UNCHANGED <<proc, nSent, got, recorded, recProc, recMsgs, cutSent, cutGot, pre, post>>

NextNoForward ==
    \/ \E c \in Chan, a \in Amount : SendApp(c[1], c[2], a)
    \/ \E c \in Chan : RecvApp(c[1], c[2])
    \/ \E s \in Snap : Initiate(s)
    \/ \E c \in Chan : RecvMarkerNoForward(c[1], c[2])

FairnessNoForward ==
    \A c \in Chan : /\ WF_vars(RecvApp(c[1], c[2]))
                    /\ WF_vars(RecvMarkerNoForward(c[1], c[2]))

SpecNoForward == Init /\ [][NextNoForward]_vars /\ FairnessNoForward
=============================================================================
