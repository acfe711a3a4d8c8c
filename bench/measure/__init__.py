# SPDX-License-Identifier: MIT
"""preon's one library for measuring and reporting, used by every script in bench/ and by the load and fault
tests (tests/integration/harness.py): it never imports either. Modules:

  services  a private PostgreSQL, the release build, services under test, cgroups (processes through
            scripts/fixtures/supervise.py, which tests/ and deploy/stack/ use too)
  load      wrk, ab and pgbench runs and the parsers of their output
  proc      /proc readers: RSS, CPU seconds, threads, process trees; file sizes
  report    progress log, results header, Markdown tables, results.json + report.md
  closure   an artifact's runtime closure: shared libraries a slim image lacks, the JRE of a jar

and, imported by name (from measure import refdata; from measure.ramp import run_ramp):

  cpus              the CPU partition: load generator, target and PostgreSQL each in a CPU set
  container         image targets (docker run --network host), container limits and memory sampling
  images            each target's container image (preon's Dockerfile, the peers' images.sh), built when missing
  ramp              the ramp of virtual users, post 004's layout (its command line: python3 bench/measure/ramp.py)
  ramp_open         the open-workload drivers (bench/ramp004/cdriver, driver): build, run, parse, saturation point
  refdata           the published posts' figures as data (bench/reference/); run directly, it validates them
  rounds            a measurement's rounds merged into medians, and read back with their spread
  scaleup           post 003's scale-up: an HAProxy of its own, a fixed-rate probe, the figures (bench/scaleup.py)
  throughput_report bench/throughput.py's table, also rendered by bench/headline.py
"""
__all__ = ["ab", "parse_ab", "parse_pgbench", "parse_wrk", "pgbench", "wrk", "cpu_s", "cpu_share", "dir_bytes",
           "main_pid", "rss_kb", "stripped_size", "threads", "tree", "tree_cpu_s", "Spread", "fmt", "log", "md_table", "metric_table", "ratio",
           "results_header", "save", "HERE", "PG_SH", "REPO", "V1", "Cgroup", "Target", "build_preon", "free_port",
           "get", "hand_over", "preon_env", "private_postgres", "private_postgres_dir", "jre_bytes", "runtime_closure"]

from .closure import jre_bytes, runtime_closure  # noqa: F401
from .load import ab, parse_ab, parse_pgbench, parse_wrk, pgbench, wrk  # noqa: F401
from .proc import (cpu_s, cpu_share, dir_bytes, main_pid, rss_kb, stripped_size, threads, tree,  # noqa: F401
                   tree_cpu_s)
from .report import Spread, fmt, log, md_table, metric_table, ratio, results_header, save  # noqa: F401
from .services import (HERE, PG_SH, REPO, V1, Cgroup, Target, build_preon, free_port, get, hand_over, preon_env,  # noqa: F401
                       private_postgres, private_postgres_dir)
