# JupyterHub configuration for a class taking the dlperf_widgets course on one machine.
#
#     DLPERF_HUB_PASSWORD='a class password' jupyterhub -f deploy/jupyterhub_config.py
#
# Everything a course changes is an environment variable, so this file stays as it is:
#   DLPERF_HUB_AUTH         how learners log in (see "Authentication" below); default
#                           shared-password, for a trial run
#   DLPERF_HUB_PASSWORD     the learners' shared password (shared-password only; 8+ characters)
#   DLPERF_HUB_INSTRUCTORS  comma-separated user names: hub admins, in the group "instructors",
#                           never filed as learners by nbgrader
#   DLPERF_HUB_SPAWNER      docker (default: one container per learner from deploy/Dockerfile,
#                           memory enforced), systemd (The Littlest JupyterHub's way, memory
#                           enforced) or simple (local processes, one system user: for trials
#                           and the test; memory NOT enforced)
#   DLPERF_HUB_IMAGE        the learner image for docker (default dlperf-widgets-course:latest)
#   DLPERF_HUB_NETWORK      docker: the Docker network of the hub and the learners (dlperf-hub)
#   DLPERF_HUB_CONNECT_IP   docker: the hub's address as containers see it (the host's address
#                           on the Docker network, e.g. its gateway 172.18.0.1)
#   DLPERF_HUB_HOME_ROOT    where simple makes each learner's home (default /srv/dlperf/home)
#   DLPERF_HUB_IDLE_S       idle seconds before a learner's server is stopped (default 3600)
# Zero to JupyterHub (Kubernetes) does not read this file: deploy/values.yaml says the same there.
import os
import sys

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file


def _env(name, default):
    return os.environ.get(name, "").strip() or default


# ---------------------------------------------------------------------------------------------
# Authentication: swap it per course without touching the rest.
# ---------------------------------------------------------------------------------------------
AUTH = _env("DLPERF_HUB_AUTH", "shared-password")
INSTRUCTORS = {
    name.strip() for name in _env("DLPERF_HUB_INSTRUCTORS", "").split(",") if name.strip()
}

if AUTH == "shared-password":
    # A trial or a workshop: any user name, one password the instructor hands out.
    # (JupyterHub's SharedPasswordAuthenticator, built in since JupyterHub 5.3.)
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = _env("DLPERF_HUB_PASSWORD", "")
    c.Authenticator.allow_all = True
elif AUTH == "native":
    # Learners sign up with their own password; an instructor approves them at /hub/authorize.
    # Needs `pip install jupyterhub-nativeauthenticator`.
    c.JupyterHub.authenticator_class = "native"
    c.NativeAuthenticator.open_signup = False
    c.Authenticator.allow_all = True
elif AUTH == "oauth":
    # The university's single sign-on (GitHub, Google, Keycloak, Azure AD, ...) through
    # `pip install oauthenticator`. GenericOAuthenticator reads OAUTH_CLIENT_ID,
    # OAUTH_CLIENT_SECRET and OAUTH_CALLBACK_URL (https://<hub>/hub/oauth_callback) from the
    # environment; set its authorize_url, token_url and userdata_url for your provider, and
    # allowed_groups or allowed_users to restrict the hub to the class.
    c.JupyterHub.authenticator_class = "generic-oauth"
    c.GenericOAuthenticator.authorize_url = _env("OAUTH_AUTHORIZE_URL", "")
    c.GenericOAuthenticator.token_url = _env("OAUTH_TOKEN_URL", "")
    c.GenericOAuthenticator.userdata_url = _env("OAUTH_USERDATA_URL", "")
    c.GenericOAuthenticator.username_claim = _env("OAUTH_USERNAME_CLAIM", "preferred_username")
    c.GenericOAuthenticator.allow_all = False
elif AUTH == "lti13":
    # Launched from the learning platform (Moodle, Canvas, Blackboard) as an LTI 1.3 tool with
    # `pip install jupyterhub-ltiauthenticator`: register the hub in the platform, then set
    # LTI13Authenticator.issuer, client_id, authorize_url and jwks_endpoint from its values.
    c.JupyterHub.authenticator_class = "lti13"
    c.Authenticator.allow_all = True
else:
    raise ValueError(
        f"'DLPERF_HUB_AUTH' must be one of shared-password, native, oauth, lti13 (got {AUTH!r})"
    )

c.Authenticator.admin_users = INSTRUCTORS
c.JupyterHub.load_groups = {"instructors": {"users": sorted(INSTRUCTORS)}}

# ---------------------------------------------------------------------------------------------
# Learners' servers
# ---------------------------------------------------------------------------------------------
# Memory per learner, resident (deploy/README.md, "What a learner needs"; JupyterHub 6.1,
# Python 3.11, CPU build of PyTorch 2.13). Measured by tests/deploy/test_hub.py: the server
# 172 MB; server + the kernel of notebook 00 285 MB without PyTorch, 503 MB once a cell has
# imported PyTorch. Measured by running the notebook that times an all-reduce (then numbered
# 12, now 13) with nbclient (peak RSS, ru_maxrss): the
# kernel 349 MB and the larger of the two gloo workers of its all-reduce timing 347 MB, both
# workers alive at once: 349 + 2 x 347 + 172 = 1.22 GB at the peak.
# The guarantee covers the steady state with PyTorch (512 MiB = 537 MB > 503 MB); the limit
# covers the notebook 13 peak with 0.4 GB to spare, e.g. for a second kernel without PyTorch
# (113 MB). JupyterHub's K/M/G suffixes are powers of 1024: 1.5G = 1.61 GB.
c.Spawner.mem_guarantee = "512M"
c.Spawner.mem_limit = "1.5G"
# One core at most per learner: the model is numpy on small arrays and the live cells time
# small CPU operations; a share of 0.05 core is enough at rest (deploy/README.md, "Sizing for
# 50 and 500 learners").
c.Spawner.cpu_limit = 1.0
c.Spawner.cpu_guarantee = 0.05
c.Spawner.default_url = "/lab/tree/notebooks/00_start_here.ipynb"
# A first start loads JupyterLab and, with Docker, may pull the image.
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 120


def _student_id(spawner):
    """nbgrader files a submission under the server's system user name unless told otherwise
    (see deploy/nbgrader_config.py): learners are filed under their hub name, instructors not."""
    if spawner.user.admin or spawner.user.name in INSTRUCTORS:
        return ""
    return spawner.user.name


c.Spawner.environment = {"DLPERF_STUDENT_ID": _student_id}

SPAWNER = _env("DLPERF_HUB_SPAWNER", "docker")
if SPAWNER == "docker":
    # `pip install dockerspawner`; the image is built from deploy/Dockerfile. mem_limit and
    # cpu_limit become the container's cgroup limits. The nbgrader exchange is one volume
    # shared by every container (deploy/nbgrader_config.py names its path).
    c.JupyterHub.spawner_class = "docker"
    c.DockerSpawner.image = _env("DLPERF_HUB_IMAGE", "dlperf-widgets-course:latest")
    c.DockerSpawner.remove = True
    c.DockerSpawner.notebook_dir = "/home/jovyan"
    c.DockerSpawner.volumes = {
        "dlperf-home-{username}": "/home/jovyan",
        "dlperf-nbgrader-exchange": "/srv/nbgrader/exchange",
    }
    # The course into the learner's home at each start, never over the learner's edits.
    c.DockerSpawner.post_start_cmd = "cp -rn /srv/dlperf/course/. /home/jovyan/"
    c.DockerSpawner.network_name = _env("DLPERF_HUB_NETWORK", "dlperf-hub")
    c.JupyterHub.hub_ip = "0.0.0.0"  # containers reach the hub over the Docker network
    # The hub's address as the containers see it (the host's address on that network).
    if os.environ.get("DLPERF_HUB_CONNECT_IP"):
        c.JupyterHub.hub_connect_ip = os.environ["DLPERF_HUB_CONNECT_IP"]
elif SPAWNER == "systemd":
    # `pip install jupyterhub-systemdspawner` (what The Littlest JupyterHub uses): one system
    # user per learner, mem_limit and cpu_limit become systemd's MemoryMax and CPUQuota.
    c.JupyterHub.spawner_class = "systemd"
    c.SystemdSpawner.dynamic_users = True
    c.SystemdSpawner.isolate_tmp = True
    c.SystemdSpawner.isolate_devices = True
elif SPAWNER == "simple":
    # Local processes under the hub's own system user, one home per learner. Nothing is
    # isolated and no memory limit is enforced: for a trial on a laptop and for the test.
    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = os.path.join(
        _env("DLPERF_HUB_HOME_ROOT", "/srv/dlperf/home"), "{username}"
    )
else:
    raise ValueError(
        f"'DLPERF_HUB_SPAWNER' must be one of docker, systemd, simple (got {SPAWNER!r})"
    )

# ---------------------------------------------------------------------------------------------
# Idle culling: a learner who closes the laptop gives the memory back.
# ---------------------------------------------------------------------------------------------
# jupyterhub-idle-culler runs as a hub service with only the scopes it needs (its README).
IDLE_S = int(_env("DLPERF_HUB_IDLE_S", "3600"))
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={IDLE_S}",
            f"--cull-every={max(60, IDLE_S // 10)}",
            "--max-age=0",
        ],
    }
]
