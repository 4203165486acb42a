-- A small accounting journal. Entries (A) are posted over about ten weeks;
-- each has two lines (B, the debit and the credit) and one in ten has an
-- attachment (C). B and C point at A, but, as in many schemas that grew
-- without a DBA, nothing indexes those relation columns, and the entry's
-- posting time is not indexed either: only the primary keys are.
CREATE TABLE journal_entry (
    id         bigint PRIMARY KEY,
    account_id integer NOT NULL,
    memo       text NOT NULL,
    posted_at  timestamptz NOT NULL,
    deleted_at timestamptz                -- soft delete: one entry in twenty
);
CREATE TABLE journal_line (
    id       bigint PRIMARY KEY,
    entry_id bigint NOT NULL,             -- → journal_entry.id, no index
    account  text NOT NULL,
    amount   numeric(12, 2) NOT NULL
);
CREATE TABLE journal_attachment (
    id        bigint PRIMARY KEY,
    entry_id  bigint NOT NULL,            -- → journal_entry.id, no index
    file_name text NOT NULL
);

INSERT INTO journal_entry (id, account_id, memo, posted_at, deleted_at)
SELECT g, g % 500, 'entry ' || g || ' for account ' || g % 500,
       now() - (100000 - g) * interval '1 minute',
       CASE WHEN g % 20 = 0 THEN now() END
  FROM generate_series(1, 100000) AS g;
INSERT INTO journal_line (id, entry_id, account, amount)
SELECT g, (g + 1) / 2, CASE WHEN g % 2 = 0 THEN 'cash' ELSE 'revenue' END,
       CASE WHEN g % 2 = 0 THEN 1 ELSE -1 END * (g % 997 + 1)
  FROM generate_series(1, 200000) AS g;
INSERT INTO journal_attachment (id, entry_id, file_name)
SELECT g, g * 10, 'receipt-' || g || '.pdf'
  FROM generate_series(1, 10000) AS g;
ANALYZE journal_entry, journal_line, journal_attachment;
