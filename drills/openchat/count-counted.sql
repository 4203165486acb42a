-- The fixed member count: the sum of the chat's counter slots, a primary
-- key range of 16 rows instead of a count over every member.
\set chat random(1, :chats)
SELECT SUM(members) FROM chat_counter WHERE chat_id = :chat;
