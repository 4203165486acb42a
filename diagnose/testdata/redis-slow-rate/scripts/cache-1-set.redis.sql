# One SET of a random key, as a cache's writers do: fast, O(1), and
# appended to the AOF.
\set id random(1, 100000)
SET cache::id :id
