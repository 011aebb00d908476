"""The git hosts covworker knows, in a module of their own: the command
line's parser names them without importing the database layer."""

#: Git hosts the uploaders name in their URLs (codecov-cli's ``--git-service``).
SERVICES = (
    "github",
    "gitlab",
    "bitbucket",
    "github_enterprise",
    "gitlab_enterprise",
    "bitbucket_server",
)
