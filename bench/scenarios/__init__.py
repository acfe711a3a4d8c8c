# SPDX-License-Identifier: MIT
"""bench/run.py's scenarios beyond the classic ones: the published posts' tables (published) and post 004 with an
open workload (open004), with the published Docker experiments' tables (published_docker)."""
