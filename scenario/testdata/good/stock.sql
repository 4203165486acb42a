SELECT `a` FROM t WHERE b = 'it\'s'; # a comment
\set id random(1, 10)
UPDATE t SET a = a + 1 WHERE id = :id;
