--------------------------- MODULE BarrierAdaptive ---------------------------
(***************************************************************************)
(* Adaptive barrier snapshots: a checkpoint starts aligned, and an        *)
(* operator whose alignment has not finished within a timeout switches    *)
(* that checkpoint to unaligned (Flink's                                   *)
(* execution.checkpointing.aligned-checkpoint-timeout).  One protocol,    *)
(* the two modes of BarrierSnapshots.tla per operator.                     *)
(*                                                                         *)
(* Every operator starts the snapshot aligned (Mode = "aligned"): it      *)
(* blocks each input whose barrier has arrived and waits for the others.  *)
(* While it is blocked and has not recorded, its alignment may time out   *)
(* (Timeout(n), at most MaxTimeouts switches in a model).  It then        *)
(* follows the unaligned rules for this snapshot:                          *)
(*   - it records its state at once, and its blocked inputs are done:     *)
(*     what alignment held back on them lies behind their barrier, sent   *)
(*     after their sender recorded, so it belongs to the next snapshot;   *)
(*   - its barrier overtakes everything queued on each output, and what   *)
(*     it overtakes is persisted as that edge's channel state;            *)
(*   - the inputs whose barrier has not arrived follow the Chandy-Lamport *)
(*     receiving rule: every record it takes off them until their barrier *)
(*     (the records alignment was waiting for) is their channel state.     *)
(* Nothing else changes: ProcessV already logs an edge being recorded and *)
(* stops blocking once the operator has recorded, and RecvBarrierV closes *)
(* the recording of an input whose barrier arrives after the switch.       *)
(*                                                                         *)
(* ForceAligned edges never carry channel state (Flink's forced-aligned   *)
(* barriers, FLINK-33693).  An operator n feeds edge e when e is one of   *)
(* its outputs (e[1] = n): its barrier placement decides where the        *)
(* barrier lands in e's queue, and a switched sender's barrier would      *)
(* overtake the queue and persist it.  So an operator feeding a force-    *)
(* aligned edge never switches: it aligns however long it takes.  Its     *)
(* receiver may switch only once that edge's barrier has arrived: a       *)
(* switched receiver logs an input whose barrier is still to come.        *)
(*                                                                         *)
(* The timeout covers backpressure too (TimeoutOut(n)): an operator that *)
(* recorded aligned but whose barrier still waits behind full output     *)
(* buffers switches as well, its barrier overtaking those buffers, which *)
(* are persisted as the edges' channel state (Flink's aligned-checkpoint-*)
(* timeout in output buffers).                                            *)
(*                                                                         *)
(* Each operator reports the type of the snapshot it took (reported);    *)
(* FLINK-31588 reported the type decided before the switch.               *)
(***************************************************************************)
EXTENDS BarrierSnapshots

CONSTANTS
    ForceAligned,  \* the edges that must stay aligned: a subset of Edge \ Back
    MaxTimeouts    \* how many operators' alignment may time out in a behaviour

ASSUME /\ ForceAligned \subseteq Edge \ Back
       /\ MaxTimeouts \in Nat
       /\ Mode = "aligned"                 \* an adaptive snapshot starts aligned

Type == {"none", "aligned", "unaligned"}  \* a snapshot type, or none yet

VARIABLES
    mode,        \* [Node -> {"aligned", "unaligned"}]: the mode of each node's snapshot
    reported,    \* [NonSrc -> Type]: the snapshot type each node reported when it recorded
    cutAligned   \* ghost [NonSrc -> BOOLEAN]: had every input aligned on
                 \* (InF) delivered its barrier when the node recorded,
                 \* and has its barrier overtaken no record since?

avars == <<vars, mode, reported, cutAligned>>

Switched == {n \in Node : mode[n] = "unaligned"}

(* The type a node's snapshot really is: aligned if it recorded with     *)
(* every input it aligns on in (its state then reflects exactly the      *)
(* records ahead of those barriers) and its barrier overtook nothing on  *)
(* its outputs (TimeoutOut), else unaligned.                              *)
TakenType(n) == IF cutAligned[n] THEN "aligned" ELSE "unaligned"

-----------------------------------------------------------------------------
InitA ==
    /\ Init
    /\ mode       = [n \in Node |-> "aligned"]
    /\ reported   = [n \in NonSrc |-> "none"]
    /\ cutAligned = [n \in NonSrc |-> FALSE]

(* The actions of BarrierSnapshots.tla, unchanged for the new variables, *)
(* except that a node recording on its last barrier reports its mode and *)
(* freezes whether it was aligned.                                         *)
EmitA(s)        == Emit(s) /\ UNCHANGED <<mode, reported, cutAligned>>
InjectA(s)      == InjectV(s, TRUE) /\ UNCHANGED <<mode, reported, cutAligned>>
ProcessA(e, log) == ProcessV(e, TRUE, log) /\ UNCHANGED <<mode, reported, cutAligned>>
RestoreA        == Restore /\ UNCHANGED <<mode, reported, cutAligned>>

RecvBarrierA(e) ==
    LET n == e[2]
        now == n \notin recorded /\ n \in recorded'   \* n records on this barrier
    IN  /\ RecvBarrierV(e, TRUE, TRUE)
        /\ reported'   = IF now THEN [reported EXCEPT ![n] = mode[n]] ELSE reported
        /\ cutAligned' = IF now THEN [cutAligned EXCEPT ![n] = InF(n) \subseteq bar'[n]]
                         ELSE cutAligned
        /\ UNCHANGED mode

(* Timeout(n): n's alignment times out and n switches this snapshot to   *)
(* unaligned.  Enabled while n is blocked (an input's barrier arrived)   *)
(* and has not recorded (late: even after), at most MaxTimeouts times,    *)
(* never for an operator feeding a force-aligned edge nor before every   *)
(* force-aligned input's barrier arrived (honour).  n records; its       *)
(* inputs whose barrier arrived are done, the others start recording (the*)
(* rule of RecvBarrierV, BarrierSnapshots.tla lines 254-256, with the    *)
(* inputs arrived so far); its barrier overtakes its outputs' queues,     *)
(* persisted as their channel state (persist); it reports its new mode   *)
(* (stale: the mode decided before the switch, FLINK-31588).              *)
TimeoutV(n, persist, honour, late, stale) ==
    /\ IF late THEN TRUE ELSE n \notin recorded
    /\ bar[n] # {}
    /\ mode[n] = "aligned"
    /\ Cardinality(Switched) < MaxTimeouts
    /\ IF honour THEN /\ Out(n) \cap ForceAligned = {}
                      /\ In(n) \cap ForceAligned \subseteq bar[n]
                 ELSE TRUE
    /\ RecordNode(n)
    /\ recChan' = [d \in Edge |-> IF d[2] = n
                                  THEN IF d \in bar[n] THEN "done" ELSE "recording"
                                  ELSE recChan[d]]
    /\ SendBarriers(n, q, persist, "unaligned")
    /\ mode'       = [mode EXCEPT ![n] = "unaligned"]
    /\ reported'   = [reported EXCEPT ![n] = IF stale THEN mode[n] ELSE "unaligned"]
    /\ cutAligned' = [cutAligned EXCEPT ![n] = InF(n) \subseteq bar[n]]
    /\ UNCHANGED <<emitted, cnt, out, bar, nSent, nRcvd, pre, restored>>

Timeout(n) == TimeoutV(n, TRUE, TRUE, FALSE, FALSE)

(* The position of the barrier in e's queue, 0 if none (one snapshot:  *)
(* at most one barrier), and the records queued ahead of it.            *)
BarrierPos(e) == IF \E j \in 1..Len(q[e]) : q[e][j] = Barrier
                 THEN CHOOSE j \in 1..Len(q[e]) : q[e][j] = Barrier ELSE 0
Ahead(e)      == SubSeq(q[e], 1, BarrierPos(e) - 1)

(* The outputs of n (honour: not force-aligned) whose barrier is still  *)
(* queued behind records.                                                *)
Queued(n, honour) ==
    {e \in Out(n) : BarrierPos(e) > 1 /\ (honour => e \notin ForceAligned)}

(* TimeoutOut(n): the timeout in the output buffers (Flink, FLINK-27251: *)
(* an aligned barrier still queued in an output buffer when the timeout *)
(* passes is turned into an unaligned one).  n recorded aligned (or is a *)
(* source that injected) and its barrier waits behind full buffers:      *)
(* backpressure, not alignment.  Enabled once n has recorded, while it   *)
(* has not switched, at most MaxTimeouts times, and while some output    *)
(* that is not force-aligned (honour) holds records ahead of n's barrier.*)
(* There the barrier overtakes them, and they are persisted as the       *)
(* edge's channel state (persist): sent before n recorded and not taken, *)
(* which is what BarrierExactChannelState asks of that edge (the         *)
(* receiver cannot take them before the barrier now, nor did it record   *)
(* before: the barrier is still on the edge, or it logs them as well).   *)
(* Nothing else about n changes: its state is recorded already, and a    *)
(* force-aligned output keeps its barrier where it is.  n's snapshot is  *)
(* now unaligned: it reports so (stale: the type decided before,        *)
(* FLINK-31588's shape); a source reports no type.                       *)
(* This is the legal timeout after recording.  TimeoutV with late fires  *)
(* on the input side after recording: it records n again, past records  *)
(* it took after its barrier left, an orphan (SpecAdaptiveLateTimeout).  *)
(* TimeoutOut records nothing: it only moves n's barrier forward on its  *)
(* outputs and persists what it passes.                                   *)
TimeoutOutV(n, persist, honour, stale) ==
    LET E == Queued(n, honour)
    IN  /\ n \in recorded
        /\ mode[n] = "aligned"
        /\ Cardinality(Switched) < MaxTimeouts
        /\ E # {}
        /\ q' = [e \in Edge |-> IF e \in E
                                THEN <<Barrier>> \o Ahead(e) \o SubSeq(q[e], BarrierPos(e) + 1, Len(q[e]))
                                ELSE q[e]]
        /\ recQ' = [e \in Edge |-> IF e \in E /\ persist THEN recQ[e] \o Ahead(e) ELSE recQ[e]]
        /\ mode'       = [mode EXCEPT ![n] = "unaligned"]
        /\ reported'   = IF n \in Src THEN reported ELSE [reported EXCEPT ![n] = IF stale THEN mode[n] ELSE "unaligned"]
        /\ cutAligned' = IF n \in Src THEN cutAligned ELSE [cutAligned EXCEPT ![n] = FALSE]
        /\ UNCHANGED <<emitted, cnt, out, bar, recorded, recOff, recCnt, recOut, recChan,
                       nSent, nRcvd, cutSent, cutRcvd, pre, restored>>

TimeoutOut(n) == TimeoutOutV(n, TRUE, TRUE, FALSE)

(* persist: a switched operator persists what its barrier overtakes and  *)
(* logs its unaligned inputs (ProcessV's log).                             *)
NextA(persist, honour, late, stale) ==
    \/ \E s \in Src : EmitA(s)
    \/ \E s \in Src : InjectA(s)
    \/ \E e \in Edge : ProcessA(e, persist)
    \/ \E e \in Edge : RecvBarrierA(e)
    \/ \E n \in NonSrc : TimeoutV(n, persist, honour, late, stale)
    \/ \E n \in Node : TimeoutOutV(n, persist, honour, stale)
    \/ RestoreA

(* Fairness as in BarrierSnapshots.tla; a timeout needs none: it may     *)
(* never fire.                                                             *)
FairnessA(persist) ==
    /\ \A s \in Src : WF_avars(InjectA(s))
    /\ \A e \in Edge : WF_avars(ProcessA(e, persist)) /\ WF_avars(RecvBarrierA(e))

NextAdaptive == NextA(TRUE, TRUE, FALSE, FALSE)
SpecAdaptive == InitA /\ [][NextAdaptive]_avars /\ FairnessA(TRUE)

(* The switch persists nothing: neither the records its barrier         *)
(* overtakes (TimeoutV's or TimeoutOutV's) nor those it takes off its    *)
(* unaligned inputs.                                                       *)
SpecAdaptiveNoPersist   == InitA /\ [][NextA(FALSE, TRUE, FALSE, FALSE)]_avars /\ FairnessA(FALSE)
(* ForceAligned ignored: an operator feeding a force-aligned edge switches, *)
(* and a barrier queued on a force-aligned edge overtakes it (TimeoutOutV). *)
SpecAdaptiveForceSwitch == InitA /\ [][NextA(TRUE, FALSE, FALSE, FALSE)]_avars /\ FairnessA(TRUE)
(* The input-side timeout fires after the operator recorded (aligned)   *)
(* too (TimeoutOutV is the legal timeout after recording).               *)
SpecAdaptiveLateTimeout == InitA /\ [][NextA(TRUE, TRUE, TRUE, FALSE)]_avars /\ FairnessA(TRUE)
(* The switched operator reports the type decided before the switch.     *)
SpecAdaptiveStaleType   == InitA /\ [][NextA(TRUE, TRUE, FALSE, TRUE)]_avars /\ FairnessA(TRUE)

-----------------------------------------------------------------------------
(***************************************************************************)
(* Properties: those of BarrierSnapshots.tla (BarrierConsistentCut,        *)
(* BarrierExactChannelState, BarrierSnapshotReachable, BarrierExactlyOnce, *)
(* BarriersComplete) hold unchanged, on the adaptive state; and:          *)
(***************************************************************************)
AdaptiveTypeOK ==
    /\ BarrierTypeOK
    /\ mode \in [Node -> {"aligned", "unaligned"}]
    /\ reported \in [NonSrc -> Type]
    /\ cutAligned \in [NonSrc -> BOOLEAN]
    /\ Switched \cap Src \subseteq recorded  \* a source switches only on its outputs

(* AlignedNoChannelState, per operator: a node that did not switch adds *)
(* no channel state.  An edge's channel state is its receiver's log      *)
(* followed by what its sender's barrier overtook, so an edge that is   *)
(* not a back-edge and neither of whose ends switched records nothing.   *)
UnswitchedNoChannelState ==
    \A e \in Edge \ Back : (e[1] \notin Switched /\ e[2] \notin Switched) => recQ[e] = <<>>

(* Force-aligned edges never carry channel state. *)
ForceAlignedNoChannelState == \A e \in ForceAligned : recQ[e] = <<>>

(* Each node that recorded reported the type of the snapshot it took.    *)
ReportedTypeTaken == \A n \in NonSrc \cap recorded : reported[n] = TakenType(n)

=============================================================================
