-- A user joins the hot chat (:chat). The join bumps the chat's member
-- count, so every join of the chat queues on that one row's lock, and
-- holds it for the rest of the join's work (writing the join event and
-- pushing it, 20 ms here as SLEEP): the shard takes at most about 50
-- joins of the chat a second, however many arrive.
\set user random(1, 2000000000)
BEGIN;
UPDATE chat SET members = members + 1 WHERE id = :chat;
INSERT INTO chat_member (chat_id, user_id) VALUES (:chat, :user);
DO SLEEP(0.02);
COMMIT;
