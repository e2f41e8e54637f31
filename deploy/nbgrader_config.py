# nbgrader configuration for a hub: every server (learners' and instructors') reads it.
# Install it as /etc/jupyter/nbgrader_config.py in the learner image (deploy/Dockerfile does),
# or on The Littlest JupyterHub as /opt/tljh/user/etc/jupyter/nbgrader_config.py.
# The instructor's course folder adds exercises/nbgrader_config.py (the code stub) on top.
import os

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

# One course per hub; learners fetch and submit under this id.
c.CourseDirectory.course_id = os.environ.get("DLPERF_COURSE_ID", "dlperf101")

# The exchange: one folder every server can write to, shared between learners' servers (a
# Docker volume, a Kubernetes shared volume, or a local folder). It must exist, be owned by
# root and have mode 1777 (writable by all, sticky: nobody deletes another's submission).
c.Exchange.root = os.environ.get("DLPERF_NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
# Submissions keep the learners' exchange timestamps; a late one is marked late.
c.Exchange.timezone = "UTC"

# nbgrader names a submission after the server's system user, which is "jovyan" in containers
# (then it uses JUPYTERHUB_USER) but "jupyter-<name>" on The Littlest JupyterHub and the same
# user for everyone with a local-process spawner. deploy/jupyterhub_config.py hands each
# learner's server its hub name in DLPERF_STUDENT_ID (empty for instructors, who collect and
# grade everyone), so every submission is filed under the learner's hub name.
_student = os.environ.get("DLPERF_STUDENT_ID", "").strip()
if _student:
    c.CourseDirectory.student_id = _student
