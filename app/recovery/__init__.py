"""What finds and re-drives work that stalled: the sweep, the watch for a Redis that
lost its data, and retention.
"""
