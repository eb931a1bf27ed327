------------------------- MODULE TraceChandyLamport -------------------------
(***************************************************************************)
(* Trace validation: is a recorded run of markerwave a behaviour of        *)
(* ChandyLamport?  (In the style of the tlaplus Examples' EWD998 trace     *)
(* checker.)                                                               *)
(*                                                                         *)
(* The run is the constant Trace, a sequence of records, one per event of  *)
(* the trace file in its causally consistent order:                        *)
(*   [action |-> "SendApp" | "RecvApp" | "Initiate" | "RecvMarker",        *)
(*    pid |-> the process that took the step,                             *)
(*    from, to |-> the channel's ends ("" when not a channel action),      *)
(*    snap, amount, msg |-> Nat (0 when not meaningful),                   *)
(*    first |-> BOOLEAN (RecvMarker: the first marker of snap at pid),     *)
(*    bal, sent, rcvd |-> pid's local state after the step]                *)
(* (The process field is pid, not proc: TLC's linter warns about a record  *)
(* field named like the variable proc, once per record.)                   *)
(* `markerwave export --tlc DIR TRACE` writes MCTrace.tla, which defines   *)
(* it and the model constants, and MCTrace.cfg.                            *)
(*                                                                         *)
(* i counts the trace events consumed.  TraceNext consumes Trace[i + 1]   *)
(* by taking exactly the spec action it names, with its arguments, and    *)
(* requires the process's state after the step to be the recorded one.    *)
(* Every action of ChandyLamport is deterministic once its arguments are   *)
(* fixed, so the behaviours of TraceSpec form a single path; TLC explores  *)
(* it and checks the spec's invariants in every state along it.            *)
(*                                                                         *)
(* Verdict.  The trace is accepted iff the whole of it is consumed:        *)
(*  - TraceMatched (invariant) fails in the first state from which the     *)
(*    next event cannot be taken; TLC prints the path up to there, and     *)
(*    TraceAlias puts the unmatched event in every state it prints.        *)
(*  - TraceAccepted (postcondition, checked once TLC is done) fails unless *)
(*    the longest behaviour has Len(Trace) steps, and prints               *)
(*    "TraceAccepted: trace fully consumed" when it has.                   *)
(* Either one alone is sound; the invariant gives the better message.      *)
(*                                                                         *)
(* What the implementation reported.  A trace also carries the snapshots   *)
(* the implementation assembled (its "recorded" lines) and may claim that  *)
(* the run ended drained.  The constant Recorded is the sequence of those  *)
(* snapshots,                                                             *)
(*   [snap |-> s, procs |-> [Proc -> LocalState],                          *)
(*    msgs |-> [Chan -> Seq([amt, seq])],                                  *)
(*    sent, got |-> [Chan -> Nat]]   (each channel's cut seqs),            *)
(* and Drained is the claim.  The Reported* invariants below hold them to  *)
(* the spec, each named after the property of ChandyLamport it checks, so  *)
(* that TLC rejects exactly what markerwave audit rejects: a reported cut  *)
(* that is not consistent or not the spec's, reported channel messages    *)
(* that are not what was in flight, a reported total that is not all the  *)
(* money, reported local states that are not the recorded ones, a         *)
(* reported snapshot the run never completes, and a drained claim with     *)
(* messages still in channels or a snapshot still pending.                 *)
(***************************************************************************)
EXTENDS ChandyLamport, TLC, Sequences, Naturals

CONSTANTS Trace, Recorded, Drained

ASSUME Drained \in BOOLEAN

VARIABLE i

traceVars == <<vars, i>>

Actions == {"SendApp", "RecvApp", "Initiate", "RecvMarker"}

ASSUME \A k \in 1..Len(Trace) : Trace[k].action \in Actions

-----------------------------------------------------------------------------
(* One trace event per spec action.  Each checks the event's own fields    *)
(* against the spec state first, so that a malformed or tampered event    *)
(* disables the step instead of making TLC evaluate nonsense.              *)

TakeSendApp(e) ==
    LET c == <<e.from, e.to>> IN
    /\ c \in Chan
    /\ e.pid = e.from
    /\ e.amount \in Amount
    /\ e.msg = nSent[c] + 1                  \* the message's number on c
    /\ SendApp(e.from, e.to, e.amount)

TakeRecvApp(e) ==
    LET c == <<e.from, e.to>> IN
    /\ c \in Chan
    /\ e.pid = e.to
    /\ chan[c] # <<>>
    /\ Head(chan[c]).kind = "app"
    /\ Head(chan[c]).amt = e.amount          \* the message received is the
    /\ Head(chan[c]).seq = e.msg             \* one at the head of c
    /\ RecvApp(e.from, e.to)

TakeInitiate(e) ==
    /\ e.snap \in Snap
    /\ Initiator[e.snap] = e.pid
    /\ Initiate(e.snap)

TakeRecvMarker(e) ==
    LET c == <<e.from, e.to>> IN
    /\ c \in Chan
    /\ e.pid = e.to
    /\ chan[c] # <<>>
    /\ Head(chan[c]).kind = "marker"
    /\ Head(chan[c]).snap = e.snap
    /\ e.first = (e.to \notin recorded[e.snap])  \* Receiving Rule case 1 iff first
    /\ RecvMarker(e.from, e.to)

TraceInit == Init /\ i = 0

TraceNext ==
    /\ i < Len(Trace)
    /\ LET e == Trace[i + 1] IN
       /\ e.pid \in Proc
       /\ \/ e.action = "SendApp"    /\ TakeSendApp(e)
          \/ e.action = "RecvApp"    /\ TakeRecvApp(e)
          \/ e.action = "Initiate"   /\ TakeInitiate(e)
          \/ e.action = "RecvMarker" /\ TakeRecvMarker(e)
       /\ proc'[e.pid] = [bal |-> e.bal, sent |-> e.sent, rcvd |-> e.rcvd]
    /\ i' = i + 1

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

-----------------------------------------------------------------------------
(* The verdict. *)

TraceMatched == i < Len(Trace) => ENABLED TraceNext

(* The reported snapshots against the spec.  The first conjunct of each   *)
(* is a fact of the report alone, checked in the initial state (i = 0):   *)
(* written as a state predicate so that TLC checks the invariants in the  *)
(* order of MCTrace.cfg there, as the audit checks the properties, rather *)
(* than evaluating it first as a constant.  The second conjunct compares  *)
(* the report with the spec's recorded variables once the spec's snapshot *)
(* is complete.                                                           *)

\* The application messages of a channel's recording, as the trace reports
\* them.
AppMsgs(sq) == [j \in 1..Len(sq) |-> [amt |-> sq[j].amt, seq |-> sq[j].seq]]

\* ConsistentCut (lines 287-292) on the report: the receiver of each channel
\* got no more than its sender had sent when they recorded, and the cut
\* seqs are the spec's ghosts cutSent and Len(cutGot), where a restore
\* resumes each channel.
ReportedConsistentCut ==
    \A k \in 1..Len(Recorded) : LET r == Recorded[k] IN
        /\ i = 0 => \A c \in Chan : r.got[c] <= r.sent[c]
        /\ Complete(r.snap) =>
              \A c \in Chan : /\ r.sent[c] = cutSent[r.snap][c]
                             /\ r.got[c] = Len(cutGot[r.snap][c])

\* ExactChannelState (lines 297-302) on the report: each channel's reported
\* messages are numbers got+1 .. sent, in order, and are the spec's recMsgs.
ReportedExactChannelState ==
    \A k \in 1..Len(Recorded) : LET r == Recorded[k] IN
        /\ i = 0 => \A c \in Chan : r.got[c] <= r.sent[c] =>
              [j \in 1..Len(r.msgs[c]) |-> r.msgs[c][j].seq]
                  = [j \in 1..(r.sent[c] - r.got[c]) |-> r.got[c] + j]
        /\ Complete(r.snap) =>
              \A c \in Chan : r.msgs[c] = AppMsgs(recMsgs[r.snap][c])

\* Conservation (lines 306-309) on the report: balances plus messages in
\* flight are all the money.
ReportedConservation ==
    i = 0 => \A k \in 1..Len(Recorded) : LET r == Recorded[k] IN
        SumOver([p \in Proc |-> r.procs[p].bal], Proc)
          + SumOver([c \in Chan |-> SeqSum(r.msgs[c])], Chan) = TotalMoney

\* The reported local states are the spec's recProc.
ReportedRecordedState ==
    \A k \in 1..Len(Recorded) : LET r == Recorded[k] IN
        Complete(r.snap) => r.procs = recProc[r.snap]

\* Every snapshot the implementation reported is complete once the whole
\* trace is consumed.
ReportedComplete ==
    i = Len(Trace) => \A k \in 1..Len(Recorded) : Complete(Recorded[k].snap)

\* SnapshotsComplete (line 355), the state part a drained run must show: at
\* the end of a trace that claims a drained run every channel is empty and
\* every initiated snapshot complete.
ReportedSnapshotsComplete ==
    (Drained /\ i = Len(Trace)) =>
        /\ \A c \in Chan : chan[c] = <<>>
        /\ \A s \in Snap : Initiated(s) => Complete(s)

TraceAccepted ==
    LET d == TLCGet("stats").diameter IN
    IF d = Len(Trace) + 1
    THEN PrintT(<<"TraceAccepted: trace fully consumed", Len(Trace), "events">>)
    ELSE Print(<<"TraceAccepted: trace NOT accepted; events consumed", d - 1, "of", Len(Trace)>>, FALSE)

(* Shown instead of the variables in TLC's error traces: how far the trace *)
(* got, the next event, and the state it has to match.                     *)
TraceAlias ==
    [consumed |-> i,
     next     |-> IF i < Len(Trace) THEN Trace[i + 1] ELSE "none: trace fully consumed",
     procs    |-> proc,
     chans    |-> chan,
     recorded |-> recorded,
     recChan  |-> recChan,
     recMsgs  |-> recMsgs]

=============================================================================
