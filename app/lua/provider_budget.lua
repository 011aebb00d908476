-- Spend one provider call of a repository's budget (a GCRA: the bucket kept as
-- its theoretical arrival time), or answer how long until one is allowed.
-- KEYS: the repository's theoretical arrival time (ms).
-- ARGV: now (ms), ms per call, burst (calls). Answers 0 (spent) or the ms to wait.
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local after = tat + interval
local wait = after - now - interval * tonumber(ARGV[3])
if wait > 0 then return math.ceil(wait) end
redis.call('SET', KEYS[1], after, 'PX', math.ceil(after - now))
return 0
