# SPDX-License-Identifier: MIT
"""Rounds of one measurement: order() says in which order the targets run in a round, merge() makes one record of a
target's rounds (each number the median of the rounds that have it, the rounds kept under "rounds"), spread() reads a
figure back as a Spread (median, min–max)."""
import statistics

from .report import Spread

# How the targets take turns from round to round (order() below), and what a report says of each. A record from before
# the choice existed ran "rotated".
ORDERS = {"rotated": "the order of the targets rotated",
          "alternating": "the order of the targets rotated every two rounds and run backwards every other round"}


def order(items, r, how):
    """`items` in the order round `r` (from 0) runs them. "rotated": round r starts at item r, so each item leads in
    turn, but always right after the same neighbour (a run-order effect then sides with one of two identical servers:
    the 2026-12-03 twin record, 1.04-1.32x in all five rounds). "alternating": rotated every two rounds, and every other
    round backwards, so that each item runs after any other in half the rounds and before it in the others, and takes
    each place as often (exactly so over 2 x len(items) rounds; nearly so over fewer)."""
    n = len(items)
    if n == 0:
        return []
    if how == "rotated":
        k = r % n
        return items[k:] + items[:k]
    if how != "alternating":
        raise ValueError("unknown order %r (one of %s)" % (how, ", ".join(ORDERS)))
    k = (r // 2) % n
    turn = items[k:] + items[:k]
    return turn[::-1] if r % 2 else turn


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def merge(rounds):
    """One record from a list of per-round records (dicts): numbers → the median of the rounds that measured
    them, dicts merged key by key, anything else the first round's value, or every distinct value joined with
    "; " where the rounds differ (an outcome such as "ok; OOM"). The rounds are kept under "rounds"."""
    def one(vals):
        vals = [v for v in vals if v is not None]
        if not vals:
            return None
        if all(isinstance(v, dict) for v in vals):
            keys = []
            for v in vals:
                keys += [k for k in v if k not in keys]
            return {k: one([v.get(k) for v in vals]) for k in keys}
        if all(_number(v) for v in vals):
            return statistics.median(vals)
        distinct = []
        for v in vals:
            if v not in distinct:
                distinct.append(v)
        return distinct[0] if len(distinct) == 1 or not all(isinstance(v, str) for v in distinct) \
            else "; ".join(distinct)
    out = one(rounds)
    out["rounds"] = rounds
    return out


def spread(record, *keys):
    """record[keys...] as a Spread over record["rounds"] when it has rounds, else the plain figure (or None)."""
    def dig(v):
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        return v
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("rounds"), list):
        vals = [x for x in (dig(r) for r in record["rounds"]) if _number(x)]
        return Spread(vals) if vals else None
    return dig(record)
