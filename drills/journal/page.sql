-- One page of the journal, newest first, after a cursor (the posting time
-- of the last entry the client saw), with each entry's total and its
-- attachments. Without an index on posted_at, every page reads and sorts
-- the whole entry table; without indexes on entry_id, the totals and the
-- attachment counts read the whole line and attachment tables.
\set back random(0, 99000)
SELECT e.id, e.posted_at, e.memo, sum(l.amount) AS total,
       (SELECT count(*) FROM journal_attachment a WHERE a.entry_id = e.id) AS attachments
  FROM (SELECT id, posted_at, memo
          FROM journal_entry
         WHERE deleted_at IS NULL AND posted_at < now() - make_interval(mins => :back)
         ORDER BY posted_at DESC
         LIMIT 20) AS e
  JOIN journal_line l ON l.entry_id = e.id
 GROUP BY e.id, e.posted_at, e.memo
 ORDER BY e.posted_at DESC;
