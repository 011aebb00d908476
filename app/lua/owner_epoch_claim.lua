-- Swap the marker if it still holds what was read: only one process claims a change.
-- KEYS: marker. ARGV: the value read ('' if none), the new owner's node id.
local found = redis.call('GET', KEYS[1]) or ''
if found ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
