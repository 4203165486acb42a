-- A user joins the hot chat (:chat): insert the member unless the user or
-- the nickname is already there. INSERT … SELECT does not know how many
-- rows it will insert, so InnoDB treats it as a bulk insert: with
-- innodb_autoinc_lock_mode = 1 it holds the table's AUTO-INC lock until the
-- statement ends, NOT EXISTS scan included, and every other join queues
-- behind it. Under REPEATABLE READ the NOT EXISTS scan also locks the gap
-- where the new row goes, and two joins' inserts into that gap deadlock.
\set user random(1, 2000000000)
INSERT INTO chat_member (chat_id, user_id, nickname, state)
SELECT :chat, :user, CONCAT('nick', :user), 'JOINED' FROM DUAL
WHERE NOT EXISTS (
    SELECT 1 FROM chat_member
    WHERE chat_id = :chat AND (user_id = :user OR nickname = CONCAT('nick', :user))
);
