-- SPDX-License-Identifier: MIT
-- One World lookup per transaction, no pipelining: what PostgreSQL answers when every query is its own implicit
-- transaction (pgbench -n -M prepared -c16 -j2): the ceiling of a /db that keeps a Sync after every query.
\set id random(1, 10000)
SELECT id, randomNumber FROM World WHERE id = :id;
