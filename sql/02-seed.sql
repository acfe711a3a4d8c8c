-- SPDX-License-Identifier: MIT
-- The three rows the published Go-vs-Quarkus test read. Loading twice adds nothing.
INSERT INTO fruits (name)
SELECT v.name FROM (VALUES (1, 'Kiwi'), (2, 'Durian'), (3, 'Pomelo')) AS v(ord, name)
WHERE NOT EXISTS (SELECT 1 FROM fruits)
ORDER BY v.ord;
