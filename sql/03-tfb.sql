-- SPDX-License-Identifier: MIT
-- The TechEmpower Framework Benchmarks layout, as TFB's own PostgreSQL set-up creates it: World (10,000 rows,
-- randomNumber uniform in 1..10000) and Fortune (TFB's 12 messages), unquoted (stored as world, fortune: what
-- preon and most entries query) and quoted ("World", "Fortune": for entries that quote identifiers).
-- Loading twice adds nothing.
CREATE TABLE IF NOT EXISTS World (
    id           integer NOT NULL PRIMARY KEY,
    randomNumber integer NOT NULL DEFAULT 0
);
INSERT INTO World (id, randomNumber)
SELECT x.id, least(floor(random() * 10000 + 1), 10000) FROM generate_series(1, 10000) AS x(id)
ON CONFLICT (id) DO NOTHING;

CREATE TABLE IF NOT EXISTS Fortune (
    id      integer NOT NULL PRIMARY KEY,
    message varchar(2048) NOT NULL
);
INSERT INTO Fortune (id, message) VALUES
    (1, 'fortune: No such file or directory'),
    (2, 'A computer scientist is someone who fixes things that aren''t broken.'),
    (3, 'After enough decimal places, nobody gives a damn.'),
    (4, 'A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1'),
    (5, 'A computer program does what you tell it to do, not what you want it to do.'),
    (6, 'Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen'),
    (7, 'Any program that runs right is obsolete.'),
    (8, 'A list is only as strong as its weakest link. — Donald Knuth'),
    (9, 'Feature: A bug with seniority.'),
    (10, 'Computers make very fast, very accurate mistakes.'),
    (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
    (12, 'フレームワークのベンチマーク')
ON CONFLICT (id) DO NOTHING;

CREATE TABLE IF NOT EXISTS "World" (
    id           integer NOT NULL PRIMARY KEY,
    randomNumber integer NOT NULL DEFAULT 0
);
INSERT INTO "World" (id, randomNumber)
SELECT x.id, least(floor(random() * 10000 + 1), 10000) FROM generate_series(1, 10000) AS x(id)
ON CONFLICT (id) DO NOTHING;

CREATE TABLE IF NOT EXISTS "Fortune" (
    id      integer NOT NULL PRIMARY KEY,
    message varchar(2048) NOT NULL
);
INSERT INTO "Fortune" (id, message) SELECT id, message FROM Fortune ON CONFLICT (id) DO NOTHING;
