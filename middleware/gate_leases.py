"""Per-holder leases of one gate key, kept by one Lua script in Redis.

A gate key is one sorted set. Each live holder is a member ``h:<token>``
whose score is its lease expiry in milliseconds of *Redis server time*, so
clocks of workers never matter. Optionally the set also holds one marker
``p:<message id>``, scored by its own expiry: the deferred copy that is
pending for the key (see coalescing in :mod:`middleware.per_key_concurrency`).

Every operation is one EVALSHA on one key (the caller puts a hash tag in
the key, so it works on Redis Cluster), and reads the time with ``TIME``
inside the script. ``acquire`` purges expired members, counts the live
holders and adds the new one in one atomic step, so no two workers can both
see "one slot left". A holder that dies stops renewing and its member is
purged by the next acquire after its own lease runs out, however busy the
key is: unlike a shared counter whose TTL every acquire refreshes, nobody
else's traffic extends a dead holder's lease.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The script behind every gate operation. ARGV[1] names the operation.
GATE_SCRIPT = """
local key = KEYS[1]
local op = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- The key lives as long as its longest lease or marker, so idle keys vanish.
local function expire_with_members()
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if top[2] then redis.call('PEXPIREAT', key, math.floor(tonumber(top[2])) + 1000) end
end

if op == 'acquire' then
  local token, limit, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
  local mine, coalesce, pending_ttl = 'p:' .. ARGV[5], ARGV[6] == '1', tonumber(ARGV[7])
  local reclaimed = 0
  local expired = redis.call('ZRANGEBYSCORE', key, '-inf', now)
  for _, member in ipairs(expired) do
    if string.sub(member, 1, 2) == 'h:' then reclaimed = reclaimed + 1 end
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', key, '-inf', now) end
  local holders, pending = 0, false
  for _, member in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    if string.sub(member, 1, 2) == 'p:' then pending = member else holders = holders + 1 end
  end
  if holders < limit then
    redis.call('ZADD', key, now + lease, token)
    -- The pending copy starts now: from here on, it no longer covers anyone.
    if pending == mine then redis.call('ZREM', key, mine) end
    expire_with_members()
    return {1, holders + 1, reclaimed}
  end
  if coalesce and pending and pending ~= mine then
    return {3, holders, reclaimed}
  end
  if coalesce then
    redis.call('ZADD', key, now + pending_ttl, mine)
    expire_with_members()
  end
  return {2, holders, reclaimed}
elseif op == 'release' then
  return {redis.call('ZREM', key, ARGV[2])}
elseif op == 'renew' then
  -- ARGV: 'renew', token1, lease1, token2, lease2, ...; returns the tokens lost.
  local lost = {}
  for i = 2, #ARGV, 2 do
    if redis.call('ZSCORE', key, ARGV[i]) then
      redis.call('ZADD', key, now + tonumber(ARGV[i + 1]), ARGV[i])
    else
      table.insert(lost, ARGV[i])
    end
  end
  expire_with_members()
  return lost
end
return redis.error_reply('unknown gate operation ' .. tostring(op))
"""


class Decision(enum.IntEnum):
    """What the gate decided for one delivery."""

    ACQUIRED = 1  #: a slot is held; run the actor
    DEFER = 2  #: over the limit; enqueue a delayed copy
    COALESCE = 3  #: over the limit and a pending copy covers this message; ack it


@dataclass(frozen=True)
class Outcome:
    """The result of one ``acquire``: the decision and what the script saw."""

    decision: Decision
    holders: int  #: live holders after the decision (including this one if acquired)
    reclaimed: int  #: leases of dead holders purged by this call


class GateLeases:
    """Acquire, release and renew holder leases on gate keys of one Redis client."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.script = client.register_script(GATE_SCRIPT)

    def acquire(
        self,
        key: str,
        token: str,
        *,
        limit: int,
        lease_ms: int,
        message_id: str,
        coalesce: bool = False,
        pending_ttl_ms: int = 60_000,
    ) -> Outcome:
        """Take a slot of ``key`` for ``token`` if fewer than ``limit`` live holders have one."""
        args = ["acquire", token, limit, lease_ms, message_id, int(coalesce), pending_ttl_ms]
        decision, holders, reclaimed = self.script(keys=[key], args=args)
        return Outcome(Decision(int(decision)), int(holders), int(reclaimed))

    def release(self, key: str, token: str) -> bool:
        """Give the slot back; False if the lease had already expired and been purged."""
        (removed,) = self.script(keys=[key], args=["release", token])
        return bool(removed)

    def renew(self, key: str, leases: Sequence[tuple[str, int]]) -> list[str]:
        """Extend each ``(token, lease_ms)`` from now; return the tokens no longer held."""
        args: list[Any] = ["renew"]
        for token, lease_ms in leases:
            args += [token, lease_ms]
        lost = self.script(keys=[key], args=args)
        return [t.decode() if isinstance(t, bytes) else str(t) for t in lost]


def new_token(message_id: str, unique: str) -> str:
    """A holder member: unique per delivery, readable in ``ZRANGE`` while debugging."""
    return f"h:{message_id}:{unique}"
