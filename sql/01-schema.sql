-- SPDX-License-Identifier: MIT
-- The fruits entity of Quarkus's reactive SQL client guide, so that preon, Quarkus and Go services can share it.
CREATE TABLE IF NOT EXISTS fruits (
    id   SERIAL PRIMARY KEY,
    name TEXT NOT NULL
);
