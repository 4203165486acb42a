INSERT INTO events (payload) SELECT repeat(md5(random()::text), 16) FROM generate_series(1, 100);
