-- SPDX-License-Identifier: MIT
-- pgbench script: preon's /fruits statement 16 times behind one Sync (pipeline mode). tps x 16 = what
-- PostgreSQL answers per second. Used by bench/throughput.py:
-- pgbench -n -M prepared -c2 -j2 -T5 -f bench/limit/fruits_pipe16.sql preon
\startpipeline
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
SELECT id, name FROM fruits ORDER BY id;
\endpipeline
