----------------------------- MODULE BarrierSink -----------------------------
(***************************************************************************)
(* A two-phase-commit sink: the dataflow's output written into an        *)
(* external store exactly once (Flink's TwoPhaseCommitSinkFunction; with  *)
(* PostgreSQL: PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED).  *)
(* The barrier snapshots of BarrierSnapshots.tla, unchanged, decide what  *)
(* a checkpoint holds; this module adds the store and the sink's          *)
(* transactions, and a sequence of checkpoints.                            *)
(*                                                                         *)
(* Checkpoints.  BarrierSnapshots.tla takes one snapshot.  Here the       *)
(* coordinator declares the snapshot complete (CompleteCkpt: a separate   *)
(* step, the moment it has every node's acknowledgement and has stored    *)
(* the snapshot), keeps it as the one a restore goes back to (snap), and *)
(* arms the next one: no node has recorded, no barrier has arrived.       *)
(* Checkpoints are numbered 1, 2, ... (ckpt, the one in progress) up to   *)
(* MaxCkpt; one is in progress at a time (the barriers carry no number: *)
(* the next one's barriers go out only after the previous one completed). *)
(* A failure (RestoreS, at most MaxRestores times, at any moment: between*)
(* the sink's pre-commit and its commit too) puts the graph back in the   *)
(* latest complete checkpoint's state (the initial state if none), and    *)
(* the checkpoint it interrupted is abandoned: its number is spent, as    *)
(* Flink never reuses a checkpoint id.                                     *)
(*                                                                         *)
(* The sink's transactions (txns, in the order opened).  The open one,   *)
(* the last, takes every record the sink takes.  When the sink's barrier *)
(* arrives and the sink records, the open transaction is pre-committed    *)
(* for checkpoint ckpt (PreCommit: its records are those the sink took    *)
(* since its previous barrier) and a new one opened.  The coordinator's  *)
(* notification that a checkpoint is complete lets the sink commit each  *)
(* pre-committed transaction of a complete checkpoint (Commit(i)): only  *)
(* then does the store hold its records.  On a restore the sink commits  *)
(* the pre-committed transactions of complete checkpoints not yet         *)
(* committed (their records are part of the restored state and will not *)
(* be replayed) and aborts every other open or pre-committed one (their  *)
(* records will be replayed), and opens a new transaction.                *)
(*                                                                         *)
(* The store may abort a pre-committed transaction on its own             *)
(* (StoreAbort(i): a transaction timeout, at most MaxAborts in a model).  *)
(* An open one it aborted would fail the sink's next write: a failure,   *)
(* that is a RestoreS, so only pre-committed ones are modelled.  If the   *)
(* checkpoint of a timed-out transaction completes, its output is lost:  *)
(* the sink finds the transaction gone when it commits (ReportLoss(i), or *)
(* the restore) and must report the loss (reportedLoss); it never may    *)
(* pass it off as committed.                                               *)
(*                                                                         *)
(* The output that matters is the store's (store), not the sink's counter*)
(* (out): ExactlyOnceOutput says the store never holds a record twice and,*)
(* once every complete checkpoint's transaction is settled, holds exactly *)
(* the sink's output at the latest complete checkpoint (snap.out, the    *)
(* records of every source the sink had taken before its barrier; in     *)
(* unaligned mode the records in flight are channel state, replayed after*)
(* a restore), less the reported losses.                                   *)
(*                                                                         *)
(* SpecSinkArrival, SpecSinkNoAbort, SpecSinkForget, SpecSinkSilent and  *)
(* SpecSinkNoNotify break a rule each.                                     *)
(***************************************************************************)
EXTENDS BarrierSnapshots

CONSTANTS
    MaxCkpt,      \* how many checkpoints a behaviour may start
    MaxRestores,  \* how many failures (restores) a behaviour may have
    MaxAborts     \* how many transactions the store may abort on its own

ASSUME /\ MaxCkpt \in Nat \ {0} /\ MaxRestores \in Nat /\ MaxAborts \in Nat
       /\ Mode = "aligned"              \* the output of a checkpoint is the sink's pre-barrier input

TxnStatus == {"open", "precommitted", "committed", "aborted", "timedout"}
Txn       == [ck : 0..MaxCkpt, st : TxnStatus, recs : SUBSET Key]
OpenTxn   == [ck |-> 0, st |-> "open", recs |-> {}]

(* The sink opens one transaction at first, one per pre-commit (at most  *)
(* one per checkpoint) and one per restore.                                *)
MaxTxn == 1 + MaxCkpt + MaxRestores

VARIABLES
    ckpt,          \* the checkpoint in progress (MaxCkpt + 1: no more)
    done,          \* the latest complete checkpoint (0: none)
    snap,          \* its state, the one a restore puts back
    txns,          \* Seq(Txn): the sink's transactions, in the order opened
    store,         \* [Key -> Nat]: the store's committed output
    restores,      \* how many restores so far
    aborts,        \* how many transactions the store aborted so far
    reportedLoss   \* the complete checkpoints whose output the sink reported lost

svars == <<ckpt, done, snap, txns, store, restores, aborts, reportedLoss>>
allvars == <<vars, svars>>

(* The state a snapshot holds and a restore puts back: RecordedApp, and  *)
(* the ghost counts of its cut (the records' numbers on each edge).      *)
InitSnap     == [off |-> [s \in Src |-> 0], cnt |-> [n \in NonSrc |-> 0],
                 out |-> [k \in Key |-> 0], q |-> [e \in Edge |-> <<>>],
                 sent |-> [e \in Edge |-> 0], rcvd |-> [e \in Edge |-> 0]]
RecordedSnap == [off |-> recOff, cnt |-> recCnt, out |-> recOut, q |-> recQ,
                 sent |-> cutSent, rcvd |-> cutRcvd]

Last == Len(txns)                                     \* the open transaction
OfComplete(t) == t.ck # 0 /\ t.ck <= done             \* t's checkpoint is complete
Pending(i) == /\ i \in DOMAIN txns                    \* a complete checkpoint's
              /\ txns[i].st \in {"precommitted", "timedout"}   \* transaction not
              /\ OfComplete(txns[i])                  \* yet settled
Settled(i) == i \in DOMAIN txns /\ (txns[i].st = "committed" \/ txns[i].ck \in reportedLoss)

(* The store with the records of R added once more. *)
Add(st, R) == [k \in Key |-> IF k \in R THEN st[k] + 1 ELSE st[k]]

(* The next checkpoint armed: nobody has recorded, no barrier arrived,  *)
(* nothing is being recorded.                                              *)
Rearm == /\ recorded' = {}
         /\ bar'      = [n \in NonSrc |-> {}]
         /\ recChan'  = [e \in Edge |-> "idle"]
         /\ recQ'     = [e \in Edge |-> <<>>]

-----------------------------------------------------------------------------
InitS ==
    /\ Init
    /\ ckpt         = 1
    /\ done         = 0
    /\ snap         = InitSnap
    /\ txns         = <<OpenTxn>>
    /\ store        = [k \in Key |-> 0]
    /\ restores     = 0
    /\ aborts       = 0
    /\ reportedLoss = {}

(* The actions of BarrierSnapshots.tla.  A source injects the barrier of *)
(* checkpoint ckpt, if there is one to start.  The sink's Process adds   *)
(* the record to its open transaction.                                     *)
EmitS(s)   == Emit(s) /\ UNCHANGED svars
InjectS(s) == ckpt <= MaxCkpt /\ InjectV(s, TRUE) /\ UNCHANGED svars

ProcessS(e) ==
    LET r == Head(q[e]) IN
    /\ ProcessV(e, TRUE, TRUE)
    /\ txns' = IF e[2] = Snk
               THEN [txns EXCEPT ![Last].recs = @ \cup {<<r.src, r.i>>}]
               ELSE txns
    /\ UNCHANGED <<ckpt, done, snap, store, restores, aborts, reportedLoss>>

(* RecvBarrierS(e): RecvBarrierV; when the sink records on this barrier, *)
(* PreCommit: its open transaction is pre-committed for checkpoint ckpt  *)
(* and a new one opened.  arrival: the broken sink commits it right away,*)
(* at barrier arrival, before the checkpoint is complete.                 *)
RecvBarrierSV(e, arrival) ==
    LET t == txns[Last] IN
    /\ RecvBarrierV(e, TRUE, TRUE)
    /\ IF e[2] = Snk /\ Snk \notin recorded /\ Snk \in recorded'
       THEN /\ txns'  = [txns EXCEPT ![Last] = [ck |-> ckpt, st |-> IF arrival THEN "committed"
                                                                     ELSE "precommitted",
                                                recs |-> t.recs]] \o <<OpenTxn>>
            /\ store' = IF arrival THEN Add(store, t.recs) ELSE store
       ELSE UNCHANGED <<txns, store>>
    /\ UNCHANGED <<ckpt, done, snap, restores, aborts, reportedLoss>>

(* CompleteCkpt: every node has recorded and every edge's recording is   *)
(* done; the coordinator declares checkpoint ckpt complete, keeps its    *)
(* state and arms the next checkpoint.                                     *)
CompleteCkpt ==
    /\ ckpt <= MaxCkpt
    /\ Complete
    /\ done' = ckpt
    /\ snap' = RecordedSnap
    /\ ckpt' = ckpt + 1
    /\ Rearm
    /\ UNCHANGED <<emitted, q, cnt, out, recOff, recCnt, recOut, nSent, nRcvd,
                   cutSent, cutRcvd, pre, restored>>
    /\ UNCHANGED <<txns, store, restores, aborts, reportedLoss>>

(* Commit(i): the notification of a complete checkpoint: the sink commits*)
(* its pre-committed transaction i, whose records join the store.        *)
Commit(i) ==
    /\ Pending(i)
    /\ txns[i].st = "precommitted"
    /\ txns'  = [txns EXCEPT ![i].st = "committed"]
    /\ store' = Add(store, txns[i].recs)
    /\ UNCHANGED <<vars, ckpt, done, snap, restores, aborts, reportedLoss>>

(* StoreAbort(i): the store aborts pre-committed transaction i on its own*)
(* (its timeout), before the sink commits it.                              *)
StoreAbort(i) ==
    /\ i \in DOMAIN txns
    /\ txns[i].st = "precommitted"
    /\ aborts < MaxAborts
    /\ txns'   = [txns EXCEPT ![i].st = "timedout"]
    /\ aborts' = aborts + 1
    /\ UNCHANGED <<vars, ckpt, done, snap, store, restores, reportedLoss>>

(* ReportLossV(i): the sink, committing a complete checkpoint's           *)
(* transaction i, finds that the store aborted it, and reports the        *)
(* checkpoint's output lost.  silent: the broken sink takes it for        *)
(* committed and reports nothing.                                          *)
Lose(t, silent) == IF silent THEN [t EXCEPT !.st = "committed"] ELSE [t EXCEPT !.st = "aborted"]
LossOf(T, silent) == IF silent THEN {} ELSE {t.ck : t \in T}

ReportLossV(i, silent) ==
    /\ Pending(i)
    /\ txns[i].st = "timedout"
    /\ txns' = [txns EXCEPT ![i] = Lose(@, silent)]
    /\ reportedLoss' = reportedLoss \cup LossOf({txns[i]}, silent)
    /\ UNCHANGED <<vars, ckpt, done, snap, store, restores, aborts>>

(* How a restore settles transaction t.  The pre-committed transaction of*)
(* a complete checkpoint is committed (forget: the broken sink aborts it *)
(* with the rest); a timed-out one of a complete checkpoint is lost and  *)
(* reported (silent: taken for committed); every other open or pre-       *)
(* committed one is aborted (noabort: the broken sink leaves it as it    *)
(* is), and so is a timed-out one.                                        *)
Resolve(t, noabort, forget, silent) ==
    IF OfComplete(t) /\ t.st = "precommitted" /\ ~forget
    THEN [t EXCEPT !.st = "committed"]
    ELSE IF OfComplete(t) /\ t.st = "timedout"
    THEN Lose(t, silent)
    ELSE IF t.st = "timedout" \/ (t.st \in {"open", "precommitted"} /\ ~noabort)
    THEN [t EXCEPT !.st = "aborted"]
    ELSE t

(* The records the restore commits. *)
Recommitted(forget) ==
    UNION {txns[i].recs : i \in {j \in DOMAIN txns :
             txns[j].st = "precommitted" /\ OfComplete(txns[j]) /\ ~forget}}

(* RestoreSV: a failure (the sink's too, between pre-commit and commit). *)
(* Every node and edge goes back to the latest complete checkpoint, the  *)
(* checkpoint in progress is abandoned (its number spent, if a barrier   *)
(* of it went out), and the sink settles its transactions and opens a    *)
(* new one.                                                                *)
RestoreSV(noabort, forget, silent) ==
    /\ restores < MaxRestores
    /\ restores' = restores + 1
    /\ restored' = TRUE
    /\ emitted'  = snap.off
    /\ cnt'      = snap.cnt
    /\ out'      = snap.out
    /\ q'        = snap.q
    /\ nSent'    = snap.sent
    /\ nRcvd'    = snap.rcvd
    /\ Rearm
    /\ ckpt'     = IF recorded = {} THEN ckpt ELSE ckpt + 1
    /\ txns'     = [i \in DOMAIN txns |-> Resolve(txns[i], noabort, forget, silent)] \o <<OpenTxn>>
    /\ store'    = Add(store, Recommitted(forget))
    /\ reportedLoss' = reportedLoss \cup
                       LossOf({txns[i] : i \in {j \in DOMAIN txns :
                                 txns[j].st = "timedout" /\ OfComplete(txns[j])}}, silent)
    /\ UNCHANGED <<recOff, recCnt, recOut, cutSent, cutRcvd, pre, done, snap, aborts>>

(* The protocol and its broken variants: arrival commits at barrier     *)
(* arrival, noabort leaves the open and pre-committed transactions of    *)
(* the interrupted checkpoint alone on restore, forget aborts a complete  *)
(* checkpoint's pre-committed transaction on restore instead of          *)
(* committing it, silent takes a store-aborted transaction for committed. *)
NextS(arrival, noabort, forget, silent) ==
    \/ \E s \in Src : EmitS(s)
    \/ \E s \in Src : InjectS(s)
    \/ \E e \in Edge : ProcessS(e)
    \/ \E e \in Edge : RecvBarrierSV(e, arrival)
    \/ CompleteCkpt
    \/ \E i \in 1..MaxTxn : Commit(i)
    \/ \E i \in 1..MaxTxn : StoreAbort(i)
    \/ \E i \in 1..MaxTxn : ReportLossV(i, silent)
    \/ RestoreSV(noabort, forget, silent)

(* Fairness: the graph's as in BarrierSnapshots.tla, and the coordinator *)
(* eventually completes a checkpoint that can complete (FairnessG), and  *)
(* the sink eventually commits (the notification arrives), or reports    *)
(* lost, a complete checkpoint's transaction.  Emitting, failing and the *)
(* store's timeouts need none.                                            *)
FairnessG(arrival) ==
    /\ \A s \in Src : WF_allvars(InjectS(s))
    /\ \A e \in Edge : WF_allvars(ProcessS(e)) /\ WF_allvars(RecvBarrierSV(e, arrival))
    /\ WF_allvars(CompleteCkpt)
FairnessS(arrival, silent) ==
    /\ FairnessG(arrival)
    /\ \A i \in 1..MaxTxn : WF_allvars(Commit(i)) /\ WF_allvars(ReportLossV(i, silent))

SpecSink        == InitS /\ [][NextS(FALSE, FALSE, FALSE, FALSE)]_allvars /\ FairnessS(FALSE, FALSE)
(* Commit at barrier arrival, not at the checkpoint's completion.        *)
SpecSinkArrival == InitS /\ [][NextS(TRUE, FALSE, FALSE, FALSE)]_allvars /\ FairnessS(TRUE, FALSE)
(* No abort of the interrupted checkpoint's transactions on restore.    *)
SpecSinkNoAbort == InitS /\ [][NextS(FALSE, TRUE, FALSE, FALSE)]_allvars /\ FairnessS(FALSE, FALSE)
(* A complete checkpoint's pre-committed transaction aborted on restore. *)
SpecSinkForget  == InitS /\ [][NextS(FALSE, FALSE, TRUE, FALSE)]_allvars /\ FairnessS(FALSE, FALSE)
(* A store-aborted transaction taken for committed: a silent loss.       *)
SpecSinkSilent  == InitS /\ [][NextS(FALSE, FALSE, FALSE, TRUE)]_allvars /\ FairnessS(FALSE, TRUE)
(* Commit only on a notification that need not arrive (Flink's           *)
(* notifyCheckpointComplete is best effort): nothing commits the last    *)
(* complete checkpoint's transaction unless a restore does.               *)
SpecSinkNoNotify == InitS /\ [][NextS(FALSE, FALSE, FALSE, FALSE)]_allvars /\ FairnessG(FALSE)
                    /\ \A i \in 1..MaxTxn : WF_allvars(ReportLossV(i, FALSE))

-----------------------------------------------------------------------------
(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)
SinkTypeOK ==
    /\ ckpt \in 1..(MaxCkpt + 1) /\ done \in 0..MaxCkpt /\ done < ckpt
    /\ snap.off \in [Src -> Nat] /\ snap.cnt \in [NonSrc -> Nat] /\ snap.out \in [Key -> Nat]
    /\ \A e \in Edge : \A j \in 1..Len(snap.q[e]) : snap.q[e][j] \in Item \ {Barrier}
    /\ snap.sent \in [Edge -> Nat] /\ snap.rcvd \in [Edge -> Nat]
    /\ Len(txns) \in 1..MaxTxn /\ \A i \in DOMAIN txns : txns[i] \in Txn
    /\ txns[Last].st = "open"
    /\ store \in [Key -> Nat]
    /\ restores \in 0..MaxRestores /\ aborts \in 0..MaxAborts
    /\ reportedLoss \subseteq 1..done

(* The records of the transactions whose loss was reported. *)
LostKeys == UNION {txns[i].recs : i \in {j \in DOMAIN txns : txns[j].ck \in reportedLoss}}

(* 1. Never a record twice in the store. *)
NoDuplicateOutput == \A k \in Key : store[k] <= 1

(* 2. Exactly once in the store: never a record twice, and once every     *)
(* complete checkpoint's transaction is settled, exactly the sink's      *)
(* output at the latest complete checkpoint, less the reported losses.    *)
ExactlyOnceOutput ==
    /\ NoDuplicateOutput
    /\ (\A i \in DOMAIN txns : ~Pending(i)) =>
           \A k \in Key : store[k] = IF snap.out[k] > 0 /\ k \notin LostKeys THEN 1 ELSE 0

(* 3. Only a complete checkpoint's transaction is committed. *)
CommittedOnlyComplete ==
    \A i \in DOMAIN txns : txns[i].st = "committed" => OfComplete(txns[i])

(* 4. Liveness: every complete checkpoint's transaction is eventually    *)
(* committed, or its loss reported.                                        *)
CompleteCommitted == \A i \in 1..MaxTxn : Pending(i) ~> Settled(i)

=============================================================================
