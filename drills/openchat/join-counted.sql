-- The fixed join: the same insert, then the member counter of the chat
-- moves by the rows it inserted (ROW_COUNT(): 0 when the user was already
-- there), on one of 16 slots so that joins do not queue on one row.
\set user random(1, 2000000000)
\set slot random(0, 15)
INSERT INTO chat_member (chat_id, user_id, nickname, state)
SELECT :chat, :user, CONCAT('nick', :user), 'JOINED' FROM DUAL
WHERE NOT EXISTS (
    SELECT 1 FROM chat_member
    WHERE chat_id = :chat AND (user_id = :user OR nickname = CONCAT('nick', :user))
);
UPDATE chat_counter SET members = members + ROW_COUNT() WHERE chat_id = :chat AND slot = :slot;
