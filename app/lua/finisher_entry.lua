-- A finisher's first look at its commit, in one round trip: the two set
-- sizes, whether the commit's current report version was notified (the
-- marker holds the version a notify wrote it for; a marker of an older
-- version is stale), and the lock if there is anything
-- to merge. A finisher that leaves at once (nothing processed, or the lock
-- busy) counts itself here too: in a stampede that is almost every finisher,
-- and the path costs one round trip instead of four.
-- KEYS: processing, processed, notified, lock, stats, version.
-- ARGV: lock token, lock lease (ms), stats TTL (s), the batch size (processed
-- uploads worth a merge while others are still processing).
local processing = redis.call('SCARD', KEYS[1])
local processed = redis.call('SCARD', KEYS[2])
local marker = redis.call('GET', KEYS[3])
local notified = 0
if marker and marker == (redis.call('GET', KEYS[6]) or '0') then
  notified = 1
end
local locked = 0
local leaving = false
if processed == 0 then
  leaving = 'early_exits'
elseif processing > 0 and processed < tonumber(ARGV[4]) then  -- not batch_ready
  leaving = 'batch_waits'
elseif redis.call('SET', KEYS[4], ARGV[1], 'NX', 'PX', ARGV[2]) then
  locked = 1
else
  leaving = 'lock_busy'
end
if leaving then
  redis.call('HINCRBY', KEYS[5], 'finisher_runs', 1)
  redis.call('HINCRBY', KEYS[5], leaving, 1)
  redis.call('EXPIRE', KEYS[5], ARGV[3])
end
return {processing, processed, notified, locked}
