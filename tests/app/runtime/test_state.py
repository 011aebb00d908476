"""Redis state belongs to one database: a recreated one never inherits it."""

from __future__ import annotations

import pytest

from tests.support.pipeline import Pipeline, real_services
from tests.support.services import fresh_database, redis_test_url, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

BAD_REPORT = ("bad.txt", b"not a coverage report\n")


def test_a_recreated_database_does_not_inherit_the_old_ones_redis_state(namespace: str) -> None:
    require_redis()
    with fresh_database(migrated=True) as old_url:
        old = Pipeline(real_services(redis_test_url(), old_url, namespace))
        repoid, commitid = old.settle(3)
        old.notify(repoid, commitid)
        assert old.services.state.stats(repoid, commitid)["uploads_merged"] == 3
        old.services.close()
    # The database is recreated; Redis keeps its data.
    with fresh_database(migrated=True) as new_url:
        new = Pipeline(real_services(redis_test_url(), new_url, namespace))
        fresh = new.upload([BAD_REPORT])  # the same row ids as the old commit's
        assert (fresh.repoid, fresh.commitid) == (repoid, commitid)

        assert set(new.services.state.stats(fresh.repoid, fresh.commitid).values()) == {0}
        assert new.services.state.counts(fresh.repoid, fresh.commitid) == (1, 0)
        new.process(fresh.upload_ids[0])  # fails to parse: the commit settles with no merge
        new.finish(fresh.repoid, fresh.commitid)
        assert new.outbox.notify == [(fresh.repoid, fresh.commitid)]  # not suppressed
        assert new.notify(fresh.repoid, fresh.commitid).created
        new.services.close()
