-- The per-key concurrency gate: take a slot of one key, or say why not.
--
-- acquire(
--   keys=[gate_key],
--   args=[token, limit, lease_ms, message_id, skip_if_pending, pending_ttl_ms, debounce_ms,
--         scope]
-- ) -> {decision, holders, reclaimed[, pending_message_id]}
--
-- $gate_key
--   A sorted set. Each live holder is a member "h:<token>" scored by its
--   lease expiry in ms of Redis server time (TIME), so workers' clocks never
--   matter. At most one member "p:<scope>/<message_id>" per scope (the
--   message's queue; "p:<message_id>" for an empty scope) marks the deferred
--   copy pending for the key, scored by its own expiry. Markers of other
--   scopes are neither holders nor pending here: a copy waiting on one
--   queue never holds back a message of another.
--
-- decision: 1 acquired (run), 2 defer (enqueue a delayed copy),
--           3 skip (over the limit, or debouncing, and another message's copy is pending),
--           4 debounce (this message opens the key's window: enqueue its copy, due
--             when the window closes; its marker is set). debounce_ms is 0 for
--             the copy itself and for actors without a window.
-- holders:  live holders after the decision. reclaimed: expired leases purged.
-- pending_message_id: with decision 3, the message whose copy is pending.

local key = KEYS[1]
local token, limit, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local mine, skip_if_pending, pending_ttl = 'p:' .. ARGV[4], ARGV[5] == '1', tonumber(ARGV[6])
local debounce = tonumber(ARGV[7] or '0')
local scope = ARGV[8] or ''
if scope ~= '' then mine = 'p:' .. scope .. '/' .. ARGV[4] end
-- Is a "p:" member a marker of this scope?
local function in_scope(member)
  if scope == '' then return not string.find(member, '/', 3, true) end
  return string.sub(member, 3, 2 + #scope + 1) == scope .. '/'
end
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
  if string.sub(member, 1, 2) == 'h:' then reclaimed = reclaimed + 1 end
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', key, '-inf', now) end

local holders, pending = 0, false
for _, member in ipairs(redis.call('ZRANGE', key, 0, -1)) do
  if string.sub(member, 1, 2) ~= 'p:' then
    holders = holders + 1
  elseif in_scope(member) then
    pending = member
  end
end

-- A window is open (another message's copy pending): this message is covered.
-- None is: open one, with this message's marker (a redelivery finds its own).
if debounce > 0 then
  if pending and pending ~= mine then
    return {3, holders, reclaimed, string.sub(pending, 3)}
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
  return {3, holders, reclaimed, string.sub(pending, 3)}
end
if skip_if_pending then
  redis.call('ZADD', key, now + pending_ttl, mine)
  expire_with_members()
end
return {2, holders, reclaimed}
