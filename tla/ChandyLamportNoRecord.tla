------------------------ MODULE ChandyLamportNoRecord ------------------------
(* Counter-example: a receiving rule that records no channel state.  Every *)
(* channel is taken as empty, so a transfer in flight at the cut is in no  *)
(* recorded balance and in no recorded channel: the article's vanished    *)
(* $30 ($70 + $50 = $120).  TLC reports Conservation.                      *)
EXTENDS ChandyLamport

(* Like RecvApp, but the message never joins a recording. *)
RecvAppNoRecord(p, q) ==
    /\ chan[<<p, q>>] # <<>>
    /\ Head(chan[<<p, q>>]).kind = "app"
    /\ Consume(p, q, 1)
    /\ UNCHANGED recMsgs

NextNoRecord ==
    \/ \E c \in Chan, a \in Amount : SendApp(c[1], c[2], a)
    \/ \E c \in Chan : RecvAppNoRecord(c[1], c[2])
    \/ \E s \in Snap : Initiate(s)
    \/ \E c \in Chan : RecvMarker(c[1], c[2])

SpecNoRecord == Init /\ [][NextNoRecord]_vars
=============================================================================
