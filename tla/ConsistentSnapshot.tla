------------------------- MODULE ConsistentSnapshot -------------------------
(***************************************************************************)
(* The Chandy-Lamport snapshot, abstractly: what any marker protocol must *)
(* do, with the markers taken away.  BarrierSnapshots.tla (aligned,       *)
(* unaligned, cyclic) and BarrierAdaptive.tla refine it                   *)
(* (SnapshotRefinement, BarrierSnapshots.tla, at its end).                 *)
(*                                                                         *)
(* Nodes exchange messages over FIFO channels Edge.  Every message is     *)
(* coloured when it is sent: pre if its sender had not recorded, post if  *)
(* it had.  A node records whenever it likes (ARecord); the snapshot is   *)
(* consistent because of one rule: a node that has not recorded never    *)
(* takes a post message (ATake).  A pre message taken by a node that has *)
(* recorded is in flight at the cut: it joins its channel's recorded     *)
(* state, in order (chan).  Once every node has recorded, the channels    *)
(* hold only post messages and the ones of chan's still to come; ARestart *)
(* restarts every channel with exactly its channel state.                  *)
(*                                                                         *)
(* The messages' contents are their identity id, which the abstract spec *)
(* leaves free: it says which message is taken and where it goes, not    *)
(* what it holds.  The actions are written as relations on the primed    *)
(* state (the message appended is whatever the next state holds), so the *)
(* module is meant to be instantiated and checked as a property, not run *)
(* as a specification of its own.                                          *)
(***************************************************************************)
EXTENDS Naturals, Sequences

CONSTANTS
    Node,  \* the nodes
    Edge   \* the channels: pairs <<m, n>>, m sends to n

VARIABLES
    chq,       \* [Edge -> Seq([id, pre])]: each channel's messages, coloured
    cut,       \* SUBSET Node: the nodes that have recorded
    chan,      \* [Edge -> Seq(id)]: each channel's recorded state so far
    restarted  \* has the system been restarted from the snapshot?

svars == <<chq, cut, chan, restarted>>

Out(n) == {e \in Edge : e[1] = n}

(* The message appended to channel t in this step, and its colour: pre   *)
(* iff its sender n has not recorded.                                      *)
Appended(t, n) ==
    /\ Len(chq'[t]) > 0
    /\ chq'[t][Len(chq'[t])].pre = (n \notin cut)

(* Take the head of e; a pre message taken after recording is channel   *)
(* state.                                                                  *)
TakeHead(e) ==
    LET m == Head(chq[e])
    IN  /\ chq[e] # <<>>
        /\ m.pre \/ e[2] \in cut               \* the one rule: no post message before recording
        /\ chan' = IF m.pre /\ e[2] \in cut THEN [chan EXCEPT ![e] = Append(@, m.id)] ELSE chan

SInit ==
    /\ chq = [e \in Edge |-> <<>>]
    /\ cut = {}
    /\ chan = [e \in Edge |-> <<>>]
    /\ restarted = FALSE

(* A node sends a message on channel t (a source's emit). *)
ASend(n, t) ==
    /\ Appended(t, n)
    /\ chq' = [chq EXCEPT ![t] = Append(@, chq'[t][Len(chq'[t])])]
    /\ UNCHANGED <<cut, chan, restarted>>

(* A node takes the head of e and keeps it (a sink). *)
ATake(e) ==
    /\ TakeHead(e)
    /\ chq' = [chq EXCEPT ![e] = Tail(@)]
    /\ UNCHANGED <<cut, restarted>>

(* A node takes the head of e and sends a message on t in one step. *)
AMove(e, t) ==
    /\ TakeHead(e)
    /\ Appended(t, e[2])
    /\ chq' = [chq EXCEPT ![e] = Tail(@), ![t] = Append(@, chq'[t][Len(chq'[t])])]
    /\ UNCHANGED <<cut, restarted>>

(* A node records (its local state: the abstract spec leaves it out). *)
ARecord(n) ==
    /\ n \notin cut
    /\ cut' = cut \cup {n}
    /\ UNCHANGED <<chq, chan, restarted>>

(* The channel state of e: the pre messages taken after recording, then *)
(* the pre messages still in flight.                                       *)
ChannelState(e) ==
    chan[e] \o [j \in 1..Len(SelectSeq(chq[e], LAMBDA m : m.pre)) |->
                   SelectSeq(chq[e], LAMBDA m : m.pre)[j].id]

(* Once every node has recorded, restart every channel with its channel *)
(* state (pre: sent before the cut), once.                                 *)
ARestart ==
    /\ cut = Node
    /\ ~restarted
    /\ restarted' = TRUE
    /\ chq' = [e \in Edge |-> [j \in 1..Len(ChannelState(e)) |-> [id |-> ChannelState(e)[j], pre |-> TRUE]]]
    /\ chan' = [e \in Edge |-> <<>>]
    /\ UNCHANGED cut

SNext ==
    \/ \E n \in Node, t \in Edge : t[1] = n /\ ASend(n, t)
    \/ \E e \in Edge : ATake(e)
    \/ \E e, t \in Edge : t[1] = e[2] /\ AMove(e, t)
    \/ \E n \in Node : ARecord(n)
    \/ ARestart

SSpec == SInit /\ [][SNext]_svars

=============================================================================
