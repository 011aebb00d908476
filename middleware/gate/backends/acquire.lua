-- The per-key concurrency gate: take a slot of one key, or say why not.
--
-- acquire(
--   keys=[gate_key],
--   args=[token, limit, lease_ms, message_id, skip_if_pending, pending_ttl_ms, debounce_ms,
--         marker_prefix]
-- ) -> {decision, holders, reclaimed[, pending_message_id]}
--
-- $gate_key
--   A sorted set. Each live holder is a member, its token, scored by its
--   lease expiry in ms of Redis server time (TIME), so workers' clocks never
--   matter. At most one member "<marker_prefix><message_id>" per actor and
--   queue marks that actor's deferred copy pending for the key on that queue,
--   scored by its own expiry. marker_prefix is
--   "p:<length of the actor's name>:<actor name>:<queue name>/", so a message
--   is only ever covered by a copy of its own actor (actors sharing a key need
--   not do each other's work) waiting on its own queue (a copy behind one
--   queue's backlog never holds back a message sent ahead on another); empty,
--   every "p:" marker counts.
--
-- decision: 1 acquired (run), 2 defer (enqueue a delayed copy),
--           3 skip (over the limit, or debouncing, and another message's copy is pending),
--           4 debounce (this message opens the key's window: enqueue its copy, due
--             when the window closes; its marker is set). debounce_ms is 0 for
--             the copy itself and for actors without a window.
-- holders:  live holders after the decision. reclaimed: expired leases purged.
-- pending_message_id: with decision 3, the message whose copy is pending.
-- Holders count across actors (a key's limit is shared); markers are per actor.

local key = KEYS[1]
local token, limit, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local skip_if_pending, pending_ttl = ARGV[5] == '1', tonumber(ARGV[6])
local debounce = tonumber(ARGV[7] or '0')
local scope = (ARGV[8] and ARGV[8] ~= '') and ARGV[8] or 'p:'
local mine = scope .. ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- The key lives as long as its longest lease or marker, so idle keys vanish.
local function expire_with_members()
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if top[2] then redis.call('PEXPIREAT', key, math.floor(tonumber(top[2])) + 1000) end
end

-- A dead holder stops renewing: purge it once its own lease has run out.
local reclaimed = 0
local expired = redis.call('ZRANGEBYSCORE', key, '-inf', now)
for _, member in ipairs(expired) do
  if string.sub(member, 1, 2) ~= 'p:' then reclaimed = reclaimed + 1 end
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', key, '-inf', now) end

local holders, pending = 0, false
for _, member in ipairs(redis.call('ZRANGE', key, 0, -1)) do
  if string.sub(member, 1, 2) ~= 'p:' then
    holders = holders + 1
  elseif string.sub(member, 1, #scope) == scope then
    pending = member
  end
end

-- A window is open (another message's copy pending): this message is covered.
-- None is: open one, with this message's marker (a redelivery finds its own).
if debounce > 0 then
  if pending and pending ~= mine then
    return {3, holders, reclaimed, string.sub(pending, #scope + 1)}
  end
  redis.call('ZADD', key, now + math.max(pending_ttl, debounce + 1000), mine)
  expire_with_members()
  return {4, holders, reclaimed}
end

if holders < limit then
  redis.call('ZADD', key, now + lease, token)
  -- The pending copy starts now: from here on, it no longer covers anyone.
  if pending == mine then redis.call('ZREM', key, mine) end
  expire_with_members()
  return {1, holders + 1, reclaimed}
end
if skip_if_pending and pending and pending ~= mine then
  return {3, holders, reclaimed, string.sub(pending, #scope + 1)}
end
if skip_if_pending then
  redis.call('ZADD', key, now + pending_ttl, mine)
  expire_with_members()
end
return {2, holders, reclaimed}
