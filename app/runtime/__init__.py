"""What every worker process runs on, below the steps: the broker, the middleware and
services ``build_app`` assembles, the Redis key names and scripts, health and
metrics, and what one process shares among its threads (the parse budget, the
merged report its finishers keep).
"""
