-- Cursor pagination over the posts not deleted, newest first.
\set days random(0, 365)
SELECT id, title, posted_at FROM a
WHERE deleted_at IS NULL AND posted_at < now() - make_interval(days => :days)
ORDER BY posted_at DESC
LIMIT 20;
