# SPDX-License-Identifier: MIT
"""Rounds of one measurement: merge() makes one record of a target's rounds (each number the median of the rounds
that have it, the rounds kept under "rounds"), spread() reads a figure back as a Spread (median, min–max)."""
import statistics

from .report import Spread


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
