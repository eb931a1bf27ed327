------------------------- MODULE ChandyLamportLossy -------------------------
(* Counter-example: a lossy channel without retransmission.  The network  *)
(* may lose the message at the head of any channel, a transfer or a       *)
(* marker.  A lost marker leaves its snapshot incomplete forever (the     *)
(* article's lost marker: TLC reports SnapshotsComplete), and a transfer  *)
(* lost while in flight at the cut is in no recorded balance and in no    *)
(* recorded channel (money vanishes: TLC reports Conservation).            *)
EXTENDS ChandyLamport

(* Lose(p, q): the message at the head of <<p, q>> is lost. *)
Lose(p, q) ==
    /\ chan[<<p, q>>] # <<>>
    /\ chan' = [chan EXCEPT ![<<p, q>>] = Tail(@)]
    /\ UNCHANGED <<proc, nSent, got, recorded, recProc, recChan, recMsgs, cutSent, cutGot, pre, post>>

NextLossy == Next \/ \E c \in Chan : Lose(c[1], c[2])

(* The same fairness as Spec: a message that is not lost is received. *)
SpecLossy == Init /\ [][NextLossy]_vars /\ Fairness
=============================================================================
