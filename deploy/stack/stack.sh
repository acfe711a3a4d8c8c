#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# preon past one process, on loopback: etcd, a Patroni cluster of three PostgreSQL nodes, HAProxy, PgBouncer and N
# preon replicas behind HAProxy (docs/operations.md, "The whole stack on loopback"). deploy/stack/stack.py does the
# work; `stack.sh --help` lists the commands (up [N], down, status, urls, preon-start I, preon-stop I,
# patroni-start I, patroni-stop I) and the environment they read.
exec /usr/bin/python3 "$(dirname "$0")/stack.py" "$@"
