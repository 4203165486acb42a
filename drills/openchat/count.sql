-- The member count every member's app shows, for one of the :chats open
-- chats. With the query cache on, the result is cached, and every join
-- into the chat's table drops every cached result of that table under
-- the cache's one global lock.
\set chat random(1, :chats)
SELECT COUNT(*) FROM chat_member WHERE chat_id = :chat AND state = 'JOINED';
