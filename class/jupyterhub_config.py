"""JupyterHub for a class: the course from this checkout, one private workspace per student.

Started by `python3 class/hub.py start` (make hub), which passes the settings below as environment variables
(COURSE_HUB_*) and runs the hub as root in class/data/. Read top to bottom:

1. Where the hub listens and keeps its data.
2. Who may log in: the system users on the class roster (class/data/roster.txt, read at each login); the roster's
   teachers are the hub's admins.
3. Each student's server: `jupyterhub-singleuser` from the course environment (.venv, shared, read-only to
   students), run as the student, rooted at ~/workspace, one thread, an address-space limit per process.
4. Before each start: the student's workspace is made or updated, as the student, with the rules of `make lab`
   (stubbed exercises, their language, a changed lesson never overwritten).
5. Idle servers are stopped (jupyterhub-idle-culler), and class/hub.py's admin service.
"""

import asyncio
import os
import resource
import sys
from pathlib import Path

from jupyterhub.auth import PAMAuthenticator
from jupyterhub.spawner import LocalProcessSpawner

CLASS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(CLASS_DIR))
import hub  # noqa: E402  (class/hub.py: the roster, the paths, the staged course)

c = get_config()  # noqa: F821  (JupyterHub's config loader provides it)

# 1. Where ------------------------------------------------------------------------------------------------------------
IP = os.environ.get("COURSE_HUB_IP", "127.0.0.1")  # loopback by default; a class network: `hub.py start --ip 0.0.0.0`
DATA = hub.data_dir()
c.JupyterHub.bind_url = f"http://{IP}:{os.environ.get('COURSE_HUB_PORT', '8000')}"
c.JupyterHub.hub_ip = "127.0.0.1"  # the hub's own API: for the proxy and the servers on this machine only
c.JupyterHub.hub_port = int(os.environ.get("COURSE_HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('COURSE_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.command = [str(hub.PROXY)]  # npm's configurable-http-proxy, in class/node_modules
c.ConfigurableHTTPProxy.pid_file = str(DATA / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{DATA / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(DATA / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # `hub.py stop` stops every student's server too


# 2. Who --------------------------------------------------------------------------------------------------------------
class RosterAuthenticator(PAMAuthenticator):
    """System users' passwords (PAM); only people on the class roster, read again at each login, so
    `hub.py add-users` and `remove-users` take effect without a restart."""

    def check_allowed(self, username, authentication=None):
        return hub.member(username) is not None

    def is_admin(self, handler, authentication):
        found = hub.member(authentication["name"])
        return bool(found and found.teacher)


c.JupyterHub.authenticator_class = RosterAuthenticator
c.Authenticator.admin_users = {m.name for m in hub.current_roster() if m.teacher}
c.PAMAuthenticator.open_sessions = False  # no login session (utmp, motd) for a notebook server
c.Authenticator.allow_existing_users = False
c.Authenticator.any_allow_config = True  # the roster is the allow list (check_allowed above)


# 3. Each student's server ------------------------------------------------------------------------------------------
MEMORY_LIMIT = int(os.environ.get("COURSE_STUDENT_MEMORY_GIB", "8")) * 2**30  # address space per process


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner (the server runs as the student, from their home) with an address-space limit that
    the kernels inherit: one student's 20 GB tensor fails in their own kernel, not the machine."""

    def make_preexec_fn(self, name):
        become_student = super().make_preexec_fn(name)

        def preexec():
            become_student()
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

        return preexec


c.JupyterHub.spawner_class = CourseSpawner
STUDENT_PYTHON = str(hub.student_python())  # .venv's Python, or class/student-python (see class/hub.py)
c.Spawner.cmd = [STUDENT_PYTHON, "-m", "jupyterhub.singleuser"]
c.Spawner.notebook_dir = f"~/{hub.WORKSPACE_NAME}"
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--LabApp.custom_css=True"]  # the course's style sheet: Chinese in the bundled font
c.Spawner.environment = {
    "JUPYTER_CONFIG_DIR": str(hub.ROOT / "jupyter"),  # shared, read-only: the style sheet
    "JUPYTERLAB_SETTINGS_DIR": lambda spawner: f"{spawner.user_env({})['HOME']}/.jupyter/lab/user-settings",
    "JUPYTERLAB_WORKSPACES_DIR": lambda spawner: f"{spawner.user_env({})['HOME']}/.jupyter/lab/workspaces",
    "OMP_NUM_THREADS": "1",  # as `make lab`: the lessons' printed values assume one thread
    "PYTHONHASHSEED": "0",
}
c.Spawner.start_timeout = 180  # a busy machine starts a server in tens of seconds
c.Spawner.http_timeout = 120
c.Spawner.mem_limit = f"{MEMORY_LIMIT // 2**30}G"  # shown to the server (MEM_LIMIT); CourseSpawner enforces it


# 4. The workspace, before each start -------------------------------------------------------------------------------
async def make_workspace(spawner):
    """Stage the stubbed course (as root: notebooks/ holds the answers), then sync ~/workspace as the student,
    so a student's link cannot make the hub write or read anything of someone else's."""
    name = spawner.user.name
    found = hub.member(name)
    hub.stage()
    command = [
        STUDENT_PYTHON,
        str(CLASS_DIR / "hub.py"),
        "sync-workspace",
        "--lang",
        found.language if found else "both",
    ]
    home = spawner.user_env({})["HOME"]
    process = await asyncio.create_subprocess_exec(
        *command,
        user=name,
        group=name,
        extra_groups=[],
        cwd=home,
        env={"HOME": home, "PATH": "/usr/bin:/bin", "COURSE_HUB_DATA": str(DATA), "LANG": "C.UTF-8"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    spawner.log.info("workspace of %s: %s", name, output.decode(errors="replace").strip())
    if process.returncode != 0:
        raise RuntimeError(f"could not make the workspace of {name}")


c.Spawner.pre_spawn_hook = make_workspace

# 5. Idle culling and the admin service ----------------------------------------------------------------------------
IDLE_SECONDS = int(os.environ.get("COURSE_IDLE_SECONDS", "3600"))
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_SECONDS}"],
    },
    {"name": "course-admin", "api_token": hub.admin_token()},  # class/hub.py remove-users
]
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    },
    {"name": "course-admin", "scopes": ["admin:users", "admin:servers"], "services": ["course-admin"]},
]
