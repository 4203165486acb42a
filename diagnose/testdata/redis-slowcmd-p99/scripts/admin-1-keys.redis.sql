# An O(N) command over every key: what a "find the keys" admin page does.
KEYS firedrill:key:1*
