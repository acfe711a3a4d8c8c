# SPDX-License-Identifier: MIT
"""bench/run.py's scenarios, in one registry. A scenario is a function fn(runner, i) (runner: run.py's Runner, which
runs a function on every target in turn and records what it returns; i: the scenario's place in the run, which
alternates the order of the targets) registered with @scenario(NAME, render=R, suite=SUITE): R(record, NAME)
(record: the run's results.json as a measure.record.Run) gives the Markdown lines of its section of report.md,
SUITE the suite (or a tuple of suites) of run.py's --suite it belongs to (besides `all`). A module registers its parameters (FULL, QUICK: the published durations and the --quick ones) with
params() and its charts with @plots. run.py's --scenario list, its --help, its runs and its report come from here,
in the order of registration:

  classic    hello, hello-latency, db, startup, footprint, limits, matrix, c10k, rounds (published_docker: the
             published Docker experiments beside limits and matrix)
  published  limits and matrix (each target's container image), build, 000, 001, 003, 004: the posts' tables in
             their own layouts, beside the posts' figures
  open004    ramp004: post 004 with an open workload
  fixed      fixed: the database path at fixed offered rates, open loop, CPU per request (not in a suite but all)
"""
import collections

Scenario = collections.namedtuple("Scenario", "name run render suite")

REGISTRY = {}  # name → Scenario, in the order of registration
FULL, QUICK = {}, {}  # every scenario's parameters (run.py's --set KEY=VALUE)
PLOTS = []  # fn(results, plot) per module, in the order of registration


def scenario(name, render, suite=None):
    """Registers the decorated fn(runner, i) as scenario `name`; render(record, name) → Markdown lines."""
    def register(fn):
        if name in REGISTRY:
            raise ValueError("scenario %r registered twice" % name)
        REGISTRY[name] = Scenario(name, fn, render, suite)
        return fn
    return register


def params(full, quick):
    """Registers a module's parameters: the published values and the --quick ones, the same keys in each."""
    assert set(full) == set(quick) and not set(full) & set(FULL), sorted(set(full) ^ set(quick))
    FULL.update(full)
    QUICK.update(quick)


def plots(fn):
    """Registers fn(results, plot), which draws a module's charts with run.py's plot(name, data, gnuplot script)."""
    PLOTS.append(fn)
    return fn


def _suites(s):
    return s.suite if isinstance(s.suite, tuple) else (s.suite,) if s.suite else ()


def names(suite="all"):
    """The scenarios of `suite` (all: every one), in the order of registration."""
    return [s.name for s in REGISTRY.values() if suite == "all" or suite in _suites(s)]


def suites():
    """Every suite's name: the ones scenarios name, and all."""
    return sorted({x for s in REGISTRY.values() for x in _suites(s)} | {"all"})


from . import classic, published, open004, fixed  # noqa: E402,F401 - they register themselves, in this order
