#!/usr/bin/env python3
"""The article's two accounts (P1 $100, P2 $50, a $30 transfer, a Chandy-Lamport
snapshot initiated by P2) run by a tiny Chandy-Lamport implementation of its
own, independent of markerwave, printing its run as a markerwave trace
(traces/trace.schema.json) on stdout. Python 3 standard library only.

  python3 twoaccounts.py                          # correct: the snapshot holds $150
  python3 twoaccounts.py --break no-channel-recording   # the $30 in flight vanishes
  python3 twoaccounts.py --break non-fifo         # P1's marker overtakes the $30
"""
import argparse, collections, json, sys

PROCS = ["P1", "P2"]                       # sorted: vector clocks follow this order
CHANS = [("P1", "P2"), ("P2", "P1")]
INIT_BAL = {"P1": 100, "P2": 50}


class Proc:
    def __init__(self, name, bal):
        self.name, self.bal, self.sent, self.rcvd, self.seq = name, bal, 0, 0, 0
        self.vc = [0] * len(PROCS)
        self.nsent = collections.Counter()   # messages sent per outgoing channel
        self.ngot = collections.Counter()    # messages received per incoming channel
        self.snaps = {}                      # snapshot id -> what this process recorded

    def state(self):
        return {"bal": self.bal, "sent": self.sent, "rcvd": self.rcvd}

    def record(self, s):
        """Record the local state and the cut seqs; start recording every incoming channel."""
        ins = [c for c in CHANS if c[1] == self.name]
        self.snaps[s] = {"state": self.state(), "open": set(ins), "msgs": collections.defaultdict(list),
                         "got": {c: self.ngot[c] for c in ins},
                         "sent": {c: self.nsent[c] for c in CHANS if c[0] == self.name}}

class Run:
    def __init__(self, broken):
        self.broken, self.events = broken, []
        self.procs = {p: Proc(p, INIT_BAL[p]) for p in PROCS}
        self.chans = {c: collections.deque() for c in CHANS}

    def step(self, p, action, **fields):
        """Tick p's clock and log the step as a markerwave event."""
        p.seq += 1
        p.vc[PROCS.index(p.name)] += 1
        self.events.append(dict(proc=p.name, seq=p.seq, action=action, **fields, after=p.state(), vc=list(p.vc)))

    def send_markers(self, p, s):
        for c in CHANS:
            if c[0] == p.name:
                self.chans[c].append(("marker", s, list(p.vc)))

    def send(self, frm, to, amt):
        p = self.procs[frm]
        p.bal, p.sent = p.bal - amt, p.sent + 1
        p.nsent[(frm, to)] += 1
        self.step(p, "SendApp", **{"from": frm, "to": to}, amount=amt, msg=p.nsent[(frm, to)])
        self.chans[(frm, to)].append(("app", amt, p.nsent[(frm, to)], list(p.vc)))

    def initiate(self, name, s):            # the Initiator Rule
        p = self.procs[name]
        p.record(s)
        self.step(p, "Initiate", snap=s)
        self.send_markers(p, s)

    def deliver(self, frm, to):
        q, c = self.procs[to], (frm, to)
        # A FIFO channel delivers its oldest frame; the broken one its newest.
        frame = self.chans[c].pop() if self.broken == "non-fifo" else self.chans[c].popleft()
        q.vc = [max(a, b) for a, b in zip(q.vc, frame[-1])]
        if frame[0] == "app":
            _, amt, n, _ = frame
            q.bal, q.rcvd = q.bal + amt, q.rcvd + 1
            q.ngot[c] += 1
            for r in q.snaps.values():       # recording this channel: keep the message
                if c in r["open"] and self.broken != "no-channel-recording":
                    r["msgs"][c].append({"amt": amt, "seq": n})
            self.step(q, "RecvApp", **{"from": frm, "to": to}, amount=amt, msg=n)
        else:                                # the Receiving Rule
            s, first = frame[1], frame[1] not in q.snaps
            if first:
                q.record(s)                  # case 1: record, channel c recorded empty
            q.snaps[s]["open"].discard(c)    # case 2: stop recording c
            self.step(q, "RecvMarker", **{"from": frm, "to": to}, snap=s, first=first)
            if first:
                self.send_markers(q, s)

    def recorded(self, s, initiator):
        """Snapshot s as the processes recorded it: states, channel messages, cut seqs."""
        part = {name: p.snaps[s] for name, p in self.procs.items()}
        return {"snap": s, "initiator": initiator,
                "procs": {name: r["state"] for name, r in part.items()},
                "chans": {"%s->%s" % c: {"msgs": part[c[1]]["msgs"][c], "sent": part[c[0]]["sent"][c],
                                         "got": part[c[1]]["got"][c]} for c in CHANS}}

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--break", dest="broken", choices=["no-channel-recording", "non-fifo"],
                    help="break the algorithm: record no channel state, or let a channel's newest frame overtake")
    broken = ap.parse_args().broken
    run = Run(broken)
    run.send("P1", "P2", 30)                 # P1 sends $30 to P2
    run.initiate("P2", 1)                    # P2 records $50 and sends a marker to P1
    run.deliver("P2", "P1")                  # P1 records $70, sends its marker behind the $30
    run.deliver("P1", "P2")                  # P2 receives the $30 (recording P1->P2)
    run.deliver("P1", "P2")                  # P2 receives P1's marker: the snapshot is complete
    out = [{"format": "markerwave-trace/3", "topology": {"procs": PROCS, "channels": [{"from": f, "to": t} for f, t in CHANS]},
            "init_bal": INIT_BAL, "snaps": {"1": "P2"}, "drained": True,
            "source": "examples/outside-python/twoaccounts.py" + (" --break " + broken if broken else "")}]
    out += run.events + [{"recorded": run.recorded(1, "P2")}]
    sys.stdout.write("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in out))


if __name__ == "__main__":
    main()
