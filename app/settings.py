"""Typed settings, read from the environment once at start-up.

``Settings()`` is built by an entry point (the worker module, the CLI) and
passed down; nothing else reads the environment. ``REDIS_URL`` and
``DATABASE_URL`` keep their conventional names; every tunable has the
``COVWORKER_`` prefix (``COVWORKER_FINISHER_CONCURRENCY=5``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.errors import ConfigurationError

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/covworker"
#: Slack between the finisher lock's lease and the broker's heartbeat timeout (ms).
HEARTBEAT_MARGIN_MS = 2000


def normalise_database_url(url: str) -> str:
    """Use psycopg 3 for PostgreSQL whatever driver the URL names (or none)."""
    for prefix in ("postgres://", "postgresql://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if url.startswith(("postgresql+psycopg://", "sqlite")):
        return url
    raise ConfigurationError(f"unsupported DATABASE_URL {url!r}: use postgresql:// or sqlite://")


#: Schemes redis-py accepts in ``REDIS_URL``.
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
#: Schemes of RabbitMQ in ``COVWORKER_BROKER_URL`` (Dramatiq's ``RabbitmqBroker``, pika).
AMQP_SCHEMES = ("amqp://", "amqps://")


def env_name(field: str) -> str:
    """The environment variable that sets a field."""
    name = field.lower().removeprefix("covworker_")  # a field, or the alias pydantic reports
    if name in ("redis_url", "database_url"):
        return name.upper()
    return f"COVWORKER_{name.upper()}"


def describe_validation_error(exc: ValidationError) -> str:
    """One line per bad setting, naming its variable and what it accepts."""
    lines = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else ""
        reason = str(error["msg"]).removeprefix("Value error, ")
        reason = reason.replace("Input should be", "it must be")
        lines.append(f"{env_name(field)}={error.get('input')!s}: {reason}")
    return "; ".join(lines)


class Settings(BaseSettings):
    """Everything covworker can be told from the environment."""

    model_config = SettingsConfigDict(
        env_prefix="COVWORKER_", extra="ignore", populate_by_name=True
    )

    #: Redis of the pipeline state and the gate, and Dramatiq's broker unless
    #: ``COVWORKER_BROKER_URL`` names another (``redis://``, ``rediss://``, ``unix://``).
    redis_url: str = Field(
        DEFAULT_REDIS_URL, validation_alias=AliasChoices("REDIS_URL", "COVWORKER_REDIS_URL")
    )
    #: PostgreSQL holding the reports and uploads (``postgresql://`` is accepted;
    #: ``sqlite:///PATH`` for the embedded default).
    database_url: str = Field(
        DEFAULT_DATABASE_URL,
        validation_alias=AliasChoices("DATABASE_URL", "COVWORKER_DATABASE_URL"),
    )
    # -- scaling out (docs/scaling.md) --------------------------------------------
    #: Dramatiq's broker: ``redis://...`` (Dramatiq's Redis broker) or
    #: ``amqp://...`` (RabbitMQ, ``pip install covworker[scale]``). Empty:
    #: ``REDIS_URL``, the Redis broker on the Redis of the pipeline state.
    broker_url: str = ""
    #: ``REDIS_URL`` names a Redis Cluster (any seed node): the gate and the
    #: pipeline state run on it; the broker must then be RabbitMQ, since
    #: Dramatiq's Redis broker cannot run on a cluster.
    redis_cluster: bool = False

    #: Prefix of covworker's own Redis keys and of Dramatiq's queues.
    namespace: str = "covworker"
    #: Dramatiq queue of the processors and of every other actor.
    queue_name: str = "covworker"
    #: Dramatiq queue of ``notify`` and of the finisher a commit's last upload
    #: in flight sends, so they do not wait behind other commits' parsing.
    #: Empty: ``<queue_name>.finish``; ``queue_name`` itself: one queue for all.
    finisher_queue_name: str = ""
    #: Dramatiq queue of a commit's uploads beyond its share
    #: (``COVWORKER_PROCESSOR_SHARE``). Empty: ``<queue_name>.bulk``. A worker
    #: runs the shared queue's processors it holds before this queue's, so one
    #: commit's matrix does not hold every other commit's uploads behind its
    #: backlog. A worker that consumes the shared queue consumes this one too.
    bulk_queue_name: str = ""
    #: An upload joins the shared queue while fewer than this many of its
    #: commit's uploads are queued or parsing, else the bulk queue (0: every
    #: upload on the shared queue, first come first parsed).
    processor_share: int = Field(8, ge=0)
    #: How long a worker's consumer of the finisher queue (and of its delayed
    #: messages) sleeps at most while the queue is idle (ms). Dramatiq's
    #: consumers back off up to the worker timeout (1 s), which a finisher
    #: sent ahead would otherwise wait on top of its work; each poll is one
    #: Redis call per worker process.
    finisher_queue_poll_ms: int = Field(100, gt=0)

    #: Port of the sweeper's Prometheus metrics (``covworker sweep --every``
    #: with ``COVWORKER_METRICS=true``); the worker's are on ``dramatiq_prom_port``.
    sweeper_metrics_port: int = Field(9192, ge=0, le=65535)
    #: Address the sweeper's metrics listen on (0.0.0.0 in a container).
    sweeper_metrics_host: str = "127.0.0.1"
    #: Days a merged upload keeps its raw report, and a failed one from when
    #: it failed; the sweep then drops the raw bytes and objects (the row, its
    #: error and the merged coverage stay). 0 keeps them forever.
    raw_retention_days: float = Field(30.0, ge=0)

    #: Directory of the liveness beat files (``covworker health``); empty: off.
    health_dir: str = ""

    # -- the pipeline ------------------------------------------------------
    #: Largest raw report accepted, in bytes (CLI and processor).
    max_upload_bytes: int = Field(100 * 1024 * 1024, gt=0)
    #: How long an intermediate report lives in Redis, in seconds.
    intermediate_ttl_s: int = Field(24 * 3600, gt=0)
    #: Lease of the per-commit finisher lock; renewed while a merge runs. Must
    #: be shorter than ``broker_heartbeat_timeout_ms`` (see the check below).
    finisher_lock_timeout_s: float = Field(30.0, gt=0)
    #: Most uploads merged in one pass (one DB transaction). Not a cap of 10:
    #: a CI matrix of hundreds merges in one pass; this only bounds memory.
    merge_batch_size: int = Field(1000, gt=0)
    #: MB of uploads (raw size) a worker process parses at once; a thread that
    #: does not fit waits (``app.runtime.parse_budget``; 0: no limit). Parsing holds
    #: the GIL, so two big parses in one process are no faster than one after
    #: the other, and they starve the merge pass. A parse peaks at about 14 x
    #: its upload: 16 MB (one 1,000,000-line report at a time, or many small
    #: ones) is about 220 MiB of parsing, well inside a 2 GiB worker that
    #: holds a merged report besides.
    parse_budget_mb: int = Field(16, ge=0)
    #: Most parses a worker process runs at once, whatever their size; a
    #: thread past it waits in the budget's line (0: no limit). Only the parse
    #: itself: reading the payload and storing the result are not counted.
    #: A parse holds the GIL, so eight parsing threads stretch a big report's
    #: parse to several times its CPU in wall-clock time; 2 shortened the
    #: commits that end on a big report, but made small commits wait behind
    #: big parses in a burst (BENCHMARKS.md, "Parses at once"): off by default.
    parses_at_once: int = Field(0, ge=0)
    #: An upload at least this large (raw bytes) sends its finisher ahead, on
    #: the finisher queue, even while other uploads of its commit are still
    #: processing: a pass merging such uploads costs about what it merges, so
    #: passes keep up with the parsing instead of waiting for the commit's
    #: last upload (0: only the commit's last upload in flight does).
    finisher_ahead_min_bytes: int = Field(1 << 20, ge=0)
    #: While other uploads of a commit are still processing, a finisher
    #: merges only once at least this many are processed (1: as soon as one
    #: is); the commit's last upload in flight never waits. A pass's fixed
    #: part (encoding and storing the whole merged report) is then paid once
    #: per this many uploads of a trickle whose passes keep up with the
    #: parsing, but a pass holds every upload it merges: at the full-size
    #: monorepo trickle, 2 took the passes' CPU from 2.6x to 2.0x one full
    #: pass, their process's peak from 196 to 229 MiB and the notification
    #: from 1.2 to 2.0 s after the last upload (BENCHMARKS.md).
    finisher_min_batch: int = Field(1, ge=1)
    #: Uploads stuck in uploaded/processing/processed longer are re-driven.
    sweep_after_s: float = Field(600.0, gt=0)
    #: How often each worker process checks whether Redis lost its data (its
    #: epoch marker is gone) and, if so, re-drives everything in flight (s).
    redis_loss_check_s: float = Field(2.0, gt=0)
    #: Times a merge may send an upload back through processing because its
    #: intermediate is missing or unreadable (evicted, corrupt); one more and
    #: the upload ends ``error`` with the reason.
    max_redrives: int = Field(5, ge=0)

    # -- the gate ------------------------------------------------------------
    #: Finishers running at once per commit.
    finisher_concurrency: int = Field(3, gt=0)
    #: Lease of a gate slot, renewed by the holder's heartbeat (ms).
    gate_lease_ms: int = Field(30_000, gt=0)
    #: Delay of a deferred copy (ms), plus up to ``gate_jitter_ms``.
    gate_delay_ms: int = Field(200, ge=0)
    #: Random extra delay of a deferred copy, up to this (ms), so deferred
    #: copies of one key do not return together.
    gate_jitter_ms: int = Field(200, ge=0)
    #: How long the gate remembers a pending deferred copy (ms). While it
    #: does, further over-limit finishers of the commit are acked without a
    #: copy of their own; after it lapses they are deferred again (safe, more
    #: messages). Keep it above the delay plus jitter, or coalescing never applies.
    gate_pending_ttl_ms: int = Field(60_000, gt=0)
    #: Debounce window of a commit's finishers (ms): the first finisher message
    #: of a commit runs this long after it arrives, and every one arriving
    #: meanwhile is done by that run, so uploads trickling in batch into one
    #: merge pass. 0 runs each at once (a pass per arrival under a trickle).
    #: 250 ms batches the arrivals that come closer together than that (a CI
    #: matrix's stampede; BENCHMARKS.md, burst 167 and the monorepo trickle)
    #: and holds a finisher back a quarter of a second at most.
    finisher_debounce_ms: int = Field(250, ge=0)
    #: A commit whose finisher runs take long batches longer: its window is
    #: this many times its last run that merged, between
    #: ``finisher_debounce_ms`` and ``finisher_debounce_max_ms``. Under a
    #: trickle (a matrix's jobs ending over a minute) each arrival would
    #: otherwise be a pass over the whole merged report; 3 keeps a commit's
    #: passes to at most a quarter of a thread's time, for at most that much
    #: more wait before its notification. 0 keeps the window fixed.
    finisher_debounce_factor: float = Field(3.0, ge=0)
    #: Longest debounce window of a commit's finishers (ms). The window after
    #: a commit's last upload is waited out before its notification: under a
    #: sustained trickle 1 s put the notification p95 at 1.94 s (one machine)
    #: and 2.10 s (the scale topology) where 2 s gave 2.87 and 2.24 s, for 5 to
    #: 7 % more settled versions (BENCHMARKS.md, "The window capped at 1 s").
    finisher_debounce_max_ms: int = Field(1000, ge=0)

    # -- the worker ------------------------------------------------------------
    #: Retries of a failing message (webhook down, database restarting).
    max_retries: int = Field(10, ge=0)
    #: Backoff before the first retry of a failing message (ms), doubling.
    min_backoff_ms: int = Field(500, ge=0)
    #: Longest backoff between retries of a failing message (ms).
    max_backoff_ms: int = Field(60_000, ge=0)
    #: Dramatiq Redis broker: a worker that missed heartbeats this long is
    #: dead and its unacked messages are requeued (ms). See RELIABILITY.md.
    #: RabbitMQ requeues a dead worker's messages at once instead; a finisher
    #: among them is delayed by the lock's lease + 2 s (app/runtime/brokers.py).
    broker_heartbeat_timeout_ms: int = Field(60_000, gt=0)
    #: Chance, out of a million (Dramatiq's ``MAINTENANCE_SCALE``), that a
    #: broker call also runs that maintenance: 10_000 is 1 %, so an idle
    #: worker (about two broker calls a second) requeues a dead worker's
    #: messages within about a minute of its heartbeat timeout.
    broker_maintenance_chance: int = Field(10_000, ge=0, le=1_000_000)
    #: Add Dramatiq's Prometheus middleware: the worker then serves Dramatiq's
    #: and the gate's metrics on ``dramatiq_prom_port`` (Dramatiq's own
    #: variable, default 9191).
    metrics: bool = False
    #: POST timeout of a notification webhook, in seconds.
    webhook_timeout_s: float = Field(10.0, gt=0)

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if not value.startswith(REDIS_SCHEMES):
            raise ValueError(
                f"it must start with {', '.join(REDIS_SCHEMES)} "
                "(for example redis://127.0.0.1:6379/0)"
            )
        return value

    # -- the HTTP ingestion service (``covworker serve``) ---------------------
    #: Secret signing the one-time PUT URLs handed to uploaders. Empty means a
    #: random one per process start, which only works with one api process:
    #: set it when running ``--workers`` > 1 or several replicas.
    upload_url_secret: str = ""
    #: How long a PUT URL stays valid, in seconds (CI runners can be slow).
    upload_url_ttl_s: int = Field(600, gt=0)
    #: Base URL uploaders reach the service at (``https://cov.example.com``),
    #: used in the PUT URLs. Empty: taken from each request's Host header.
    public_url: str = ""
    #: Token of the operations page (``/-/ops``); empty turns the page off (404).
    ops_token: str = ""

    # -- hostile input at the HTTP surface ------------------------------------
    #: Largest body of any request but a payload (the JSON calls of the
    #: uploaders, the login forms), in bytes; refused 413 while it streams.
    max_request_body_bytes: int = Field(256 * 1024, gt=0)
    #: Hosts (comma-separated, ``host`` or ``host:port``) whose Host header may
    #: shape the PUT URLs handed out when ``public_url`` is empty. A request
    #: naming another host gets a 400 asking for ``COVWORKER_PUBLIC_URL``.
    #: ``*`` accepts any (only behind a proxy that checks the Host itself).
    allowed_hosts: str = "localhost,127.0.0.1,::1"
    #: Upload slots (create-upload calls) awaiting their PUT per commit; one
    #: more is refused 429 until some are used or expire (``upload_url_ttl_s``).
    max_awaiting_uploads: int = Field(1000, gt=0)
    #: Webhooks to loopback, private, link-local and other non-public
    #: addresses are refused unless this is true (a receiver on your own network).
    webhook_allow_private: bool = False

    @property
    def allowed_host_names(self) -> frozenset[str]:
        return frozenset(h.strip().lower() for h in self.allowed_hosts.split(",") if h.strip())

    #: How long after its notification a webhook is still retried (s); then
    #: it is marked failed with the last reason. Outside ``max_retries``.
    webhook_horizon_s: float = Field(24 * 3600.0, gt=0)
    #: Delay after the first failed webhook attempt (s), doubling after each
    #: further one up to ``webhook_max_backoff_s``.
    webhook_min_backoff_s: float = Field(5.0, gt=0)
    #: Longest delay between two webhook attempts (s).
    webhook_max_backoff_s: float = Field(3600.0, gt=0)

    # -- test results (app/testresults) --------------------------------------
    #: Days a commit keeps its test runs (one row per test outcome); the
    #: sweep then drops them. 0 keeps them forever.
    testresults_runs_retention_days: float = Field(30.0, ge=0)
    #: Days of per-test daily history kept (flakiness, fail rates, the
    #: slowest tests). 0 keeps it forever.
    testresults_history_days: int = Field(90, ge=0)
    #: A test's fail rate is taken over this many of its last runs.
    testresults_flake_runs: int = Field(30, gt=0)
    #: Seconds a repository's slowest and flakiest tests (``/-/tests``) are
    #: served from Redis before they are computed again (once, however many
    #: ask). 0 computes them on every request.
    testresults_summary_cache_s: float = Field(30.0, ge=0)

    # -- pull-request feedback (app/providers, app/feedback/delivery.py) ----
    #: A GitHub token (``Bearer``): statuses, pull requests and contents of
    #: the repositories covworker reports on. Or a GitHub App, below.
    github_token: str = ""
    #: A GitHub App's id and the path of its private key (PEM): preferred over a token.
    github_app_id: str = ""
    #: Path of the GitHub App's private key (PEM); with ``github_app_id``.
    github_app_private_key_path: str = ""
    #: GitHub's API root; a GitHub Enterprise Server's is ``https://HOST/api/v3``.
    github_api_url: str = "https://api.github.com"
    #: A GitLab access token with the ``api`` scope.
    gitlab_token: str = ""
    #: GitLab's API root; a self-managed instance's is ``https://HOST/api/v4``.
    gitlab_api_url: str = "https://gitlab.com/api/v4"
    #: Timeout of one provider call (s); a timeout is retried by the outbox.
    provider_timeout_s: float = Field(10.0, gt=0)
    #: How long a pull-request delivery (a status, the comment) is retried (s).
    pr_delivery_horizon_s: float = Field(12 * 3600.0, gt=0)
    #: Delay after a failed delivery attempt (s), doubling up to the maximum.
    pr_delivery_min_backoff_s: float = Field(2.0, gt=0)
    #: Longest delay between two delivery attempts (s).
    pr_delivery_max_backoff_s: float = Field(1800.0, gt=0)
    #: A commit's pull-request feedback (comparison, comment, statuses) is
    #: prepared at most once this often (s) while its matrix keeps settling:
    #: a settled version within this time of the previous one's waits, and
    #: a newer one arriving meanwhile takes its place (app/feedback/rows.py).
    #: A matrix that settles once is prepared at once. 0: every settled version.
    pr_feedback_spacing_s: float = Field(3.0, ge=0)
    #: Provider calls one repository may make an hour (a GCRA in Redis, shared
    #: by every process: app/providers/budget.py). Every repository shares the
    #: credentials' rate limit (GitHub: 5,000 an hour); past its budget a
    #: repository's feedback is deferred until the budget refills. 0: no budget.
    provider_calls_per_repository_hour: int = Field(1000, ge=0)
    #: Calls a repository may make at once before the hourly rate applies.
    provider_calls_burst: int = Field(200, gt=0)
    #: How long a commit the provider said it does not have is remembered (s):
    #: no call names it until then, and its feedback is skipped with that reason.
    provider_unknown_commit_ttl_s: int = Field(900, gt=0)
    #: How long a file's source fetched for the file page is kept in Redis (s).
    provider_source_cache_s: int = Field(3600, gt=0)
    #: How long a repository's default branch read from the provider is
    #: trusted before feedback reads it again (s); pull-request events carry
    #: it too (app/feedback/default_branch.py).
    default_branch_refresh_s: int = Field(3600, gt=0)

    # -- signing in with the provider (app/web/signin.py, docs/sign-in.md) -----
    #: Client id of a GitHub OAuth App (or a GitHub App's, for its user
    #: authorization); with the secret, the pages offer "Sign in with GitHub".
    github_oauth_client_id: str = ""
    #: Client secret of that GitHub OAuth App or GitHub App.
    github_oauth_client_secret: str = ""
    #: GitHub's web host, where its sign-in pages are; a GitHub Enterprise
    #: Server's is ``https://HOST`` (the API stays ``COVWORKER_GITHUB_API_URL``).
    github_url: str = "https://github.com"
    #: Scopes asked of a GitHub OAuth App's user: ``repo`` reads private
    #: repositories (a GitHub App ignores scopes: its permissions apply).
    github_oauth_scope: str = "repo"
    #: Application id of a GitLab OAuth application; with the secret, the
    #: pages offer "Sign in with GitLab".
    gitlab_oauth_client_id: str = ""
    #: Secret of that GitLab OAuth application.
    gitlab_oauth_client_secret: str = ""
    #: GitLab's web host, where its sign-in pages are (a self-managed
    #: instance's ``https://HOST``; the API stays ``COVWORKER_GITLAB_API_URL``).
    gitlab_url: str = "https://gitlab.com"
    #: Scopes asked of a GitLab user: ``read_api`` reads projects and the user.
    gitlab_oauth_scope: str = "read_api"
    #: How long a sign-in lasts (s) before the user signs in again.
    signin_session_s: int = Field(14 * 24 * 3600, gt=0)
    #: How long the provider's answer to "may this user read this private
    #: repository" is trusted (s) before it is asked again with the user's token.
    signin_access_cache_s: int = Field(300, gt=0)

    # -- inbound provider events (app/api/provider_webhooks.py) ---------------
    #: The secret of the GitHub webhook (a GitHub App's or a repository's):
    #: ``POST /webhooks/github`` checks ``X-Hub-Signature-256`` with it and
    #: refuses every event while it is empty.
    github_webhook_secret: str = ""
    #: The secret token of the GitLab webhook: ``POST /webhooks/gitlab``
    #: compares ``X-Gitlab-Token`` with it and refuses every event while it is empty.
    gitlab_webhook_secret: str = ""
    #: Largest provider event body (bytes), refused 413 while it streams. A
    #: pull request event carries the pull's description (up to 65,536
    #: characters, each up to 12 bytes as escaped JSON) and two repositories.
    max_provider_event_bytes: int = Field(2 * 1024 * 1024, gt=0)

    # -- payload bodies and where they are stored (app/storage, app/api/payload_put.py)
    #: ``database``: payloads in PostgreSQL/SQLite rows (the default). ``s3``:
    #: in an S3-compatible object store (``pip install covworker[scale]``).
    storage: Literal["database", "s3"] = "database"
    #: The object store's URL (``http://127.0.0.1:8333``, ``https://s3.amazonaws.com``).
    s3_endpoint_url: str = ""
    #: Bucket of the raw payloads, created if missing.
    s3_bucket: str = "covworker"
    #: Region signed into requests (and presigned URLs: no region lookup call).
    s3_region: str = "us-east-1"
    #: The object store's access key id.
    s3_access_key_id: str = ""
    #: The object store's secret access key. It also keys the HMAC that names
    #: a repository's objects (``app.storage.repo_hash``); without it,
    #: ``COVWORKER_UPLOAD_URL_SECRET`` does, and S3 storage needs one of them.
    s3_secret_access_key: str = ""
    #: Hand uploaders a presigned PUT URL straight to the object store instead
    #: of covworker's own PUT URL; a worker then waits for the object to arrive.
    s3_presign: bool = False
    #: Seconds a PUT body may go without a byte arriving before it is refused
    #: (408) and its connection closed.
    payload_idle_timeout_s: float = Field(30.0, gt=0)
    #: Seconds a whole PUT body may take (a 100 MB payload at 1 MB/s: 100 s).
    payload_read_timeout_s: float = Field(600.0, gt=0)
    #: Large PUT bodies (over one chunk, or of undeclared length) received
    #: at once by one server process, over all repositories (then 503) and per
    #: repository (then 429); both with ``Retry-After``.
    large_bodies_at_once: int = Field(16, gt=0)
    #: Large PUT bodies one server process receives at once for one
    #: repository (then 429 with ``Retry-After``).
    large_bodies_per_repository: int = Field(4, gt=0)

    @model_validator(mode="after")
    def _s3_storage_has_an_endpoint(self) -> Settings:
        if self.storage == "s3" and not self.s3_endpoint_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"COVWORKER_STORAGE=s3 needs COVWORKER_S3_ENDPOINT_URL=http(s)://host:port "
                f"(got {self.s3_endpoint_url!r})"
            )
        if self.storage == "s3" and not self.object_key_secret:
            raise ConfigurationError(
                "COVWORKER_STORAGE=s3 needs COVWORKER_S3_SECRET_ACCESS_KEY or "
                "COVWORKER_UPLOAD_URL_SECRET: object keys are derived from it, the same "
                "in every process"
            )
        return self

    @property
    def object_key_secret(self) -> str:
        """The secret object keys are derived from (``app.storage.repo_hash``):
        the object store's secret key, which every process that reaches the
        store holds, else the PUT URLs' signing secret."""
        return self.s3_secret_access_key or self.upload_url_secret

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        return normalise_database_url(value)

    @property
    def broker_kind(self) -> str:
        """``"rabbitmq"`` or ``"redis"``: which Dramatiq broker carries the actors."""
        return "rabbitmq" if self.broker_url.startswith(AMQP_SCHEMES) else "redis"

    @property
    def redis_broker_url(self) -> str:
        """The Redis the Redis broker runs on: ``COVWORKER_BROKER_URL``, else ``REDIS_URL``."""
        return self.broker_url or self.redis_url

    @field_validator("broker_url")
    @classmethod
    def _broker_url(cls, value: str) -> str:
        if value and not value.startswith(REDIS_SCHEMES + AMQP_SCHEMES):
            raise ValueError(
                "it must start with redis://, rediss://, unix://, amqp:// or amqps:// "
                "(for example amqp://guest:guest@127.0.0.1:5672/%2F), or be empty for REDIS_URL"
            )
        return value

    @model_validator(mode="after")
    def _a_cluster_needs_rabbitmq(self) -> Settings:
        if self.redis_cluster and self.broker_kind != "rabbitmq":
            raise ConfigurationError(
                "COVWORKER_REDIS_CLUSTER=true needs COVWORKER_BROKER_URL=amqp://...: "
                "Dramatiq's Redis broker cannot run on a Redis Cluster"
            )
        return self

    @property
    def queue_names(self) -> tuple[str, ...]:
        """The Dramatiq queues: the shared one, then the finisher and bulk queues (if others)."""
        return tuple(
            dict.fromkeys((self.queue_name, self.finisher_queue_name, self.bulk_queue_name))
        )

    @model_validator(mode="after")
    def _queues_default_to_the_queue_name(self) -> Settings:
        if not self.finisher_queue_name:
            self.finisher_queue_name = f"{self.queue_name}.finish"
        if not self.bulk_queue_name:
            self.bulk_queue_name = f"{self.queue_name}.bulk"
        return self

    @model_validator(mode="after")
    def _dead_holder_lock_expires_before_redelivery(self) -> Settings:
        # A finisher killed while holding the commit lock is redelivered once the
        # broker declares its worker dead. If the lock outlived that, the
        # redelivered finisher would find it busy and exit, and the commit would
        # wait for the sweep. Heartbeats come at least every second or so; keep
        # a margin for that.
        margin_ms = HEARTBEAT_MARGIN_MS
        if self.broker_heartbeat_timeout_ms < self.finisher_lock_timeout_s * 1000 + margin_ms:
            raise ConfigurationError(
                f"COVWORKER_BROKER_HEARTBEAT_TIMEOUT_MS={self.broker_heartbeat_timeout_ms} "
                f"must be at least COVWORKER_FINISHER_LOCK_TIMEOUT_S x 1000 + {margin_ms} "
                f"(= {self.finisher_lock_timeout_s * 1000 + margin_ms:g} with "
                f"COVWORKER_FINISHER_LOCK_TIMEOUT_S={self.finisher_lock_timeout_s:g}): "
                "a dead finisher's lock must expire before its message is redelivered"
            )
        return self
