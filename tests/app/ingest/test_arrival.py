"""A presigned upload's arrival: looked for until its URL expires, admitted
exactly once whether the chain or the sweep finds the object; on an
in-memory store, then on a real S3 server (SeaweedFS)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
import sqlalchemy as sa

from app.db.models import Repository, Upload, UploadState, utcnow
from app.errors import UnknownEntity
from app.ingest.arrival import (
    ARRIVAL_GRACE_S,
    FIRST_LOOK_MS,
    KEY_DAY_SLACK_S,
    LONGEST_WAIT_MS,
    SWEEP_LOOKS,
    admit_arrived,
    check_arrival,
    key_days,
    next_look_ms,
    presigned_key,
)
from app.ingest.store import CommitMeta, UploadMeta, add_awaiting_upload
from app.runtime.services import Services
from app.storage import StorageUnavailable, object_key
from tests.app.storage.conftest import (  # the SeaweedFS server and its services
    LCOV,
    SHA,
    awaiting_upload,
    s3_store,
    seaweed,
    services,
)
from tests.support.memory_store import MemoryStore
from tests.support.pipeline import Pipeline, real_services, unit_services
from tests.support.services import fresh_database, redis_test_url, require_redis

__all__ = ["seaweed", "services"]  # the fixtures, from the storage tests


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[tuple[Services, MemoryStore]]:
    base = unit_services(tmp_path)
    store = MemoryStore()
    settings = base.settings.model_copy(update={"s3_presign": True})
    services = dataclasses.replace(base, settings=settings, payload_store=store)
    yield services, store
    base.close()


@pytest.fixture(
    params=[
        pytest.param("embedded", id="fakeredis+sqlite"),
        pytest.param("real", id="redis+postgres", marks=pytest.mark.integration),
    ]
)
def presigning(
    request: pytest.FixtureRequest, tmp_path: Path, namespace: str
) -> Iterator[tuple[Services, MemoryStore]]:
    """Presigned uploads into an in-memory store, on fakeredis + SQLite and
    on real Redis + PostgreSQL."""
    store = MemoryStore()
    if request.param == "embedded":
        base = unit_services(tmp_path, s3_presign=True)
        yield dataclasses.replace(base, payload_store=store), store
        base.close()
        return
    require_redis()
    with fresh_database(migrated=True) as url:
        base = real_services(redis_test_url(), url, namespace, s3_presign=True)
        yield dataclasses.replace(base, payload_store=store), store
        base.close()


def state_of(services: Services, upload_id: int) -> str:
    with services.sessions() as session:
        row = session.get(Upload, upload_id)
        assert row is not None
        return row.state


def arrived_upload(services: Services, store: MemoryStore) -> tuple[int, str]:
    """An upload awaiting its payload whose object is already in ``store``; its id and key."""
    upload_id, repo = awaiting_upload(services)
    key = presigned_key(
        repo.id, repo.name, SHA, upload_id, date.today(), secret=services.settings.object_key_secret
    )
    store.objects[key] = LCOV
    return upload_id, key


def unexpired() -> int:
    """A presigned URL's expiry (epoch seconds) ten minutes from now."""
    return int(utcnow().timestamp()) + 600


@dataclasses.dataclass
class Chain:
    """An upload's arrival chain: ``check`` is one of its looks; ``looks`` and
    ``sent`` record the delays it asked to look again after and the
    processors it sent."""

    services: Services
    upload_id: int
    key: str
    expires: int = dataclasses.field(default_factory=unexpired)
    looks: list[int] = dataclasses.field(default_factory=list)
    sent: list[int] = dataclasses.field(default_factory=list)

    def check(self, attempt: int) -> str:
        return check_arrival(
            self.services,
            self.upload_id,
            self.key,
            self.expires,
            attempt,
            look_again=self.looks.append,
            send_processor=self.sent.append,
        )


def assert_stored(services: Services, upload_id: int, key: str) -> None:
    """The upload was admitted: uploaded, stored at ``key``, its size LCOV's."""
    with services.sessions() as session:
        row = session.get(Upload, upload_id)
        assert row is not None
        assert (row.state, row.storage_path, row.raw_size) == (UploadState.UPLOADED, key, len(LCOV))


def test_looks_are_spaced_twice_as_far_each_time_up_to_the_longest_wait() -> None:
    assert [next_look_ms(n) for n in range(4)] == [FIRST_LOOK_MS * 2**n for n in range(4)]
    assert next_look_ms(40) == LONGEST_WAIT_MS


def test_the_key_days_of_an_upload_include_the_next_day_only_near_midnight() -> None:
    noon = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
    assert key_days(noon) == [date(2026, 3, 4)]
    late = datetime(2026, 3, 4, 23, 59, tzinfo=UTC) - timedelta(seconds=KEY_DAY_SLACK_S - 120)
    assert key_days(late) == [date(2026, 3, 4), date(2026, 3, 5)]
    assert key_days(late.replace(tzinfo=None)) == key_days(late)  # naive: UTC (SQLite)
    elsewhere = datetime(2026, 3, 5, 0, 30, tzinfo=UTC).astimezone(ZoneInfo("America/New_York"))
    assert key_days(elsewhere) == [date(2026, 3, 5)]


def test_the_chain_admits_an_arrived_object_once_and_then_finds_it_taken(
    memory: tuple[Services, MemoryStore],
) -> None:
    services, store = memory
    chain = Chain(services, *arrived_upload(services, store))
    assert chain.check(0) == "stored"
    assert chain.check(1) == "taken"
    assert (chain.sent, chain.looks) == ([chain.upload_id], [])
    assert_stored(services, chain.upload_id, chain.key)


def test_a_store_that_is_down_is_looked_at_again_later_and_nothing_is_lost(
    memory: tuple[Services, MemoryStore],
) -> None:
    from app.storage import STORE_DOWN_RETRY_MS

    services, store = memory
    chain = Chain(services, *arrived_upload(services, store))
    store.down = True
    outcome = chain.check(0)
    assert (outcome, chain.looks, chain.sent) == ("store down", [STORE_DOWN_RETRY_MS], [])
    assert state_of(services, chain.upload_id) == UploadState.AWAITING


def test_an_unknown_upload_and_a_missing_store_are_errors_naming_them(
    memory: tuple[Services, MemoryStore], tmp_path: Path
) -> None:
    services, _ = memory
    with pytest.raises(UnknownEntity, match="upload 999 does not exist"):
        check_arrival(services, 999, "k", 0, 0, look_again=print, send_processor=print)
    upload_id, _ = awaiting_upload(services)
    without = dataclasses.replace(services, payload_store=None)
    with pytest.raises(StorageUnavailable, match="set COVWORKER_STORAGE=s3"):
        check_arrival(without, upload_id, "k", 0, 0, look_again=print, send_processor=print)


def test_the_sweep_admits_an_arrived_object_exactly_once_whoever_looks_first(
    memory: tuple[Services, MemoryStore],
) -> None:
    services, store = memory
    chain = Chain(services, *arrived_upload(services, store))
    arrived = chain.upload_id
    never, _ = awaiting_upload(services, "acme/other")
    sent = chain.sent  # the sweep's and the chain's
    later = utcnow() + timedelta(seconds=120)

    assert admit_arrived(services, now=later, older_than_s=60, send_processor=sent.append) == [
        arrived
    ]
    assert admit_arrived(services, now=later, older_than_s=60, send_processor=sent.append) == []
    assert chain.check(3) == "taken" and sent == [arrived]
    assert state_of(services, never) == UploadState.AWAITING


def test_when_the_chain_takes_the_object_while_the_sweep_looks_the_sweep_sends_nothing(
    memory: tuple[Services, MemoryStore],
) -> None:
    services, store = memory
    chain = Chain(services, *arrived_upload(services, store))
    by_sweep: list[int] = []

    def the_chain_looks() -> None:
        store.before_size = lambda: None
        assert chain.check(2) == "stored"

    store.before_size = the_chain_looks
    later = utcnow() + timedelta(seconds=120)
    assert admit_arrived(services, now=later, older_than_s=60, send_processor=by_sweep.append) == []
    assert (chain.sent, by_sweep) == ([chain.upload_id], [])


def test_the_sweep_leaves_young_uploads_to_their_chain_and_looks_for_none_without_presigning(
    memory: tuple[Services, MemoryStore],
) -> None:
    services, store = memory
    upload_id, _ = arrived_upload(services, store)
    sent: list[int] = []
    now = utcnow()
    assert admit_arrived(services, now=now, older_than_s=60, send_processor=sent.append) == []
    plain = services.settings.model_copy(update={"s3_presign": False})
    off = dataclasses.replace(services, settings=plain)
    later = now + timedelta(seconds=120)
    assert admit_arrived(off, now=later, older_than_s=60, send_processor=sent.append) == []
    too_late = now + timedelta(days=3)
    assert admit_arrived(services, now=too_late, older_than_s=60, send_processor=sent.append) == []
    assert sent == [] and state_of(services, upload_id) == UploadState.AWAITING


def test_the_sweep_with_the_store_down_admits_nothing_and_does_not_fail(
    memory: tuple[Services, MemoryStore],
) -> None:
    services, store = memory
    upload_id, _ = arrived_upload(services, store)
    store.down = True
    later = utcnow() + timedelta(seconds=120)
    assert admit_arrived(services, now=later, older_than_s=60, send_processor=print) == []
    assert state_of(services, upload_id) == UploadState.AWAITING


def test_arrival_waits_for_the_object_then_stores_and_sends_the_processor(
    services: Services,
) -> None:
    upload_id, repo = awaiting_upload(services)
    key = object_key(
        repo.id, repo.name, SHA, upload_id, date.today(), secret=services.settings.object_key_secret
    )
    chain = Chain(services, upload_id, key)
    assert chain.check(0) == "waiting"
    assert chain.check(3) == "waiting"
    assert chain.looks == [FIRST_LOOK_MS, 8 * FIRST_LOOK_MS] and chain.sent == []
    assert httpx.put(s3_store(services).presign_put(key, 60), content=LCOV).status_code == 200
    assert chain.check(4) == "stored"
    assert chain.sent == [upload_id]
    assert chain.check(5) == "taken"
    assert_stored(services, upload_id, key)
    assert Pipeline(services).process(upload_id) == UploadState.PROCESSED


def test_arrival_gives_up_after_the_url_expired_and_the_upload_stays_out_of_the_counts(
    services: Services,
) -> None:
    upload_id, repo = awaiting_upload(services)
    key = object_key(
        repo.id, repo.name, SHA, upload_id, date.today(), secret=services.settings.object_key_secret
    )
    chain = Chain(services, upload_id, key, expires=int(utcnow().timestamp()) - ARRIVAL_GRACE_S - 1)
    assert (chain.check(9), chain.looks) == ("expired", [])
    with services.sessions() as session:
        assert session.scalar(sa.select(Upload.state)) == UploadState.AWAITING


def unused_slots(services: Services, n: int) -> None:
    """``n`` more awaiting uploads of another commit whose payload never comes."""
    with services.sessions() as session:
        repo = session.scalar(sa.select(Repository).where(Repository.name == "acme/unused"))
    if repo is None:
        with services.sessions.begin() as session:
            repo = Repository(name="acme/unused")
            session.add(repo)
    for _ in range(n):
        add_awaiting_upload(services, repo, SHA, CommitMeta(), UploadMeta(), "")


def past_every_url(services: Services) -> datetime:
    """A sweep's time once every URL handed out so far has expired."""
    return utcnow() + timedelta(seconds=services.settings.upload_url_ttl_s + ARRIVAL_GRACE_S + 1)


def test_a_lost_arrival_is_admitted_by_the_next_sweep_behind_any_number_of_newer_unused_slots(
    presigning: tuple[Services, MemoryStore],
) -> None:
    services, store = presigning
    arrived, _ = arrived_upload(services, store)  # its arrival chain was lost
    unused_slots(services, SWEEP_LOOKS)  # newer, never used
    looks: list[int] = []
    store.before_size = lambda: looks.append(1)
    sent: list[int] = []

    admitted = admit_arrived(
        services, now=past_every_url(services), older_than_s=600, send_processor=sent.append
    )

    assert admitted == [arrived] and sent == [arrived]
    assert state_of(services, arrived) == UploadState.UPLOADED
    assert 0 < len(looks) <= SWEEP_LOOKS  # a sweep's cost stays bounded


def test_a_lost_arrival_is_not_starved_by_unused_slots_created_every_sweep(
    presigning: tuple[Services, MemoryStore],
) -> None:
    services, store = presigning
    unused_slots(services, SWEEP_LOOKS)
    sent: list[int] = []
    admit_arrived(services, now=past_every_url(services), older_than_s=600, send_processor=print)
    arrived, _ = arrived_upload(services, store)
    admitted: list[int] = []
    sweeps = 0
    while not admitted and sweeps < 3:  # each sweep, as many unused slots more as it looks for
        unused_slots(services, SWEEP_LOOKS)
        looks: list[int] = []
        store.before_size = lambda looks=looks: looks.append(1)  # type: ignore[misc]
        admitted += admit_arrived(
            services, now=past_every_url(services), older_than_s=600, send_processor=sent.append
        )
        sweeps += 1
        assert len(looks) <= SWEEP_LOOKS
    assert admitted == [arrived] and sweeps <= 2


def test_every_awaiting_upload_gets_its_look_after_its_url_expired_once(
    presigning: tuple[Services, MemoryStore],
) -> None:
    services, store = presigning
    unused_slots(services, 3)
    keys: list[str] = []
    real_size = store.size

    def size(key: str) -> int | None:
        keys.append(key)
        return real_size(key)

    store.size = size  # type: ignore[method-assign]
    later = past_every_url(services)
    assert admit_arrived(services, now=later, older_than_s=600, send_processor=print) == []
    assert len({key.rpartition("/")[2] for key in keys}) == 3  # each upload's object
    looked = len(keys)
    assert admit_arrived(services, now=later, older_than_s=600, send_processor=print) == []
    assert len(keys) == looked  # not again: no payload can arrive past its URL's expiry


def test_a_young_lost_arrival_is_admitted_while_a_backlog_of_expired_slots_is_looked_through(
    presigning: tuple[Services, MemoryStore],
) -> None:
    services, store = presigning
    unused_slots(services, SWEEP_LOOKS + 100)
    with services.sessions.begin() as session:  # handed out an hour ago: their URLs expired
        hour_ago = utcnow() - timedelta(hours=1)
        if len(key_days(hour_ago)) > 1:  # near midnight: two HEADs a slot (``key_days``)
            hour_ago -= timedelta(seconds=KEY_DAY_SLACK_S)
        session.execute(sa.update(Upload).values(created_at=hour_ago, updated_at=hour_ago))
    arrived, _ = arrived_upload(services, store)  # its URL still valid, its chain lost
    sent: list[int] = []
    looks: list[int] = []
    store.before_size = lambda: looks.append(1)

    later = utcnow() + timedelta(seconds=120)
    admitted = admit_arrived(services, now=later, older_than_s=60, send_processor=sent.append)

    assert admitted == [arrived] and len(looks) == SWEEP_LOOKS
    looks.clear()
    assert admit_arrived(services, now=later, older_than_s=60, send_processor=sent.append) == []
    assert len(looks) == 101  # the backlog's rest (600 slots, 499 looked for): each once
