-- One shard of the messenger's chats: each chat's state row (its member
-- count, bumped by every join) and its members. The hot chat is chat 1
-- on shard1; shard2 holds the other chats, read by their members.
CREATE TABLE chat (
    id BIGINT PRIMARY KEY,
    members BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB;
INSERT INTO chat (id) SELECT seq FROM seq_1_to_2000;
CREATE TABLE chat_member (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    chat_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    joined_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    KEY chat_user (chat_id, user_id)
) ENGINE=InnoDB;
