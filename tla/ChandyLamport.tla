---------------------------- MODULE ChandyLamport ----------------------------
(***************************************************************************)
(* The Chandy-Lamport distributed snapshot algorithm:                      *)
(*   K. M. Chandy and L. Lamport, "Distributed Snapshots: Determining      *)
(*   Global States of Distributed Systems", ACM TOCS 3(1), 1985.           *)
(*                                                                         *)
(* Processes joined by reliable FIFO channels run a bank: each holds a     *)
(* balance and may transfer amounts to its neighbours.  Any number of      *)
(* snapshots, each with its own id and initiator, run concurrently with    *)
(* the bank and with each other; markers carry their snapshot id and      *)
(* travel on the same channels as the money.                               *)
(*                                                                         *)
(* Besides the algorithm's variables the spec keeps ghost variables that   *)
(* the algorithm never reads.  They exist only to state the correctness    *)
(* properties: message numbers, the history each process had seen when it  *)
(* recorded, and two "shadow" states that replay the run re-ordered as in  *)
(* the paper's proof of its theorem.  See tla/README.md for a walk through *)
(* the argument.                                                           *)
(***************************************************************************)
EXTENDS Naturals, Integers, Sequences, FiniteSets

CONSTANTS
    Proc,       \* the processes
    Chan,       \* the directed channels: a set of pairs <<p, q>>, p sends to q
    InitBal,    \* [Proc -> Nat]: each process's initial balance
    Amount,     \* the amounts one transfer may carry
    Budget,     \* [Proc -> Nat]: how many transfers each process may send
    Snap,       \* snapshot ids
    Initiator   \* [Snap -> Proc]: the process that initiates each snapshot

In(p)  == {c \in Chan : c[2] = p}   \* p's incoming channels
Out(p) == {c \in Chan : c[1] = p}   \* p's outgoing channels

(* Reach(S, k): the processes reachable from S in at most k hops. *)
RECURSIVE Reach(_, _)
Reach(S, k) ==
    IF k = 0 THEN S
    ELSE Reach(S \cup {c[2] : c \in {d \in Chan : d[1] \in S}}, k - 1)

StronglyConnected == \A p \in Proc : Reach({p}, Cardinality(Proc)) = Proc

ASSUME /\ IsFiniteSet(Proc) /\ Proc # {}
       /\ Chan \subseteq {<<p, q>> : p, q \in Proc}
       /\ \A c \in Chan : c[1] # c[2]          \* no self-loops
       /\ StronglyConnected                    \* the paper's assumption
       /\ InitBal \in [Proc -> Nat]
       /\ Amount \subseteq Nat \ {0} /\ IsFiniteSet(Amount)
       /\ Budget \in [Proc -> Nat]
       /\ Snap \subseteq Nat \ {0} /\ IsFiniteSet(Snap)
       /\ Initiator \in [Snap -> Proc]

-----------------------------------------------------------------------------
(* Messages.  An application message carries an amount and its number on  *)
(* its channel (seq: 1 for the first message sent on the channel, ...);    *)
(* the number is ghost, used only to state the properties.                 *)
AppMsg(a, i) == [kind |-> "app", amt |-> a, seq |-> i]
Marker(s)    == [kind |-> "marker", snap |-> s]

LocalState == [bal : Nat, sent : Nat, rcvd : Nat]
Status     == {"idle", "recording", "done"}   \* a channel's recording status

(* A state of the application alone: every process's local state and the  *)
(* application messages in every channel.  Recorded snapshots and the     *)
(* theorem's shadows have this form (plus ok: has every replayed step been *)
(* enabled?).                                                              *)
Shadow == [ok : BOOLEAN, proc : [Proc -> LocalState], chan : [Chan -> Seq([kind : {"app"}, amt : Amount, seq : Nat])]]

VARIABLES
    proc,      \* [Proc -> LocalState]: balance, transfers sent, transfers received
    chan,      \* [Chan -> Seq(message)]: FIFO channel contents, money and markers
    nSent,     \* ghost [Chan -> Nat]: application messages ever sent on each channel
    got,       \* ghost [Chan -> Seq(Nat)]: numbers of the messages received on each channel, in order
    recorded,  \* [Snap -> SUBSET Proc]: the processes that have recorded their state
    recProc,   \* [Snap -> [Proc -> LocalState]]: recorded local states (meaningful for recorded processes)
    recChan,   \* [Snap -> [Chan -> Status]]: each channel's recording status
    recMsgs,   \* [Snap -> [Chan -> Seq(message)]]: each channel's recorded messages
    cutSent,   \* ghost [Snap -> [Chan -> Nat]]: nSent[c] when c's sender recorded
    cutGot,    \* ghost [Snap -> [Chan -> Seq(Nat)]]: got[c] when c's receiver recorded
    pre,       \* ghost [Snap -> Shadow]: the initial state advanced by the pre-recording steps only
    post       \* ghost [Snap -> Shadow]: the recorded state advanced by the post-recording steps only

vars == <<proc, chan, nSent, got, recorded, recProc, recChan, recMsgs, cutSent, cutGot, pre, post>>

-----------------------------------------------------------------------------
(* Helpers. *)
RECURSIVE SumOver(_, _)
SumOver(f, S) == IF S = {} THEN 0
                 ELSE LET x == CHOOSE x \in S : TRUE IN f[x] + SumOver(f, S \ {x})

RECURSIVE SeqSum(_)
SeqSum(sq) == IF sq = <<>> THEN 0 ELSE Head(sq).amt + SeqSum(Tail(sq))

TotalMoney == SumOver(InitBal, Proc)

(* The sequence sq without its i-th element. *)
RemoveAt(sq, i) == SubSeq(sq, 1, i - 1) \o SubSeq(sq, i + 1, Len(sq))

AppOnly(sq) == SelectSeq(sq, LAMBDA m : m.kind = "app")

InitLocal == [p \in Proc |-> [bal |-> InitBal[p], sent |-> 0, rcvd |-> 0]]
InitApp   == [ok |-> TRUE, proc |-> InitLocal, chan |-> [c \in Chan |-> <<>>]]

(* The application state now, and the one snapshot s recorded. *)
CurrentApp     == [ok |-> TRUE, proc |-> proc, chan |-> [c \in Chan |-> AppOnly(chan[c])]]
RecordedApp(s) == [ok |-> TRUE, proc |-> recProc[s], chan |-> recMsgs[s]]

Initiated(s) == Initiator[s] \in recorded[s]
Complete(s)  == recorded[s] = Proc /\ \A c \in Chan : recChan[s][c] = "done"

(* A message m sent on c was sent before c's sender recorded for s. *)
SentBeforeCut(s, c, m) == c[1] \notin recorded[s] \/ m.seq <= cutSent[s][c]

(* Replaying one application step on a shadow state sh: the step must be  *)
(* enabled there (else ok becomes FALSE) and has the same effect as in    *)
(* the real run.                                                           *)
ShadowSend(sh, c, m) ==
    IF sh.proc[c[1]].sent < Budget[c[1]] /\ sh.proc[c[1]].bal >= m.amt
    THEN [sh EXCEPT !.proc[c[1]].bal = @ - m.amt,
                    !.proc[c[1]].sent = @ + 1,
                    !.chan[c] = Append(@, m)]
    ELSE [sh EXCEPT !.ok = FALSE]

ShadowRecv(sh, c, m) ==
    IF sh.chan[c] # <<>> /\ Head(sh.chan[c]) = m
    THEN [sh EXCEPT !.proc[c[2]].bal = @ + m.amt,
                    !.proc[c[2]].rcvd = @ + 1,
                    !.chan[c] = Tail(@)]
    ELSE [sh EXCEPT !.ok = FALSE]

(* The post shadow of s starts from the recorded state lazily: a process  *)
(* joins it when it records, and a channel's recorded messages are taken   *)
(* from it by the very receives that record them (each must have been sent *)
(* before the cut).  Later messages queue behind them, as ShadowSend does. *)
PostRecv(s, c, m) ==
    IF recChan[s][c] = "recording"
    THEN IF SentBeforeCut(s, c, m)
         THEN [post[s] EXCEPT !.proc[c[2]].bal = @ + m.amt,
                              !.proc[c[2]].rcvd = @ + 1]
         ELSE [post[s] EXCEPT !.ok = FALSE]
    ELSE ShadowRecv(post[s], c, m)

-----------------------------------------------------------------------------
Init ==
    /\ proc     = InitLocal
    /\ chan     = [c \in Chan |-> <<>>]
    /\ nSent    = [c \in Chan |-> 0]
    /\ got      = [c \in Chan |-> <<>>]
    /\ recorded = [s \in Snap |-> {}]
    /\ recProc  = [s \in Snap |-> InitLocal]
    /\ recChan  = [s \in Snap |-> [c \in Chan |-> "idle"]]
    /\ recMsgs  = [s \in Snap |-> [c \in Chan |-> <<>>]]
    /\ cutSent  = [s \in Snap |-> [c \in Chan |-> 0]]
    /\ cutGot   = [s \in Snap |-> [c \in Chan |-> <<>>]]
    /\ pre      = [s \in Snap |-> InitApp]
    /\ post     = [s \in Snap |-> InitApp]

(* SendApp(p, q, a): p transfers amount a to q.  Each send spends one unit *)
(* of p's budget, so every behaviour is finite.                            *)
SendApp(p, q, a) ==
    LET c == <<p, q>>
        m == AppMsg(a, nSent[c] + 1)
    IN  /\ proc[p].sent < Budget[p]
        /\ proc[p].bal >= a
        /\ proc'  = [proc EXCEPT ![p].bal = @ - a, ![p].sent = @ + 1]
        /\ chan'  = [chan EXCEPT ![c] = Append(@, m)]
        /\ nSent' = [nSent EXCEPT ![c] = @ + 1]
        /\ pre'   = [s \in Snap |-> IF p \in recorded[s] THEN pre[s] ELSE ShadowSend(pre[s], c, m)]
        /\ post'  = [s \in Snap |-> IF p \in recorded[s] THEN ShadowSend(post[s], c, m) ELSE post[s]]
        /\ UNCHANGED <<got, recorded, recProc, recChan, recMsgs, cutSent, cutGot>>

(* q takes application message m off position i of channel c = <<p, q>>   *)
(* and applies it.  The algorithm always takes the head (i = 1); other    *)
(* positions exist only for the non-FIFO counter-example.                  *)
Consume(p, q, i) ==
    LET c == <<p, q>>
        m == chan[c][i]
    IN  /\ proc' = [proc EXCEPT ![q].bal = @ + m.amt, ![q].rcvd = @ + 1]
        /\ chan' = [chan EXCEPT ![c] = RemoveAt(@, i)]
        /\ got'  = [got EXCEPT ![c] = Append(@, m.seq)]
        /\ pre'  = [s \in Snap |-> IF q \in recorded[s] THEN pre[s] ELSE ShadowRecv(pre[s], c, m)]
        /\ post' = [s \in Snap |-> IF q \in recorded[s] THEN PostRecv(s, c, m) ELSE post[s]]
        /\ UNCHANGED <<nSent, recorded, recProc, recChan, cutSent, cutGot>>

(* The message joins the recording of c in every snapshot in which c is    *)
(* being recorded: q has recorded and c's marker has not yet arrived.      *)
RecordInFlight(c, m) ==
    recMsgs' = [s \in Snap |-> IF recChan[s][c] = "recording"
                                THEN [recMsgs[s] EXCEPT ![c] = Append(@, m)]
                                ELSE recMsgs[s]]

RecvAppAt(p, q, i) ==
    /\ i \in 1..Len(chan[<<p, q>>])
    /\ chan[<<p, q>>][i].kind = "app"
    /\ Consume(p, q, i)
    /\ RecordInFlight(<<p, q>>, chan[<<p, q>>][i])

(* RecvApp(p, q): q receives the application message at the head of <<p, q>>. *)
RecvApp(p, q) == RecvAppAt(p, q, 1)

(* q records its local state for snapshot s.  Channel closed (if any) is  *)
(* recorded as empty; every other incoming channel starts recording.       *)
RecordState(q, s, closed) ==
    /\ recorded' = [recorded EXCEPT ![s] = @ \cup {q}]
    /\ recProc'  = [recProc EXCEPT ![s][q] = proc[q]]
    /\ recChan'  = [recChan EXCEPT ![s] = [c \in Chan |->
                        IF c = closed THEN "done"
                        ELSE IF c[2] = q THEN "recording"
                        ELSE recChan[s][c]]]
    /\ cutSent'  = [cutSent EXCEPT ![s] = [c \in Chan |->
                        IF c[1] = q THEN nSent[c] ELSE cutSent[s][c]]]
    /\ cutGot'   = [cutGot EXCEPT ![s] = [c \in Chan |->
                        IF c[2] = q THEN got[c] ELSE cutGot[s][c]]]
    /\ post'     = [post EXCEPT ![s].proc[q] = proc[q]]

(* sq with a marker for s appended on every outgoing channel of q. *)
WithMarkers(sq, q, s) == [c \in Chan |-> IF c[1] = q THEN Append(sq[c], Marker(s)) ELSE sq[c]]

(* Initiate(s): the Initiator Rule.  The initiator records its state,     *)
(* sends a marker on every outgoing channel and starts recording every     *)
(* incoming channel.                                                       *)
Initiate(s) ==
    LET p == Initiator[s] IN
    /\ p \notin recorded[s]
    /\ RecordState(p, s, <<p, p>>)        \* <<p, p>> is no channel: none is closed
    /\ chan' = WithMarkers(chan, p, s)
    /\ UNCHANGED <<proc, nSent, got, recMsgs, pre>>

(* RecvMarkerAt(p, q, i): the Receiving Rule for q on channel c = <<p, q>>, *)
(* for the marker at position i (the head, i = 1, in the algorithm).       *)
RecvMarkerAt(p, q, i) ==
    LET c == <<p, q>> IN
    /\ i \in 1..Len(chan[c])
    /\ chan[c][i].kind = "marker"
    /\ LET s    == chan[c][i].snap
           rest == [chan EXCEPT ![c] = RemoveAt(@, i)]
       IN  IF q \notin recorded[s]
           THEN \* Case 1, first marker: record, c is empty, forward markers.
                /\ RecordState(q, s, c)
                /\ chan' = WithMarkers(rest, q, s)
                /\ UNCHANGED <<proc, nSent, got, recMsgs, pre>>
           ELSE \* Case 2: stop recording c; what it recorded is c's state.
                /\ recChan' = [recChan EXCEPT ![s][c] = "done"]
                /\ chan' = rest
                /\ UNCHANGED <<proc, nSent, got, recorded, recProc, recMsgs, cutSent, cutGot, pre, post>>

(* RecvMarker(p, q): q receives the marker at the head of <<p, q>>. *)
RecvMarker(p, q) == RecvMarkerAt(p, q, 1)

Next ==
    \/ \E c \in Chan, a \in Amount : SendApp(c[1], c[2], a)
    \/ \E c \in Chan : RecvApp(c[1], c[2])
    \/ \E s \in Snap : Initiate(s)
    \/ \E c \in Chan : RecvMarker(c[1], c[2])

(* Channels are reliable: a message at the head of a channel is eventually *)
(* received.  Sends and initiations need no fairness.                      *)
Fairness == \A c \in Chan : /\ WF_vars(RecvApp(c[1], c[2]))
                            /\ WF_vars(RecvMarker(c[1], c[2]))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)

TypeOK ==
    /\ proc \in [Proc -> LocalState]
    /\ \A c \in Chan : \A i \in 1..Len(chan[c]) :
           chan[c][i] \in [kind : {"app"}, amt : Amount, seq : Nat \ {0}]
                          \cup [kind : {"marker"}, snap : Snap]
    /\ nSent \in [Chan -> Nat]
    /\ got \in [Chan -> Seq(Nat \ {0})]
    /\ recorded \in [Snap -> SUBSET Proc]
    /\ recProc \in [Snap -> [Proc -> LocalState]]
    /\ recChan \in [Snap -> [Chan -> Status]]
    /\ \A s \in Snap, c \in Chan : \A i \in 1..Len(recMsgs[s][c]) : recMsgs[s][c][i].kind = "app"
    /\ cutSent \in [Snap -> [Chan -> Nat]]
    /\ cutGot \in [Snap -> [Chan -> Seq(Nat \ {0})]]
    /\ pre \in [Snap -> Shadow]
    /\ post \in [Snap -> Shadow]

(* 1. Consistent cut: no orphan message.  Once both ends of c have recorded *)
(* for s, the messages the receiver had consumed when it recorded are a    *)
(* prefix of those the sender had sent when it recorded: nothing was       *)
(* received "before" the cut that was sent "after" it (the article's $180). *)
ConsistentCut ==
    \A s \in Snap, c \in Chan :
        (c[1] \in recorded[s] /\ c[2] \in recorded[s]) =>
            LET k == Len(cutGot[s][c]) IN
            /\ k <= cutSent[s][c]
            /\ cutGot[s][c] = [i \in 1..k |-> i]

(* 2. Exact channel state: once c's recording is done, its recorded        *)
(* messages are exactly those sent before the sender recorded and received *)
(* after the receiver recorded, in order: numbers k+1 .. cutSent.           *)
ExactChannelState ==
    \A s \in Snap, c \in Chan :
        recChan[s][c] = "done" =>
            LET k == Len(cutGot[s][c]) IN
            [j \in 1..Len(recMsgs[s][c]) |-> recMsgs[s][c][j].seq]
                = [j \in 1..(cutSent[s][c] - k) |-> k + j]

(* 3. Conservation: a complete snapshot holds all the money, balances plus *)
(* transfers in flight: $150 in the article, never $180, never $120.        *)
Conservation ==
    \A s \in Snap : Complete(s) =>
        SumOver([p \in Proc |-> recProc[s][p].bal], Proc)
          + SumOver([c \in Chan |-> SeqSum(recMsgs[s][c])], Chan) = TotalMoney

(* 4. The Chandy-Lamport theorem.  Re-order the run: all steps a process   *)
(* took before recording for s, then all steps taken after.  pre[s] replays *)
(* the first part from the initial state, post[s] the second part from the *)
(* recorded state.  Every replayed step must be enabled (ok), the first     *)
(* part must end in the recorded state, and the second in the current one: *)
(* the recorded state is reachable, and the real run goes on from it.      *)
SnapshotReachable ==
    \A s \in Snap : /\ pre[s].ok
                    /\ Complete(s) => pre[s] = RecordedApp(s)

CurrentReachable ==
    \A s \in Snap : /\ post[s].ok
                    /\ Complete(s) => post[s] = CurrentApp

ChandyLamportTheorem == SnapshotReachable /\ CurrentReachable

(* 5. Stable properties.  A predicate is stable if once true it stays true. *)
(* The catalogue: Terminated (every budget spent, no transfer in flight),  *)
(* RcvdAtLeast(p, k) (a monotone counter), and Conserved (all the money is *)
(* in balances and channels: true initially, so stable because invariant). *)
(* If one holds in a complete snapshot it holds now; if it fails there it  *)
(* failed initially.  Conserved is the entry for which the second half can *)
(* fail: no predicate that is false initially can make it.                 *)
Terminated(st) == /\ \A p \in Proc : st.proc[p].sent = Budget[p]
                  /\ \A c \in Chan : st.chan[c] = <<>>

RcvdAtLeast(st, p, k) == st.proc[p].rcvd >= k

Conserved(st) == SumOver([p \in Proc |-> st.proc[p].bal], Proc)
                   + SumOver([c \in Chan |-> SeqSum(st.chan[c])], Chan) = TotalMoney

MaxRcvd == SumOver(Budget, Proc)

StableCatalogue ==
    \A s \in Snap : Complete(s) =>
        /\ Terminated(RecordedApp(s)) => Terminated(CurrentApp)
        /\ ~Terminated(RecordedApp(s)) => ~Terminated(InitApp)
        /\ Conserved(RecordedApp(s)) => Conserved(CurrentApp)
        /\ ~Conserved(RecordedApp(s)) => ~Conserved(InitApp)
        /\ \A p \in Proc, k \in 1..MaxRcvd :
               /\ RcvdAtLeast(RecordedApp(s), p, k) => RcvdAtLeast(CurrentApp, p, k)
               /\ ~RcvdAtLeast(RecordedApp(s), p, k) => ~RcvdAtLeast(InitApp, p, k)

(* 6. Liveness: every initiated snapshot eventually completes everywhere. *)
SnapshotsComplete == \A s \in Snap : Initiated(s) ~> Complete(s)

=============================================================================
