CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL DEFAULT 0);
INSERT INTO accounts SELECT g FROM generate_series(1, 1000) g;
