-------------------------- MODULE BarrierSnapshots --------------------------
(***************************************************************************)
(* Barrier snapshots of a dataflow graph:                                  *)
(*   P. Carbone, G. Fora, S. Ewen, S. Haridi, K. Tzoumas, "Lightweight     *)
(*   Asynchronous Snapshots for Distributed Dataflows", arXiv:1506.08603, *)
(*   2015 (ABS), and the unaligned checkpoints that followed it.           *)
(* It is the Chandy-Lamport marker wave (ChandyLamport.tla) specialised to *)
(* a dataflow: the markers are barriers, injected at the sources and      *)
(* flowing with the records.                                               *)
(*                                                                         *)
(* Sources emit numbered records; operators take a record off one input,  *)
(* count it (their state) and route it to one output; the one sink counts *)
(* each record it receives (its output).  Each edge is a FIFO queue: the   *)
(* sender's output buffer and the receiver's input buffer joined, bounded *)
(* by Cap records so that a full buffer stops its sender (backpressure).  *)
(* Back-edges (Back) close cycles: a record goes round a cycle Iter times *)
(* before leaving it, and a back-edge is unbounded (the feedback queue of *)
(* an iteration), so that a cycle never deadlocks on full buffers.        *)
(*                                                                         *)
(* One snapshot: every source injects a barrier once.  Mode picks the     *)
(* protocol:                                                               *)
(*   "aligned"   (ABS): an operator blocks each input whose barrier has   *)
(*               arrived until every input that is not a back-edge has    *)
(*               delivered its barrier, then records its state and        *)
(*               appends the barrier to every output.  Records arriving   *)
(*               on a back-edge between that moment and the back-edge's   *)
(*               barrier are logged: the back-edge's channel state (the   *)
(*               paper's cyclic variant).  On a DAG nothing is logged.    *)
(*   "unaligned": on its first barrier an operator records its state at   *)
(*               once, its barrier overtakes everything queued on each    *)
(*               output (recorded as that edge's channel state), and the  *)
(*               records it takes from each other input before that       *)
(*               input's barrier are recorded as channel state: the       *)
(*               Chandy-Lamport receiving rule again.                      *)
(*                                                                         *)
(* Restore models a failure after the snapshot completed: the whole graph *)
(* restarts from the recorded state and runs on.  Ghost variables, which  *)
(* the protocols never read, state the properties as in ChandyLamport.tla.*)
(* SpecNoBlock, SpecNoLog, SpecNoPersist, SpecAlignAll break a rule each.*)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Src,     \* the sources
    Op,      \* the operators
    Snk,     \* the sink (one node)
    Edge,    \* the edges: pairs <<m, n>>, m sends to n
    Back,    \* the back-edges, closing cycles: a subset of Edge
    Budget,  \* [Src -> Nat]: how many records each source emits
    Cap,     \* the capacity of a buffer (of an edge that is not a back-edge)
    Iter,    \* how many times a record goes round a cycle
    Mode     \* "aligned" or "unaligned"

Node    == Src \cup Op \cup {Snk}
NonSrc  == Op \cup {Snk}                      \* the nodes with a state to count
In(n)   == {e \in Edge : e[2] = n}
Out(n)  == {e \in Edge : e[1] = n}
InF(n)  == In(n) \ Back                       \* the inputs aligned on
FwdOut(n)  == CHOOSE e \in Out(n) : e \notin Back
BackOut(n) == Out(n) \cap Back

ASSUME /\ IsFiniteSet(Src) /\ IsFiniteSet(Op) /\ Src \cap Op = {}
       /\ Snk \notin Src \cup Op
       /\ Edge \subseteq Node \X Node /\ \A e \in Edge : e[1] # e[2]
       /\ Back \subseteq Edge
       /\ \A s \in Src : In(s) = {} /\ Cardinality(Out(s)) = 1 /\ Out(s) \cap Back = {}
       /\ \A n \in Op : Cardinality(Out(n) \ Back) = 1 /\ Cardinality(BackOut(n)) <= 1
                        /\ InF(n) # {}
       /\ Out(Snk) = {} /\ InF(Snk) # {}
       /\ Budget \in [Src -> Nat] /\ Cap \in Nat \ {0} /\ Iter \in Nat
       /\ Mode \in {"aligned", "unaligned"}

-----------------------------------------------------------------------------
(* A record: its source, its number there, how many times it went round a *)
(* cycle, and (ghost) its number on the edge it travels: eseq = k for the  *)
(* k-th record sent on that edge.  A barrier carries nothing: there is one *)
(* snapshot.                                                               *)
Rec(s, i, h, k) == [kind |-> "rec", src |-> s, i |-> i, hops |-> h, eseq |-> k]
Barrier         == [kind |-> "barrier"]

Key == UNION {{<<s, i>> : i \in 1..Budget[s]} : s \in Src}   \* a record's identity
Status == {"idle", "recording", "done"}              \* an edge's recording status

(* The edge an operator sends record r on: round the cycle again while r *)
(* has gone round fewer than Iter times, else forward.                    *)
Route(n, r) == IF BackOut(n) # {} /\ r.hops < Iter
               THEN CHOOSE e \in BackOut(n) : TRUE
               ELSE FwdOut(n)

(* Record r as sent on edge e, the k-th record on e. *)
Fwd(r, e, k) == [r EXCEPT !.hops = IF e \in Back THEN @ + 1 ELSE @, !.eseq = k]

VARIABLES
    emitted,   \* [Src -> Nat]: records each source has emitted
    q,         \* [Edge -> Seq(item)]: each edge's queue of records and barriers
    cnt,       \* [NonSrc -> Nat]: records each operator (and the sink) has processed
    out,       \* [Key -> Nat]: the sink's output, how many times it received each record
    bar,       \* [NonSrc -> SUBSET Edge]: the inputs whose barrier has arrived
    recorded,  \* SUBSET Node: the nodes that have recorded their state
    recOff,    \* [Src -> Nat]: recorded source offsets
    recCnt,    \* [NonSrc -> Nat]: recorded operator states
    recOut,    \* [Key -> Nat]: the sink's recorded output
    recChan,   \* [Edge -> Status]: each edge's recording status
    recQ,      \* [Edge -> Seq(record)]: each edge's recorded channel state
    nSent,     \* ghost [Edge -> Nat]: records ever sent on each edge
    nRcvd,     \* ghost [Edge -> Nat]: records ever taken off each edge
    cutSent,   \* ghost [Edge -> Nat]: nSent[e] when e's sender recorded
    cutRcvd,   \* ghost [Edge -> Nat]: nRcvd[e] when e's receiver recorded
    pre,       \* ghost: the initial state advanced by the pre-recording steps only
    restored   \* has the graph been restored from the snapshot?

vars == <<emitted, q, cnt, out, bar, recorded, recOff, recCnt, recOut, recChan,
          recQ, nSent, nRcvd, cutSent, cutRcvd, pre, restored>>

-----------------------------------------------------------------------------
(* The application state (what a snapshot records and a restore puts    *)
(* back) of the initial state, and of the recorded one.  ok: has every   *)
(* step replayed on a shadow of this form been enabled there?             *)
InitApp == [ok |-> TRUE, emitted |-> [s \in Src |-> 0], cnt |-> [n \in NonSrc |-> 0],
            out |-> [k \in Key |-> 0], q |-> [e \in Edge |-> <<>>]]
RecordedApp == [ok |-> TRUE, emitted |-> recOff, cnt |-> recCnt, out |-> recOut, q |-> recQ]

Complete   == recorded = Node /\ \A e \in Edge : recChan[e] = "done"
Injected   == Src \cap recorded # {}
Terminated == /\ \A s \in Src : emitted[s] = Budget[s]
              /\ \A e \in Edge : q[e] = <<>>

(* Room on edge e for one more item: backpressure.  (Written with IF, not *)
(* \/: TLC would take each true disjunct of an action's conjunct as its  *)
(* own branch and count the successor twice.)                             *)
Room(e) == IF e \in Back THEN TRUE ELSE Len(q[e]) < Cap

(* Replaying one step on a shadow sh, as in ChandyLamport.tla: the step   *)
(* must be enabled in sh (the buffers' bound aside: see tla/README.md),    *)
(* else ok becomes FALSE; it has the same effect as in the real run.      *)
ShadowEmit(sh, s, e, r) ==
    IF sh.emitted[s] < Budget[s]
    THEN [sh EXCEPT !.emitted[s] = @ + 1, !.q[e] = Append(@, r)]
    ELSE [sh EXCEPT !.ok = FALSE]

ShadowProcess(sh, e, r, t, r2) ==
    IF sh.q[e] # <<>> /\ Head(sh.q[e]) = r
    THEN IF e[2] = Snk
         THEN [sh EXCEPT !.q[e] = Tail(@), !.cnt[e[2]] = @ + 1, !.out[<<r.src, r.i>>] = @ + 1]
         ELSE [sh EXCEPT !.q[e] = Tail(@), !.cnt[e[2]] = @ + 1, !.q[t] = Append(@, r2)]
    ELSE [sh EXCEPT !.ok = FALSE]

-----------------------------------------------------------------------------
Init ==
    /\ emitted  = [s \in Src |-> 0]
    /\ q        = [e \in Edge |-> <<>>]
    /\ cnt      = [n \in NonSrc |-> 0]
    /\ out      = [k \in Key |-> 0]
    /\ bar      = [n \in NonSrc |-> {}]
    /\ recorded = {}
    /\ recOff   = [s \in Src |-> 0]
    /\ recCnt   = [n \in NonSrc |-> 0]
    /\ recOut   = [k \in Key |-> 0]
    /\ recChan  = [e \in Edge |-> "idle"]
    /\ recQ     = [e \in Edge |-> <<>>]
    /\ nSent    = [e \in Edge |-> 0]
    /\ nRcvd    = [e \in Edge |-> 0]
    /\ cutSent  = [e \in Edge |-> 0]
    /\ cutRcvd  = [e \in Edge |-> 0]
    /\ pre      = InitApp
    /\ restored = FALSE

(* Emit(s): source s emits its next record, if its buffer has room. *)
Emit(s) ==
    LET e == FwdOut(s)
        r == Rec(s, emitted[s] + 1, 0, nSent[e] + 1)
    IN  /\ emitted[s] < Budget[s]
        /\ Room(e)
        /\ emitted' = [emitted EXCEPT ![s] = @ + 1]
        /\ q'       = [q EXCEPT ![e] = Append(@, r)]
        /\ nSent'   = [nSent EXCEPT ![e] = @ + 1]
        /\ pre'     = IF s \in recorded THEN pre ELSE ShadowEmit(pre, s, e, r)
        /\ UNCHANGED <<cnt, out, bar, recorded, recOff, recCnt, recOut, recChan,
                       recQ, nRcvd, cutSent, cutRcvd, restored>>

(* Process(e): e's receiver n takes the record at the head of e, counts  *)
(* it, and sends it on (the sink adds it to its output).  An aligned      *)
(* operator does not take records off an input whose barrier has arrived  *)
(* until it has recorded (block).  A record taken off an edge that is     *)
(* being recorded joins the edge's channel state (log).                   *)
ProcessV(e, block, log) ==
    LET n == e[2]
        r == Head(q[e])
        t == Route(n, r)
        r2 == Fwd(r, t, nSent[t] + 1)
    IN  /\ q[e] # <<>>
        /\ r.kind = "rec"
        /\ ~(block /\ Mode = "aligned" /\ n \notin recorded /\ e \in bar[n])
        /\ IF n = Snk
           THEN /\ out' = [out EXCEPT ![<<r.src, r.i>>] = @ + 1]
                /\ q'   = [q EXCEPT ![e] = Tail(@)]
                /\ UNCHANGED nSent
           ELSE /\ Room(t)
                /\ q'     = [q EXCEPT ![e] = Tail(@), ![t] = Append(@, r2)]
                /\ nSent' = [nSent EXCEPT ![t] = @ + 1]
                /\ UNCHANGED out
        /\ cnt'   = [cnt EXCEPT ![n] = @ + 1]
        /\ nRcvd' = [nRcvd EXCEPT ![e] = @ + 1]
        /\ recQ'  = IF log /\ recChan[e] = "recording"
                    THEN [recQ EXCEPT ![e] = Append(@, r)] ELSE recQ
        /\ pre'   = IF n \in recorded THEN pre ELSE ShadowProcess(pre, e, r, t, r2)
        /\ UNCHANGED <<emitted, bar, recorded, recOff, recCnt, recOut, recChan,
                       cutSent, cutRcvd, restored>>

(* Node n records its state; the ghosts freeze the counts of its edges. *)
RecordNode(n) ==
    /\ recorded' = recorded \cup {n}
    /\ recOff'   = IF n \in Src THEN [recOff EXCEPT ![n] = emitted[n]] ELSE recOff
    /\ recCnt'   = IF n \in Src THEN recCnt ELSE [recCnt EXCEPT ![n] = cnt[n]]
    /\ recOut'   = IF n = Snk THEN out ELSE recOut
    /\ cutSent'  = [e \in Edge |-> IF e[1] = n THEN nSent[e] ELSE cutSent[e]]
    /\ cutRcvd'  = [e \in Edge |-> IF e[2] = n THEN nRcvd[e] ELSE cutRcvd[e]]

(* n, having recorded, sends its barrier on every output of queues qs.    *)
(* Aligned: behind what is queued.  Unaligned: ahead of it, and what it  *)
(* overtakes joins the edge's channel state (persist).                    *)
SendBarriers(n, qs, persist, m) ==    \* m: the mode n records in
    IF m = "aligned"
    THEN /\ q'    = [e \in Edge |-> IF e[1] = n THEN Append(qs[e], Barrier) ELSE qs[e]]
         /\ recQ' = recQ
    ELSE /\ q'    = [e \in Edge |-> IF e[1] = n THEN <<Barrier>> \o qs[e] ELSE qs[e]]
         /\ recQ' = [e \in Edge |-> IF e[1] = n /\ persist THEN recQ[e] \o qs[e] ELSE recQ[e]]

(* Inject(s): source s records its offset and sends its barrier. *)
InjectV(s, persist) ==
    /\ s \notin recorded
    /\ RecordNode(s)
    /\ SendBarriers(s, q, persist, Mode)
    /\ UNCHANGED <<emitted, cnt, out, bar, recChan, nSent, nRcvd, pre, restored>>

(* RecvBarrier(e): e's receiver n takes the barrier at the head of e.     *)
(* If n has recorded, e's recording is done.  Otherwise n records now if  *)
(* it is unaligned, or if aligned and every input (cyclic: that is not a *)
(* back-edge) has delivered its barrier; the inputs whose barrier has   *)
(* arrived are done, the others start recording.  Else e stays blocked. *)
RecvBarrierV(e, persist, cyclic) ==
    LET n    == e[2]
        b    == bar[n] \cup {e}
        rest == [q EXCEPT ![e] = Tail(@)]
    IN  /\ q[e] # <<>>
        /\ Head(q[e]).kind = "barrier"
        /\ bar' = [bar EXCEPT ![n] = b]
        /\ IF n \in recorded
           THEN /\ recChan' = [recChan EXCEPT ![e] = "done"]
                /\ q' = rest
                /\ UNCHANGED <<recorded, recOff, recCnt, recOut, recQ, cutSent, cutRcvd>>
           ELSE IF Mode = "unaligned" \/ (IF cyclic THEN InF(n) ELSE In(n)) \subseteq b
           THEN /\ RecordNode(n)
                /\ recChan' = [d \in Edge |-> IF d[2] = n
                                              THEN IF d \in b THEN "done" ELSE "recording"
                                              ELSE recChan[d]]
                /\ SendBarriers(n, rest, persist, Mode)
           ELSE /\ q' = rest
                /\ UNCHANGED <<recorded, recOff, recCnt, recOut, recChan, recQ, cutSent, cutRcvd>>
        /\ UNCHANGED <<emitted, cnt, out, nSent, nRcvd, pre, restored>>

(* Restore: a failure after the snapshot completed.  Every node restarts *)
(* in its recorded state and every edge holds its recorded channel state *)
(* and nothing else; the sources emit again from their recorded offsets. *)
Restore ==
    /\ Complete
    /\ ~restored
    /\ restored' = TRUE
    /\ emitted'  = recOff
    /\ cnt'      = recCnt
    /\ out'      = recOut
    /\ q'        = recQ
    /\ nSent'    = cutSent
    /\ nRcvd'    = cutRcvd
    /\ UNCHANGED <<bar, recorded, recOff, recCnt, recOut, recChan, recQ, cutSent, cutRcvd, pre>>

(* The protocol's actions, and the four broken variants. *)
Process(e)     == ProcessV(e, TRUE, TRUE)
Inject(s)      == InjectV(s, TRUE)
RecvBarrier(e) == RecvBarrierV(e, TRUE, TRUE)

NextV(block, log, persist, cyclic) ==
    \/ \E s \in Src : Emit(s)
    \/ \E s \in Src : InjectV(s, persist)
    \/ \E e \in Edge : ProcessV(e, block, log)
    \/ \E e \in Edge : RecvBarrierV(e, persist, cyclic)
    \/ Restore

(* Fairness: every source eventually injects its barrier, and a record or *)
(* barrier at the head of an edge is eventually taken when its receiver   *)
(* may take it.  Emitting and restoring need none.                        *)
FairnessV(block, log, persist, cyclic) ==
    /\ \A s \in Src : WF_vars(InjectV(s, persist))
    /\ \A e \in Edge : WF_vars(ProcessV(e, block, log)) /\ WF_vars(RecvBarrierV(e, persist, cyclic))

Next == NextV(TRUE, TRUE, TRUE, TRUE)
Spec == Init /\ [][Next]_vars /\ FairnessV(TRUE, TRUE, TRUE, TRUE)

(* Alignment without blocking: an input whose barrier has arrived keeps   *)
(* being processed before the operator records.                           *)
SpecNoBlock   == Init /\ [][NextV(FALSE, TRUE, TRUE, TRUE)]_vars /\ FairnessV(FALSE, TRUE, TRUE, TRUE)
(* A cyclic graph without back-edge logging: the records taken off a back- *)
(* edge between recording and its barrier are not logged.                 *)
SpecNoLog     == Init /\ [][NextV(TRUE, FALSE, TRUE, TRUE)]_vars /\ FairnessV(TRUE, FALSE, TRUE, TRUE)
(* Unaligned without persisting the overtaken buffers. *)
SpecNoPersist == Init /\ [][NextV(TRUE, TRUE, FALSE, TRUE)]_vars /\ FairnessV(TRUE, TRUE, FALSE, TRUE)
(* Aligned on a cycle waiting for the back-edge's barrier too (~cyclic). *)
SpecAlignAll  == Init /\ [][NextV(TRUE, TRUE, TRUE, FALSE)]_vars /\ FairnessV(TRUE, TRUE, TRUE, FALSE)

-----------------------------------------------------------------------------
(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)

Item == [kind : {"rec"}, src : Src, i : Nat \ {0}, hops : 0..Iter, eseq : Nat \ {0}]
        \cup {Barrier}

BarrierTypeOK ==
    /\ emitted \in [Src -> Nat]
    /\ \A e \in Edge : \A j \in 1..Len(q[e]) : q[e][j] \in Item
    /\ cnt \in [NonSrc -> Nat] /\ out \in [Key -> Nat]
    /\ bar \in [NonSrc -> SUBSET Edge]
    /\ recorded \subseteq Node
    /\ recOff \in [Src -> Nat] /\ recCnt \in [NonSrc -> Nat] /\ recOut \in [Key -> Nat]
    /\ recChan \in [Edge -> Status]
    /\ \A e \in Edge : \A j \in 1..Len(recQ[e]) : recQ[e][j] \in Item \ {Barrier}
    /\ nSent \in [Edge -> Nat] /\ nRcvd \in [Edge -> Nat]
    /\ cutSent \in [Edge -> Nat] /\ cutRcvd \in [Edge -> Nat]
    /\ restored \in BOOLEAN

(* 1. Consistent cut: once both ends of e have recorded, the receiver had *)
(* taken no more records off e than the sender had sent when it recorded. *)
(* Records on an edge are taken in order (a barrier may overtake records, *)
(* records never overtake each other), so these are a prefix.             *)
BarrierConsistentCut ==
    \A e \in Edge : (e[1] \in recorded /\ e[2] \in recorded) => cutRcvd[e] <= cutSent[e]

(* 2. Exact channel state: once e's recording is done, its recorded       *)
(* records are exactly those sent before the sender recorded and taken   *)
(* after the receiver recorded, in order.                                 *)
BarrierExactChannelState ==
    \A e \in Edge : recChan[e] = "done" =>
        [j \in 1..Len(recQ[e]) |-> recQ[e][j].eseq]
            = [j \in 1..(cutSent[e] - cutRcvd[e]) |-> cutRcvd[e] + j]

(* 3. Aligned snapshots record channel state on back-edges only: on a DAG *)
(* none at all.                                                            *)
AlignedNoChannelState ==
    Mode = "aligned" => \A e \in Edge \ Back : recQ[e] = <<>>

(* 4. The theorem: the steps each node took before it recorded, replayed *)
(* from the initial state, are all enabled and end in the recorded state. *)
BarrierSnapshotReachable ==
    /\ pre.ok
    /\ Complete => pre = RecordedApp

(* 5. Exactly-once: the sink never receives a record twice, and when all  *)
(* is emitted and every edge drained, restored or not, it has received    *)
(* every record once: the output of a run without failures.               *)
BarrierExactlyOnce ==
    /\ \A k \in Key : out[k] <= 1
    /\ Terminated => \A k \in Key : out[k] = 1

(* 6. Liveness: once a source has injected its barrier, the snapshot     *)
(* completes.                                                              *)
BarriersComplete == Injected ~> Complete

-----------------------------------------------------------------------------
(***************************************************************************)
(* 7. Refinement: every protocol of this module (and BarrierAdaptive.tla) *)
(* is a Chandy-Lamport snapshot, ConsistentSnapshot.tla, under this       *)
(* mapping.  A barrier is a marker, and carries nothing the abstract spec *)
(* sees: barriers are dropped from the queues.  A record on edge e is a   *)
(* message, pre iff e's sender had not recorded when it sent it (its      *)
(* number on e is not past the sender's cut).  A node's recording is the  *)
(* abstract ARecord.  An edge's channel state so far is the part of its  *)
(* recorded records (recQ) its receiver has already taken: a record       *)
(* logged off a back-edge, or off an input of an unaligned node, is       *)
(* there the moment it is taken (Chandy-Lamport's receiving rule); a       *)
(* record an unaligned barrier overtook is persisted early, by the        *)
(* sender, but joins the abstract channel state only when the receiver   *)
(* takes it, after recording; an aligned block is the abstract rule      *)
(* itself: the input is not read while its next record is post.           *)
(***************************************************************************)
Coloured(e, r) == [id |-> <<r.src, r.i, r.hops>>,
                   pre |-> ~(e[1] \in recorded /\ r.eseq > cutSent[e])]
RecsOn(e)      == SelectSeq(q[e], LAMBDA x : x.kind = "rec")
TakenRec(e)    == SelectSeq(recQ[e], LAMBDA r : r.eseq <= nRcvd[e])

Abstract == INSTANCE ConsistentSnapshot WITH
    chq       <- [e \in Edge |-> [j \in 1..Len(RecsOn(e)) |-> Coloured(e, RecsOn(e)[j])]],
    cut       <- recorded,
    chan      <- [e \in Edge |-> [j \in 1..Len(TakenRec(e)) |->
                     <<TakenRec(e)[j].src, TakenRec(e)[j].i, TakenRec(e)[j].hops>>]],
    restarted <- restored

SnapshotRefinement == Abstract!SSpec

=============================================================================
