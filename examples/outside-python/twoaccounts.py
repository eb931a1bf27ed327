#!/usr/bin/env python3
"""The article's two accounts (P1 $100, P2 $50, a $30 transfer, a Chandy-Lamport
snapshot initiated by P2) run by a tiny Chandy-Lamport implementation of its
own, independent of markerwave. It logs only what its processes observe, in
markerwave's outsider format (markerwave-outsider/1, traces/outsider.schema.json),
on stdout: the messages sent and received with its own ids, the markers sent and
received, the moment each process records and the balance it recorded, and the
snapshot it reported. No counters, clocks or sequence numbers: it has none.
Python 3 standard library only.

  python3 twoaccounts.py                          # correct: the snapshot holds $150
  python3 twoaccounts.py --break no-channel-recording   # the $30 in flight vanishes
  python3 twoaccounts.py --break non-fifo         # P1's marker overtakes the $30
"""
import argparse, collections, json, sys

PROCS = ["P1", "P2"]
CHANS = [("P1", "P2"), ("P2", "P1")]
INIT_BAL = {"P1": 100, "P2": 50}


class Proc:
    def __init__(self, run, name, bal):
        self.run, self.name, self.bal = run, name, bal
        self.snaps = {}                      # snapshot id -> what this process recorded

    def log(self, ev, **fields):
        """One observation of this process, where it happens."""
        self.run.log.append(dict(node=self.name, ev=ev, **fields))

    def record(self, s):
        """Record the local state; start recording every incoming channel."""
        self.snaps[s] = {"bal": self.bal, "open": {c for c in CHANS if c[1] == self.name},
                         "msgs": collections.defaultdict(list)}
        self.log("record", snap=s, state={"bal": self.bal})

    def send_markers(self, s):
        for c in CHANS:
            if c[0] == self.name:
                self.run.chans[c].append(("marker", s))
                self.log("marker_send", to=c[1], snap=s)


class Run:
    def __init__(self, broken):
        self.broken, self.log = broken, []
        self.procs = {p: Proc(self, p, INIT_BAL[p]) for p in PROCS}
        self.chans = {c: collections.deque() for c in CHANS}
        self.next_id = 0

    def send(self, frm, to, amt):
        p = self.procs[frm]
        self.next_id += 1
        mid = "t%d" % self.next_id           # this implementation's own message id
        p.bal -= amt
        self.chans[(frm, to)].append(("app", mid, amt))
        p.log("send", to=to, id=mid, amount=amt)

    def initiate(self, name, s):             # the Initiator Rule
        p = self.procs[name]
        p.record(s)
        p.send_markers(s)

    def deliver(self, frm, to):
        q, c = self.procs[to], (frm, to)
        # A FIFO channel delivers its oldest frame; the broken one its newest.
        frame = self.chans[c].pop() if self.broken == "non-fifo" else self.chans[c].popleft()
        if frame[0] == "app":
            _, mid, amt = frame
            q.bal += amt
            q.log("recv", **{"from": frm}, id=mid, amount=amt)
            for r in q.snaps.values():       # recording this channel: keep the message
                if c in r["open"] and self.broken != "no-channel-recording":
                    r["msgs"][c].append(mid)
        else:                                # the Receiving Rule
            s = frame[1]
            q.log("marker_recv", **{"from": frm}, snap=s)
            if s not in q.snaps:
                q.record(s)                  # case 1: record, channel c recorded empty
                q.send_markers(s)
            q.snaps[s]["open"].discard(c)    # case 2: stop recording c

    def reported(self, s, initiator):
        """Snapshot s as the processes recorded it: balances, channel messages by id."""
        part = {name: p.snaps[s] for name, p in self.procs.items()}
        return {"snap": s, "initiator": initiator,
                "procs": {name: {"bal": r["bal"]} for name, r in part.items()},
                "chans": {"%s->%s" % c: {"ids": part[c[1]]["msgs"][c]} for c in CHANS if part[c[1]]["msgs"][c]}}

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--break", dest="broken", choices=["no-channel-recording", "non-fifo"],
                    help="break the algorithm: record no channel state, or let a channel's newest frame overtake")
    broken = ap.parse_args().broken
    run = Run(broken)
    run.send("P1", "P2", 30)                 # P1 sends $30 to P2
    run.initiate("P2", 0)                    # P2 records $50 and sends a marker to P1
    run.deliver("P2", "P1")                  # P1 records $70, sends its marker behind the $30
    run.deliver("P1", "P2")                  # P2 receives the $30 (recording P1->P2)
    run.deliver("P1", "P2")                  # P2 receives P1's marker: the snapshot is complete
    out = [{"format": "markerwave-outsider/1", "run": "two-accounts" + ("-" + broken if broken else ""),
            "topology": {"procs": PROCS, "channels": [{"from": f, "to": t} for f, t in CHANS]},
            "init_bal": INIT_BAL, "drained": True,
            "source": "examples/outside-python/twoaccounts.py" + (" --break " + broken if broken else "")}]
    out += run.log + [{"snapshot": run.reported(0, "P2")}]
    sys.stdout.write("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in out))


if __name__ == "__main__":
    main()
