"""The warm server's fidelity tier (issue 32): a warm-served child is a cold process of
the same spawn in every way the kernel can tell, or the spawn is served cold.

Each case starts the agent under a real wrapper (`unshare`, `setpriv`, `prlimit`,
`nice`, `chrt`, `taskset`, `setarch`, `choom`, a cgroup v2, bubblewrap, a seccomp
filter, `umask`, `ulimit`, a trapped signal, `TZ`) twice, as an editor would: through
this module's own warm server, and cold (`--no-warm`). Its scripted model has it run one
shell command that prints what the kernel attached to that command (namespaces,
/proc/self/status, cgroups, limits, nice, scheduling, hostname, network devices, ...)
and tries two writes: into the workspace (bind-mounted read-only in one case) and into a
folder only CAP_DAC_OVERRIDE may write. Both outputs must be equal; the warm spawn's
log says how it was served: by a warm child that took the spawn's context (named), or
cold, with the reason.

Runs as root (as CI does): the wrappers need it. The cgroup case creates a child
cgroup in the cgroup v2 hierarchy; bubblewrap is installed when missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acp_server.warm import place
from tests.debian_packages import ensure_package
from tests.e2e.acp_client import AGENT_COMMAND, AcpTestClient
from tests.e2e.model_script import call, text
from tests.e2e.spine import MakeAgent, agent_env, dirs
from tests.e2e.test_warm_server import WarmPlace, foreground_server
from tests.fakes.gemini_server import FakeGeminiServer, text_response

pytestmark = [
    pytest.mark.timeout(600),  # the server's warm-up, then two agents per case
    pytest.mark.cold,  # its own server and folder; each case asks for warm and cold itself
]

REPLY_S = 120.0
"""A cold agent's first prompt waits for its imports: slow beside a busy machine's load."""
WARM = re.compile(r"warm: served by child (\d+) of the warm server (\d+)")
COLD = re.compile(r"cold: the warm server refused \((.*)\)")

PROBE = r"""
for n in mnt net pid pid_for_children ipc uts user cgroup time; do
  echo "ns $n $(readlink /proc/self/ns/$n)"
done
grep -E '^(Uid|Gid|Groups|Cap|NoNewPrivs|Seccomp|Umask|SigBlk|SigIgn|Cpus_allowed_list)' \
  /proc/self/status
echo "cgroup $(tr '\n' ' ' < /proc/self/cgroup)"
cat /proc/self/limits
echo "nice $(nice)"
echo "ionice $(ionice -p $$)"
echo "sched $(chrt -p $$ | sed 's/^pid [0-9]*//' | tr '\n' ' ')"
echo "oom_score_adj $(cat /proc/self/oom_score_adj)"
echo "personality $(cat /proc/self/personality)"
echo "lsm $(cat /proc/self/attr/current 2>/dev/null)"
echo "root $(stat -L -c %d:%i /)"
echo "umask $(umask)"
echo "zone $(date +%Z)"
echo "hostname $(hostname)"
echo "net $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')"
echo "id $(id)"
if (echo probe > "written.$$") 2>/dev/null; then
  echo "workspace write: $(stat -c %a "written.$$")"; rm -f "written.$$"
else
  echo "workspace write: refused"
fi
if (echo probe > "LOCKED/written.$$") 2>/dev/null; then
  echo "locked write: done"; rm -f "LOCKED/written.$$"
else
  echo "locked write: refused"
fi
echo "probe end"
"""

SECCOMP_WRAPPER = """\
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
allow = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000))
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
program = Program(1, ctypes.cast(allow, ctypes.c_void_p))
if libc.prctl(22, 2, ctypes.byref(program), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
    sys.exit(f"seccomp: errno {ctypes.get_errno()}")
os.execvp(sys.argv[1], sys.argv[1:])
"""


FORGED_SPAWN = """\
import json, os, socket, sys
from acp_server.warm import context, wire
path, key, host_mnt = sys.argv[1:]
claim = context.gather()
claim["ns.mnt"] = host_mnt  # the server's mount namespace, not this process' own
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(path)
request = {"key": key, "argv": [], "env": dict(os.environ), "context": claim}
wire.send_request(sock, request, [0, 1, 2, os.open(".", os.O_RDONLY)])
print(json.dumps(wire.LineReader(sock).next()))
"""


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmPlace]:
    """This module's warm server, started in the foreground, unrestricted."""
    assert os.geteuid() == 0, "the fidelity tier needs root (as in CI): its wrappers do"
    with foreground_server("af", "the fidelity tier's server") as started:
        yield started


def _cgroup2_folder(path: str) -> Path:
    """The folder of cgroup `path` (as /proc/self/cgroup names it) in the v2 mount."""
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            fields, _, tail = line.partition(" - ")
            if tail.split()[:1] == ["cgroup2"]:
                root, mount = fields.split()[3:5]
                return Path(mount) / os.path.relpath(path, root)
    raise AssertionError("the cgroup case needs a cgroup v2 hierarchy mounted (none found)")


@pytest.fixture
def cgroup() -> Iterator[Path]:
    """A child cgroup v2 of this process' own (with memory.max when the memory
    controller is there), removed after."""
    own = next(
        line.split(":", 2)[2]
        for line in Path("/proc/self/cgroup").read_text().splitlines()
        if line.startswith("0::")
    )
    group = _cgroup2_folder(own) / f"adk-acp-fidelity-{os.getpid()}"
    try:
        group.mkdir()
    except OSError as exc:
        raise AssertionError(
            f"the cgroup case needs to create a child cgroup v2 ({group}): run as root "
            f"with the cgroup hierarchy writable ({exc})"
        ) from exc
    if (group / "memory.max").exists():
        (group / "memory.max").write_text(str(4 << 30))
    try:
        yield group
    finally:
        deadline = time.monotonic() + 30
        while True:
            try:
                group.rmdir()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def _bwrap() -> str:
    return ensure_package("bubblewrap", lambda: shutil.which("bwrap"), "bubblewrap (bwrap)")


def _locked(tmp_path: Path) -> Path:
    """A folder of another user that only CAP_DAC_OVERRIDE lets root write into."""
    folder = tmp_path / "locked"
    folder.mkdir()
    os.chown(folder, 65534, 65534)
    folder.chmod(0o755)
    return folder


def _probe_script(tmp_path: Path, locked: Path) -> Path:
    script = tmp_path / "probe.jsonl"
    command = textwrap.dedent(PROBE).replace("LOCKED", str(locked))
    lines = [call("run_shell_command", {"command": command}), text("probed")]
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return script


def _shell_output(client: AcpTestClient, session: str) -> str:
    texts = [
        c["content"]["text"]
        for u in client.updates(session, "tool_call_update")
        for c in u.get("content") or []
        if c.get("type") == "content" and c["content"].get("type") == "text"
    ]
    found = [t for t in texts if "probe end" in t]
    assert found, f"no probe output{client.debug_tail()}"
    return str(found[-1])


async def _run(
    make_agent: MakeAgent,
    tmp_path: Path,
    warm: WarmPlace,
    wrapper: list[str],
    env: dict[str, str],
    cold: bool,
    args: tuple[str, ...],
) -> tuple[str, str]:
    """One spawn under `wrapper`: (the probe's output, the agent's log)."""
    d = dirs(tmp_path)
    script = _probe_script(tmp_path / ("cold" if cold else "warm"), tmp_path / "locked")
    argv = [*wrapper, *AGENT_COMMAND, "--fake-responses", str(script), "--approval-mode", "yolo"]
    argv += [*args, *(["--no-warm"] if cold else [])]
    full_env = {**agent_env(d, api_key=None), **warm.env(), **env}
    client = await make_agent(argv, full_env, cwd=str(d.workspace), default_timeout=REPLY_S)
    await client.initialize({})  # no editor terminal: the command runs in the agent
    session = (await client.new_session(d.workspace))["sessionId"]
    assert (await client.prompt(session, "probe"))["stopReason"] == "end_turn"
    output = _shell_output(client, session)
    assert await client.close() == 0
    return output, client.stderr_text


async def _compare(
    make_agent: MakeAgent,
    tmp_path: Path,
    warm: WarmPlace,
    wrapper: list[str],
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> tuple[str, str]:
    """Warm and cold side by side: equal outputs; (the output, the warm spawn's log)."""
    for sub in ("warm", "cold"):
        (tmp_path / sub).mkdir()
    if not (tmp_path / "locked").exists():
        _locked(tmp_path)
    (warm_out, warm_log), (cold_out, _) = await asyncio.gather(
        _run(make_agent, tmp_path, warm, wrapper, env or {}, False, args),
        _run(make_agent, tmp_path, warm, wrapper, env or {}, True, args),
    )
    how = WARM.search(warm_log) or COLD.search(warm_log)
    assert how is not None, f"the warm spawn's log does not say how it was served:\n{warm_log}"
    warm_out, cold_out = _namespaces_named(warm_out), _namespaces_named(cold_out)
    assert warm_out == cold_out, f"served as: {how.group(0)}\n" + _diff(warm_out, cold_out)
    return warm_out, warm_log


def _namespaces_named(out: str) -> str:
    """Each namespace as `host` (this test process') or `new`: a wrapper run twice makes
    two namespaces of each kind it unshares, with two ids."""

    def name(found: re.Match[str]) -> str:
        kind, ident = found.group(1), found.group(2)
        try:
            host = os.readlink(f"/proc/self/ns/{kind}")
        except OSError:
            host = ""
        return f"ns {kind} {'host' if ident == host else 'new'}"

    return re.sub(r"^ns (\S+) (\S*)$", name, out, flags=re.M)


def _diff(warm_out: str, cold_out: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        cold_out.splitlines(), warm_out.splitlines(), "cold", "warm", lineterm="", n=0
    )
    return "\n".join(lines)


def _took(log: str, *labels: str) -> None:
    found = WARM.search(log)
    assert found is not None, f"not served warm:\n{log}"
    line = log[found.start() :].splitlines()[0]
    for label in labels:
        assert label in line, f"{label!r} not taken: {line}"


def _refused(log: str, reason: str) -> None:
    found = COLD.search(log)
    assert found is not None and reason in found.group(1), f"not refused for {reason!r}:\n{log}"


def _in_shell(script: str) -> list[str]:
    """A wrapper that runs `script` in sh, then execs the agent."""
    return ["sh", "-c", f'{script}; exec "$@"', "sh"]


# ------------------------------------------------------------------ taken by the child


async def test_an_unrestricted_spawn_is_served_warm_and_takes_nothing(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    out, log = await _compare(make_agent, tmp_path, warm, [], args=("--log-level", "DEBUG"))
    assert WARM.search(log) and "took the spawn's" not in log
    assert "the spawn's context: " in log  # the whole context, at DEBUG
    assert "workspace write: 644" in out and "locked write: done" in out


async def test_umask_077(warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path) -> None:
    out, log = await _compare(make_agent, tmp_path, warm, _in_shell("umask 077"))
    _took(log, "umask")
    assert "umask 0077" in out and "workspace write: 600" in out
    assert "took the spawn's umask" in Path(warm.folder, f"{warm.key}.log").read_text()


async def test_ulimit_n_256_and_ulimit_v(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    wrapper = ["prlimit", "--nofile=256:256", *_in_shell("ulimit -v 33554432")]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _took(log, "RLIMIT_NOFILE", "RLIMIT_AS")
    assert re.search(r"Max open files\s+256\s+256", out)


async def test_nice_io_priority_and_scheduling_policy(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    wrapper = ["nice", "-n", "10", "ionice", "-c", "3", "chrt", "--batch", "0"]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _took(log, "nice", "I/O priority", "scheduling policy")
    assert "nice 10" in out and "SCHED_BATCH" in out and "ionice idle" in out


async def test_affinity_personality_oom_score_and_an_ignored_signal(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    wrapper = ["taskset", "-c", "0", "setarch", os.uname().machine, "-R"]
    wrapper += ["choom", "-n", "300", "--", *_in_shell("trap '' HUP")]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _took(log, "CPU affinity", "personality", "oom_score_adj", "ignored signals")
    assert "Cpus_allowed_list:\t0\n" in out and "oom_score_adj 300" in out


async def test_no_new_privs(warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path) -> None:
    out, log = await _compare(make_agent, tmp_path, warm, ["setpriv", "--no-new-privs"])
    _took(log, "no_new_privs")
    assert "NoNewPrivs:\t1" in out


async def test_dropped_capabilities(warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path) -> None:
    """Root with every capability dropped cannot write into another user's folder."""
    wrapper = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all"]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _took(log, "bounding capabilities", "effective capabilities")
    assert "CapEff:\t0000000000000000" in out and "locked write: refused" in out


async def test_supplementary_groups(warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path) -> None:
    out, log = await _compare(make_agent, tmp_path, warm, ["setpriv", "--groups=4,24", "--"])
    _took(log, "supplementary groups")
    assert re.search(r"Groups:\t4 24", out)


async def test_a_cgroup_v2(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path, cgroup: Path
) -> None:
    wrapper = _in_shell(f"echo $$ > {cgroup}/cgroup.procs")
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _took(log, "cgroups")
    assert f"/{cgroup.name} " in out


async def test_tz_is_the_agent_s_own_date(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path, fake_gemini: FakeGeminiServer
) -> None:
    """The model is told the date of the spawn's `TZ`: a zone whose date is not UTC's now."""
    now = datetime.now(UTC)
    zone, hours = ("Etc/GMT-14", 14) if now.hour >= 12 else ("Etc/GMT+12", -12)
    expected = (now + timedelta(hours=hours)).date().isoformat()
    fake_gemini.add(text_response("one"), text_response("two"))
    logs = []
    d = dirs(tmp_path)
    for cold in (False, True):
        env = {**agent_env(d, fake_gemini), **warm.env(TZ=zone)}
        argv = [*AGENT_COMMAND, *(["--no-warm"] if cold else [])]
        client = await make_agent(argv, env, cwd=str(d.workspace), default_timeout=REPLY_S)
        await client.initialize({})
        session = (await client.new_session(d.workspace))["sessionId"]
        assert (await client.prompt(session, "what day is it?"))["stopReason"] == "end_turn"
        assert await client.close() == 0
        logs.append(client.stderr_text)
    dates = [
        re.findall(r"Today's date: (\d{4}-\d\d-\d\d)", str(r.body))[0]
        for r in fake_gemini.generate_requests
    ]
    assert dates == [expected, expected], (dates, zone)
    _took(logs[0], "TZ")


# ---------------------------------------------------------------- served cold, and why


async def test_unshare_mount_with_a_read_only_workspace(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    """The workspace bind-mounted read-only in a mount namespace: no write, warm or cold."""
    workspace = dirs(tmp_path).workspace
    remount = f"mount --bind {workspace} {workspace} && mount -o remount,bind,ro {workspace}"
    wrapper = ["unshare", "--mount", "--propagation", "private", *_in_shell(remount)]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _refused(log, "mnt namespace is not the warm server's")
    assert "workspace write: refused" in out
    server_log = Path(warm.folder, f"{warm.key}.log").read_text()
    assert "which serves itself cold: the spawn's mnt namespace is not" in server_log


async def test_unshare_net_pid_uts_ipc(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    wrapper = ["unshare", "--net", "--pid", "--fork", "--uts", "--ipc"]
    wrapper += _in_shell("hostname fidelity-box")
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _refused(log, "namespace is not the warm server's")
    assert "hostname fidelity-box" in out and re.search(r"^net lo $", out, re.M)


async def test_unshare_user_cgroup_time(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    wrapper = ["unshare", "--user", "--map-root-user", "--cgroup", "--time", "--fork"]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _refused(log, "namespace is not the warm server's")
    assert "ns user new" in out and "ns cgroup new" in out and "ns time new" in out


async def test_bubblewrap(warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path) -> None:
    workspace = dirs(tmp_path).workspace
    wrapper = [_bwrap(), "--dev-bind", "/", "/", "--ro-bind", str(workspace), str(workspace)]
    wrapper += ["--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-ipc"]
    wrapper += ["--proc", "/proc", "--die-with-parent", "--"]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _refused(log, "namespace is not the warm server's")
    assert "workspace write: refused" in out and "NoNewPrivs:\t1" in out


async def test_a_seccomp_filter(warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path) -> None:
    wrapper = [sys.executable, "-c", SECCOMP_WRAPPER]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _refused(log, "seccomp")
    assert "Seccomp_filters:\t1" in out


async def test_another_gid(warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path) -> None:
    wrapper = ["setpriv", "--regid=65534", "--keep-groups", "--"]
    out, log = await _compare(make_agent, tmp_path, warm, wrapper)
    _refused(log, "gid is not the warm server's")
    assert "Gid:\t65534" in out


async def test_import_time_environment(
    warm: WarmPlace, make_agent: MakeAgent, tmp_path: Path
) -> None:
    """A certificate file, a locale or a PYTHON* variable the server did not start with."""
    env = {"SSL_CERT_FILE": str(tmp_path / "my-ca.pem")}
    _, log = await _compare(make_agent, tmp_path, warm, [], env=env)
    _refused(log, "SSL_CERT_FILE is not the warm server's")


def test_a_spawn_cannot_borrow_the_server_s_context(warm: WarmPlace, tmp_path: Path) -> None:
    """A process in its own mount namespace that sends the server's namespace as its own
    is refused: the child reads the spawn's context from /proc/<its pid> (SO_PEERCRED)."""
    host_mnt = os.readlink("/proc/self/ns/mnt")
    socket_path = place.socket_path(warm.folder, warm.key)
    run = subprocess.run(
        ["unshare", "--mount", sys.executable, "-c", FORGED_SPAWN, socket_path, warm.key, host_mnt],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert "mnt namespace is not what it sent" in answer.get("refused", ""), answer
