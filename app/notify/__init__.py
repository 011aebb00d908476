"""A settled commit told to the world: the notification, the webhooks, and a provider's
pull-request events that ask for feedback again.
"""
