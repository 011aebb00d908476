-- The per-key concurrency gate: give a slot back, or take a pending marker away.
--
-- release(keys=[gate_key], args=[member]) -> 1 if it was there, 0 if it had
-- already expired and been purged.
--
-- member: a holder's token, or a pending marker whose copy could
-- never be enqueued (so that it covers no message).

return redis.call('ZREM', KEYS[1], ARGV[1])
