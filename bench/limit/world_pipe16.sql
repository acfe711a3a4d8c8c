-- SPDX-License-Identifier: MIT
-- pgbench script: 16 lookups of preon's /db statement, each with its own random id, behind one Sync
-- (pipeline mode). tps x 16 = what PostgreSQL answers per second. Used by bench/throughput.py:
-- pgbench -n -M prepared -c2 -j2 -T5 -f bench/limit/world_pipe16.sql preon
\set id1 random(1, 10000)
\set id2 random(1, 10000)
\set id3 random(1, 10000)
\set id4 random(1, 10000)
\set id5 random(1, 10000)
\set id6 random(1, 10000)
\set id7 random(1, 10000)
\set id8 random(1, 10000)
\set id9 random(1, 10000)
\set id10 random(1, 10000)
\set id11 random(1, 10000)
\set id12 random(1, 10000)
\set id13 random(1, 10000)
\set id14 random(1, 10000)
\set id15 random(1, 10000)
\set id16 random(1, 10000)
\startpipeline
SELECT id, randomNumber FROM World WHERE id = :id1;
SELECT id, randomNumber FROM World WHERE id = :id2;
SELECT id, randomNumber FROM World WHERE id = :id3;
SELECT id, randomNumber FROM World WHERE id = :id4;
SELECT id, randomNumber FROM World WHERE id = :id5;
SELECT id, randomNumber FROM World WHERE id = :id6;
SELECT id, randomNumber FROM World WHERE id = :id7;
SELECT id, randomNumber FROM World WHERE id = :id8;
SELECT id, randomNumber FROM World WHERE id = :id9;
SELECT id, randomNumber FROM World WHERE id = :id10;
SELECT id, randomNumber FROM World WHERE id = :id11;
SELECT id, randomNumber FROM World WHERE id = :id12;
SELECT id, randomNumber FROM World WHERE id = :id13;
SELECT id, randomNumber FROM World WHERE id = :id14;
SELECT id, randomNumber FROM World WHERE id = :id15;
SELECT id, randomNumber FROM World WHERE id = :id16;
\endpipeline
