-- The per-key concurrency gate: coalescing at enqueue.
--
-- mark(
--   keys=[gate_key],
--   args=[message_id, pending_ttl_ms, marker_prefix]
-- ) -> {marked, pending_message_id}
--
-- $gate_key
--   The gate's sorted set of one key (see acquire.lua): holders (tokens)
--   and pending markers "<marker_prefix><message_id>", each scored by its
--   expiry in ms of Redis server time.
--
-- A live marker of this actor and queue already stands: its message has not
-- started, and its run will do the work of this one: {0, its message id}
-- (the caller drops this message). None stands: this message's marker is set,
-- to expire in pending_ttl_ms unless the message starts first: {1, ""} (the
-- caller enqueues it). One key, so one hash slot on Redis Cluster.

local key = KEYS[1]
local message_id, pending_ttl = ARGV[1], tonumber(ARGV[2])
local scope = (ARGV[3] and ARGV[3] ~= '') and ARGV[3] or 'p:'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

for _, member in ipairs(redis.call('ZRANGEBYSCORE', key, '(' .. now, '+inf')) do
  if string.sub(member, 1, #scope) == scope then
    return {0, string.sub(member, #scope + 1)}
  end
end
redis.call('ZADD', key, now + pending_ttl, scope .. message_id)
local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', key, math.floor(tonumber(top[2])) + 1000)
return {1, ''}
