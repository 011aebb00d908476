-- The per-key concurrency gate: extend the leases of live holders of one key.
--
-- renew(
--   keys=[gate_key],
--   args=[token_1, lease_ms_1, token_2, lease_ms_2, ...]
-- ) -> the tokens that are no longer held (their lease ran out and was purged)
--
-- Each lease is extended to now + its lease_ms, in ms of Redis server time.

local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lost = {}
for i = 1, #ARGV, 2 do
  if redis.call('ZSCORE', key, ARGV[i]) then
    redis.call('ZADD', key, now + tonumber(ARGV[i + 1]), ARGV[i])
  else
    table.insert(lost, ARGV[i])
  end
end
local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
if top[2] then redis.call('PEXPIREAT', key, math.floor(tonumber(top[2])) + 1000) end
return lost
