------------------------- MODULE ChandyLamportFaults -------------------------
(***************************************************************************)
(* The algorithm of ChandyLamport.tla with failures and rollback recovery. *)
(*                                                                         *)
(* A process may crash (crash-stop): it takes no step any more, and the    *)
(* messages sent to it stay in their channels.  A failure detector         *)
(* eventually suspects every crashed process (Detect, under weak          *)
(* fairness) and, in a model that allows it, may suspect a live one        *)
(* (FalseSuspect).  A snapshot that waits for a suspected process (for its *)
(* part, or for a marker it sent) is aborted, the process as the cause.    *)
(* Once no snapshot is pending, the whole system may roll back: every      *)
(* process restarts in its recorded state of the latest complete snapshot  *)
(* of the incarnation (or, if none completed, in the state the incarnation *)
(* started from), every channel holds that snapshot's recorded messages,   *)
(* which are delivered first, and a new incarnation begins, with its own   *)
(* snapshots.  MaxCrash and MaxRecover bound every behaviour.              *)
(*                                                                         *)
(* Ghost variables: base is the application state the incarnation started  *)
(* from, with ok TRUE iff it is reachable from the initial state (the      *)
(* rollback theorem, tla/README.md); restoredFrom says what it was         *)
(* restored from.  Message numbers (nSent, got, seq) count per             *)
(* incarnation: a restart numbers the replayed messages 1..n.              *)
(***************************************************************************)
EXTENDS ChandyLamport

CONSTANTS
    MaxCrash,        \* how many crashes a behaviour may have, in all
    MaxRecover,      \* how many recoveries (incarnations after the first)
    FalseSuspicion   \* BOOLEAN: may the failure detector suspect a live process?

ASSUME MaxCrash \in Nat /\ MaxRecover \in Nat /\ FalseSuspicion \in BOOLEAN

VARIABLES
    alive,        \* SUBSET Proc: the processes that have not crashed
    suspected,    \* SUBSET Proc: the processes the failure detector suspects
    abortedBy,    \* [Snap -> SUBSET Proc]: {} or {q}, the snapshot aborted because q is suspected
    crashes,      \* crashes so far, at most MaxCrash
    inc,          \* the incarnation: 0, then one more at each recovery
    base,         \* ghost Shadow: the application state the incarnation started from
    restoredFrom  \* ghost: "init", or what the incarnation was restored from

fvars   == <<alive, suspected, abortedBy, crashes, inc, base, restoredFrom>>
allVars == <<vars, fvars>>

Aborted(s) == abortedBy[s] # {}
Pending(s) == Initiated(s) /\ ~Complete(s) /\ ~Aborted(s)

(* s waits for q until q finished its part and q's markers all arrived.   *)
Finished(s, q) == q \in recorded[s] /\ \A c \in In(q) : recChan[s][c] = "done"
WaitsFor(s, q) == ~(Finished(s, q) /\ \A c \in Out(q) : recChan[s][c] = "done")
InitF ==
    /\ Init
    /\ alive        = Proc
    /\ suspected    = {}
    /\ abortedBy    = [s \in Snap |-> {}]
    /\ crashes      = 0
    /\ inc          = 0
    /\ base         = InitApp
    /\ restoredFrom = "init"

-----------------------------------------------------------------------------
(* The algorithm's actions, taken by live processes only.  A live process  *)
(* sends no transfer to a suspected one.                                   *)
SendAppF(p, q, a) ==
    /\ p \in alive
    /\ q \notin suspected
    /\ SendApp(p, q, a)
    /\ UNCHANGED fvars

RecvAppF(p, q) ==
    /\ q \in alive
    /\ RecvApp(p, q)
    /\ UNCHANGED fvars

InitiateF(s) ==
    /\ Initiator[s] \in alive
    /\ Initiate(s)
    /\ UNCHANGED fvars

(* The Receiving Rule, for a marker of a snapshot that is not aborted. *)
RecvMarkerF(p, q) ==
    /\ q \in alive
    /\ chan[<<p, q>>] # <<>>
    /\ Head(chan[<<p, q>>]).kind = "marker"
    /\ ~Aborted(Head(chan[<<p, q>>]).snap)
    /\ RecvMarker(p, q)
    /\ UNCHANGED fvars

(* A marker of an aborted snapshot is dropped. *)
DropMarker(p, q) ==
    /\ q \in alive
    /\ chan[<<p, q>>] # <<>>
    /\ Head(chan[<<p, q>>]).kind = "marker"
    /\ Aborted(Head(chan[<<p, q>>]).snap)
    /\ chan' = [chan EXCEPT ![<<p, q>>] = Tail(@)]
    /\ UNCHANGED <<proc, nSent, got, recorded, recProc, recChan, recMsgs, cutSent, cutGot, pre, post>>
    /\ UNCHANGED fvars

-----------------------------------------------------------------------------
(* Failures. *)
Crash(p) ==
    /\ p \in alive
    /\ crashes < MaxCrash
    /\ alive'   = alive \ {p}
    /\ crashes' = crashes + 1
    /\ UNCHANGED vars
    /\ UNCHANGED <<suspected, abortedBy, inc, base, restoredFrom>>

(* The failure detector suspects a crashed process (completeness). *)
Detect(p) ==
    /\ p \notin alive
    /\ p \notin suspected
    /\ suspected' = suspected \cup {p}
    /\ UNCHANGED vars
    /\ UNCHANGED <<alive, abortedBy, crashes, inc, base, restoredFrom>>

(* ... or, when the model allows it, a live one (no accuracy). *)
FalseSuspect(p) ==
    /\ FalseSuspicion
    /\ p \in alive
    /\ p \notin suspected
    /\ suspected' = suspected \cup {p}
    /\ UNCHANGED vars
    /\ UNCHANGED <<alive, abortedBy, crashes, inc, base, restoredFrom>>

(* Abort(s, q): s waits for the suspected q, for its part or a marker it  *)
(* sent: a crash may lose what q sent, and a survivor cannot tell a lost   *)
(* marker from a slow one.  The cause is recorded and s's markers are      *)
(* dropped from now on (DropMarker), so s never completes.  Channels that  *)
(* were recording go on recording (an implementation frees them), so the  *)
(* theorem's post shadow of s stays defined, as PostRecv reads recChan.    *)
Abort(s, q) ==
    /\ Pending(s)
    /\ q \in suspected
    /\ WaitsFor(s, q)
    /\ abortedBy' = [abortedBy EXCEPT ![s] = {q}]
    /\ UNCHANGED vars
    /\ UNCHANGED <<alive, suspected, crashes, inc, base, restoredFrom>>

-----------------------------------------------------------------------------
(* Rollback recovery. *)

(* sq with its messages numbered 1..Len(sq), for the new incarnation. *)
Renumber(sq) == [i \in 1..Len(sq) |-> [sq[i] EXCEPT !.seq = i]]

(* The whole system restarts in application state st: every process live, *)
(* unsuspected, in its state in st; every channel holds st's messages and *)
(* nothing else (markers of the old incarnation are gone); a new          *)
(* incarnation with no snapshot taken yet.  base' is st with ok = ok,     *)
(* and every snapshot's pre-recording shadow starts from it.              *)
Restart(st, ok, from) ==
    LET b == [ok |-> ok, proc |-> st.proc, chan |-> [c \in Chan |-> Renumber(st.chan[c])]] IN
    /\ proc'         = b.proc
    /\ chan'         = b.chan
    /\ nSent'        = [c \in Chan |-> Len(b.chan[c])]
    /\ got'          = [c \in Chan |-> <<>>]
    /\ recorded'     = [s \in Snap |-> {}]
    /\ recProc'      = [s \in Snap |-> InitLocal]
    /\ recChan'      = [s \in Snap |-> [c \in Chan |-> "idle"]]
    /\ recMsgs'      = [s \in Snap |-> [c \in Chan |-> <<>>]]
    /\ cutSent'      = [s \in Snap |-> [c \in Chan |-> 0]]
    /\ cutGot'       = [s \in Snap |-> [c \in Chan |-> <<>>]]
    /\ pre'          = [s \in Snap |-> b]
    /\ post'         = [s \in Snap |-> InitApp]
    /\ alive'        = Proc
    /\ suspected'    = {}
    /\ abortedBy'    = [s \in Snap |-> {}]
    /\ inc'          = inc + 1
    /\ base'         = b
    /\ restoredFrom' = from
    /\ UNCHANGED crashes

(* Restart from snapshot s.  The restored state is reachable from the     *)
(* initial state iff base was and pre[s], the incarnation's steps before  *)
(* the cut replayed from base, ends exactly in s's recorded state.         *)
RestoreFrom(s) ==
    Restart(RecordedApp(s), pre[s] = RecordedApp(s),
            IF Aborted(s) THEN "aborted" ELSE IF Complete(s) THEN "complete" ELSE "incomplete")

(* The latest complete snapshot of the incarnation (the highest id), 0 if none. *)
LatestComplete ==
    LET done == {s \in Snap : Complete(s)} IN
    IF done = {} THEN 0 ELSE CHOOSE s \in done : \A t \in done : t <= s

(* Recover: once some process is suspected and no snapshot is pending,     *)
(* roll back to the latest complete snapshot, or to the incarnation's own *)
(* start if none completed.                                                *)
Recover ==
    /\ suspected # {}
    /\ inc < MaxRecover
    /\ \A s \in Snap : ~Pending(s)
    /\ IF LatestComplete = 0 THEN Restart(base, base.ok, restoredFrom)
                             ELSE RestoreFrom(LatestComplete)

(* Counter-example: roll back to any initiated snapshot of the            *)
(* incarnation, whether complete, aborted or still pending.                *)
RecoverAny(s) ==
    /\ suspected # {}
    /\ inc < MaxRecover
    /\ Initiated(s)
    /\ RestoreFrom(s)

-----------------------------------------------------------------------------
Common ==
    \/ \E c \in Chan, a \in Amount : SendAppF(c[1], c[2], a)
    \/ \E c \in Chan : RecvAppF(c[1], c[2])
    \/ \E s \in Snap : InitiateF(s)
    \/ \E c \in Chan : RecvMarkerF(c[1], c[2])
    \/ \E c \in Chan : DropMarker(c[1], c[2])
    \/ \E p \in Proc : Crash(p)

Detector ==
    \/ \E p \in Proc : Detect(p)
    \/ \E p \in Proc : FalseSuspect(p)
    \/ \E s \in Snap, q \in Proc : Abort(s, q)

NextFaults     == Common \/ Detector \/ Recover
NextNoDetector == Common                      \* nothing is ever suspected
NextRecoverAny == Common \/ Detector \/ \E s \in Snap : RecoverAny(s)

(* Channels are reliable towards live processes, the failure detector      *)
(* eventually suspects every crashed process, and a snapshot that cannot   *)
(* complete is eventually aborted.  Sends, initiations, crashes, false    *)
(* suspicions and recoveries need no fairness.                             *)
FairReceive == \A c \in Chan : /\ WF_allVars(RecvAppF(c[1], c[2]))
                               /\ WF_allVars(RecvMarkerF(c[1], c[2]))
                               /\ WF_allVars(DropMarker(c[1], c[2]))
FairAbort   == \A s \in Snap, q \in Proc : WF_allVars(Abort(s, q))
FairDetect  == \A p \in Proc : WF_allVars(Detect(p))

SpecFaults     == InitF /\ [][NextFaults]_allVars /\ FairReceive /\ FairDetect /\ FairAbort
SpecNoDetector == InitF /\ [][NextNoDetector]_allVars /\ FairReceive /\ FairAbort
SpecRecoverAny == InitF /\ [][NextRecoverAny]_allVars

-----------------------------------------------------------------------------
(***************************************************************************)
(* Properties.  The invariants ConsistentCut, ExactChannelState,           *)
(* Conservation and StableCatalogue of ChandyLamport.tla keep their        *)
(* meaning: each is about the snapshots of the incarnation.  The theorem   *)
(* holds of every snapshot that is not aborted (TheoremUnlessAborted),     *)
(* with the pre shadows starting from base: once a snapshot is aborted its *)
(* markers are dropped, so a message sent after a cut may be received     *)
(* before the receiver records, and its shadows mean nothing.              *)
(***************************************************************************)
FaultTypeOK ==
    /\ TypeOK
    /\ alive \subseteq Proc
    /\ suspected \subseteq Proc
    /\ abortedBy \in [Snap -> SUBSET Proc]
    /\ \A s \in Snap : Cardinality(abortedBy[s]) <= 1
    /\ crashes \in 0..MaxCrash
    /\ inc \in 0..MaxRecover
    /\ base \in Shadow
    /\ restoredFrom \in {"init", "complete", "aborted", "incomplete"}

(* Money is conserved across crashes and recoveries: balances (crashed     *)
(* processes' included) plus transfers in flight are the initial total.     *)
MoneyConserved == Conserved(CurrentApp)

(* No transfer is applied twice or lost: on every channel, the numbers     *)
(* received and those still in flight are exactly 1..nSent, in order.       *)
ExactlyOnce ==
    \A c \in Chan :
        LET inFlight == AppOnly(chan[c]) IN
        got[c] \o [i \in 1..Len(inFlight) |-> inFlight[i].seq] = [i \in 1..nSent[c] |-> i]

(* ChandyLamportTheorem (SnapshotReachable /\ CurrentReachable) for every *)
(* snapshot that is not aborted.                                           *)
TheoremUnlessAborted ==
    \A s \in Snap : ~Aborted(s) =>
        /\ pre[s].ok
        /\ post[s].ok
        /\ Complete(s) => pre[s] = RecordedApp(s) /\ post[s] = CurrentApp

(* An aborted snapshot never completes, and its cause is suspected. *)
AbortSound == \A s \in Snap : Aborted(s) => ~Complete(s) /\ abortedBy[s] \subseteq suspected

(* Every incarnation was restored from a complete snapshot, never from an  *)
(* aborted or incomplete one.                                              *)
RecoveredFromComplete == restoredFrom \in {"init", "complete"}

(* The rollback theorem: the state every incarnation started from is       *)
(* reachable from the initial state.                                       *)
RecoveryReachable == base.ok

(* Liveness: every initiated snapshot eventually completes or is aborted. *)
SnapshotsEnd == \A s \in Snap : Initiated(s) ~> (Complete(s) \/ Aborted(s))
=============================================================================
