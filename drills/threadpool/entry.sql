\set id random(1, 10000)
SELECT id, posted_at, title FROM journal_entry WHERE id = :id;
