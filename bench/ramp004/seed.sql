-- SPDX-License-Identifier: MIT
-- bench/ramp004's database: table fruits replaced by :rows rows with names of realistic length (38-70 characters,
-- e.g. "Golden Apple, organic, from Chile, lot 004711"), about 92 bytes a row on disk, so that 1.7 million rows
-- make some 150 MB of table (plus its primary key). Run into the bench's own PostgreSQL, never the tests':
--   psql -v rows=1700000 -f bench/ramp004/seed.sql
-- Deterministic: the same rows every time. The ids are 1..:rows; the journey's reads pick from that range.
\set ON_ERROR_STOP on
TRUNCATE fruits RESTART IDENTITY;
INSERT INTO fruits (name)
SELECT (ARRAY['Golden', 'Red', 'Green', 'Pink Lady', 'Blood', 'Honeycrisp', 'Wild', 'Dwarf', 'Giant', 'Sweet',
              'Sour', 'Early'])[1 + g % 12]
       || ' ' ||
       (ARRAY['Apple', 'Banana', 'Cherry', 'Durian', 'Elderberry', 'Fig', 'Grape', 'Kiwi', 'Lime', 'Mango',
              'Nectarine', 'Papaya', 'Pomelo', 'Quince', 'Raspberry', 'Tangerine'])[1 + (g / 12) % 16]
       || ', ' ||
       (ARRAY['organic', 'conventional', 'fair trade', 'greenhouse-grown', 'hand-picked'])[1 + (g / 192) % 5]
       || ', from ' ||
       (ARRAY['Chile', 'Spain', 'New Zealand', 'Costa Rica', 'Italy', 'South Africa', 'Thailand', 'Peru',
              'Morocco', 'the Netherlands'])[1 + (g / 960) % 10]
       || ', lot ' || lpad(((g::bigint * 7919) % 1000000)::text, 6, '0')
FROM generate_series(1, :rows) AS g
ORDER BY g;
VACUUM (ANALYZE) fruits;
SELECT count(*) AS rows, max(id) AS max_id, pg_relation_size('fruits') AS table_bytes,
       pg_total_relation_size('fruits') AS total_bytes
FROM fruits \gset
\echo seeded :rows rows, max id :max_id, table :table_bytes bytes, with its index :total_bytes bytes
