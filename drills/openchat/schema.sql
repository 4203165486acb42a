-- An open chat's members: one row per join, with a surrogate AUTO_INCREMENT
-- id, as the messenger's table had. The join checks for a duplicate member
-- or nickname through the two secondary indexes; the member count reads
-- chat_state.
CREATE TABLE chat_member (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    chat_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    nickname VARCHAR(64) NOT NULL,
    state VARCHAR(16) NOT NULL DEFAULT 'JOINED',
    joined_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    KEY chat_user (chat_id, user_id),
    KEY chat_nick (chat_id, nickname),
    KEY chat_state (chat_id, state)
) ENGINE=InnoDB;

-- The fixed variant's member counter, split into 16 slots per chat so
-- that concurrent joins do not queue on one row: a chat's count is the
-- sum of its slots.
CREATE TABLE chat_counter (
    chat_id BIGINT NOT NULL,
    slot INT NOT NULL,
    members BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (chat_id, slot)
) ENGINE=InnoDB;
INSERT INTO chat_counter (chat_id, slot, members) SELECT c.seq, s.seq, 0 FROM seq_1_to_2000 c, seq_0_to_15 s;
