"""Pull-request feedback: the prepare step (pull request, base, codecov.yml, diff) and
the delivery outbox of statuses and the comment.
"""
