------------------------- MODULE ChandyLamportNonFIFO -------------------------
(* Counter-example: channels that are not FIFO.  A process may receive any *)
(* queued message, application message or marker, not only the head.  A    *)
(* transfer sent after the sender recorded can then overtake the marker    *)
(* and be received before the receiver records: an orphan message, the     *)
(* article's money created out of thin air.  TLC reports ConsistentCut.    *)
EXTENDS ChandyLamport

NextNonFIFO ==
    \/ \E c \in Chan, a \in Amount : SendApp(c[1], c[2], a)
    \/ \E c \in Chan : \E i \in 1..Len(chan[c]) : RecvAppAt(c[1], c[2], i)
    \/ \E s \in Snap : Initiate(s)
    \/ \E c \in Chan : \E i \in 1..Len(chan[c]) : RecvMarkerAt(c[1], c[2], i)

SpecNonFIFO == Init /\ [][NextNonFIFO]_vars
=============================================================================
