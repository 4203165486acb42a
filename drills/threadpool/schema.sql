-- The journal's entries, looked up by id: the database answers each
-- request in well under a millisecond, so what the drill measures is
-- the service in front of it.
DROP TABLE IF EXISTS journal_entry;
CREATE TABLE journal_entry (
  id        int PRIMARY KEY,
  posted_at timestamptz NOT NULL,
  title     text NOT NULL
);
INSERT INTO journal_entry
SELECT g, now() - g * interval '1 minute', 'entry ' || g
FROM generate_series(1, 10000) g;
ANALYZE journal_entry;
