-- A member of another chat opens it: its member count, from shard2.
\set chat random(2, 2000)
SELECT members FROM chat WHERE id = :chat;
