# SPDX-License-Identifier: MIT
"""results.json as a typed record: one loader per shape that fails loudly, naming the file and the key path, on a
field it needs, instead of a getter that returns None and becomes a "-" in a report.

A bench/run.py record (Run) holds, per scenario and target, what the scenario's run returned, or what the runner
recorded when the target failed it ({"error": …, "log_tail": …}) or skipped it ({"skipped": …}). A cell of a
target that failed, and that the record says so, is a legitimate "-": cell() returns None. A key that a
successful target's record lacks is a RecordError: "bench/published/x/results.json: scenarios.001.go.rps missing".
Fields that older runs did not record yet are read with opt(), which says so at the call.

bench/throughput.py's record (Throughput) has a loader here too; bench/cost.py's
dataclasses are in cost_report, whose loader builds them with need() and of(). bench/scaleup.py's is still read as
JSON."""
import dataclasses
import json
import os
from typing import Optional

from .rounds import spread

RUN_SHAPE = ("date", "cpus", "quick", "targets", "params", "scenarios")  # every bench/run.py record since the first


class RecordError(Exception):
    """A results.json lacks a field its reader needs (or is not JSON)."""


def where_of(path):
    """A record's path as error messages name it: relative to the current folder when inside it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def load_json(path):
    """The JSON of results.json at `path`; a RecordError naming the file when it is not there or not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise RecordError("%s: %s" % (where_of(path), e)) from None


def need(obj, *keys, where="results.json", prefix=()):
    """obj[k1][k2]…; a RecordError "WHERE: k1.k2… missing" (the path with `prefix` before it) at the first key that
    is not there."""
    v = obj
    for i, k in enumerate(keys):
        if not isinstance(v, dict) or k not in v:
            raise RecordError("%s: %s missing" % (where, ".".join(str(x) for x in tuple(prefix) + keys[:i + 1])))
        v = v[k]
    return v


def failed(v):
    """Why a target's record of a scenario has no figures: the runner's error or skip reason, else None."""
    if isinstance(v, dict):
        if "error" in v:
            return v["error"]
        if "skipped" in v:
            return v["skipped"]
    return None


def kind(path):
    """Which script wrote results.json at `path`: run, throughput, cost or scaleup."""
    d = load_json(path)
    for name, keys in (("run", ("scenarios",)), ("throughput", ("variants",)), ("cost", ("servers",)),
                       ("scaleup", ("runs", "summary"))):
        if all(k in d for k in keys):
            return name
    raise RecordError("%s: not a record of bench/'s scripts (keys %s)" % (where_of(path), ", ".join(sorted(d))))


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Record:
    """What every record holds: the file it was read from, for error messages, the JSON as read (for json.dump,
    charts, and renderers that still read dicts), and the header every script writes (measure.results_header):
    machine, kernel and loadavg_start since 2026-12-01, partition since 2026-12-02, tcp_congestion_control since
    2026-12-03 (measure/tcp.py), cpu_model and runtimes since 2026-12-04, host since 2026-12-05 (measure/machine.py)."""
    where: str
    raw: dict = dataclasses.field(repr=False)
    date: str
    cpus: int
    machine: Optional[str] = None
    kernel: Optional[str] = None
    loadavg_start: Optional[list] = None
    partition: Optional[dict] = None
    tcp_congestion_control: Optional[str] = None
    cpu_model: Optional[str] = None  # since 2026-12-04 (measure/machine.py), with runtimes
    runtimes: Optional[dict] = None
    host: Optional[dict] = None  # since 2026-12-05 (measure/machine.py): caches, memory, kernel build

    def need(self, *keys):
        """raw[k1][k2]…, a RecordError naming this file and the key path when one is missing."""
        return need(self.raw, *keys, where=self.where)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run(_Record):
    """The top level of a bench/run.py results.json. command and args are in every run since 2026-12-01, ramp004
    (the open workload's ceiling) in its runs."""
    quick: bool
    targets: list
    params: dict
    scenarios: dict  # scenario → target → what it recorded
    command: Optional[str] = None
    args: Optional[dict] = None
    ramp004: Optional[dict] = None

    def runs(self, s):
        """Scenario s's records by target ({} when s was not run)."""
        return self.scenarios.get(s, {})

    def result(self, s, n):
        """Target n's record of scenario s; None when s was not run or n failed it and the record says so."""
        if s not in self.scenarios:
            return None
        v = need(self.scenarios, s, n, where=self.where, prefix=("scenarios",))
        return None if failed(v) is not None else v

    def cell(self, s, n, *keys):
        """scenarios[s][n][keys…]: None when target n failed s (or s was not run), a RecordError when missing."""
        v = self.result(s, n)
        return None if v is None else need(v, *keys, where=self.where, prefix=("scenarios", s, n))

    def opt(self, s, n, *keys):
        """scenarios[s][n][keys…] for a field that older runs did not record: None when it is absent."""
        v = self.result(s, n)
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        return v

    def spread(self, s, n, *keys):
        """A figure as a Spread (median, min–max) where it was measured in rounds; cell()'s None and RecordError."""
        if self.cell(s, n, *keys) is None:
            return None
        return spread(self.result(s, n), *keys)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Throughput(_Record):
    """The top level of a bench/throughput.py results.json: per variant (plain, pgss) the medians by test and
    target, the peak RSS by target and, for pgss, the statements tracked."""
    command: str
    args: dict
    status: dict  # target → "ok" or why it did not run
    postgres: str
    variants: dict
    preon_commit: Optional[str] = None
    loadavg_end: Optional[list] = None


def load_throughput(path):
    """bench/throughput.py's results.json at `path` as a Throughput."""
    return _typed(Throughput, load_json(path), where_of(path),
                  ("date", "cpus", "command", "args", "status", "postgres", "variants"))


def of(cls, d, where, prefix=()):
    """A dataclass `cls` of the dict `d` (at key path `prefix` of the file `where`): every field of cls, a RecordError
    naming the file and the key path when one is missing; keys cls has no field for are left out."""
    return cls(**{f.name: need(d, f.name, where=where, prefix=prefix) for f in dataclasses.fields(cls)})


def _typed(cls, d, where, required):
    """A dataclass `cls` of JSON `d`: its `required` fields a RecordError naming `where` when missing, the others
    None when absent."""
    fields = {k: need(d, k, where=where) for k in required}
    optional = {f.name: d.get(f.name) for f in dataclasses.fields(cls)
                if f.name not in required and f.name not in ("where", "raw")}
    return cls(where=where, raw=d, **fields, **optional)


def run_from(results, where="this run's results"):
    """A bench/run.py record from its JSON (a dict): a RecordError naming `where` on a missing top-level field."""
    if isinstance(results, Run):
        return results
    return _typed(Run, results, where, RUN_SHAPE)


def load(path):
    """bench/run.py's results.json at `path` as a Run."""
    return run_from(load_json(path), where_of(path))
