-- The per-key concurrency gate: give a slot back.
--
-- release(keys=[gate_key], args=[token]) -> 1 if the slot was held, 0 if its
-- lease had already expired and been purged.

return redis.call('ZREM', KEYS[1], ARGV[1])
