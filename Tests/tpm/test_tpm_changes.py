"""A TPM that changes under a running process, and a process that forks while it talks to the TPM
(issue 35, cases 5-7), in one process through the Python binding against a swtpm of this module's
own (what these tests do to it — a clear, an owner password — would disturb the other modules').

0.3.0 kept the hardware ID in memory: after tpm2_clear the process went on answering the old ID
while attest() certified the new key, and after an owner password was set it still answered. Now
a clear is refused at the next call (the salting key is not the one pinned) until the pin is
forgotten, and then the new ID follows in the same process. And
a child forked during a swtpm conversation kept the parent's connection open: swtpm serves one at
a time, so the child's own first call never returned and the parent's calls blocked past their
deadline while the child lived."""
import json
import os
import subprocess
import sys

import pytest

from test_deviceid_device import deviceid

APP = "com.example.changing"
DEADLINE_MS = 2000
SLACK_S = 0.5   # issue 35: no call outlives its deadline by more than 0.5 s


def in_one_process(machine, script, *args, timeout=60):
    env = dict(os.environ, DEVICEID_TPM_TCTI=machine.tpm.tcti, TPM2TOOLS_TCTI=machine.tpm.tcti,
               DEVICEID_TIMEOUT_MS=str(DEADLINE_MS))
    result = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


CLEARED = r"""
import json, os, subprocess, sys, time
import deviceid
app = sys.argv[1]
slowest = [0.0]
def timed(call, *args):
    started = time.monotonic()
    try:
        return call(*args)
    finally:
        slowest[0] = max(slowest[0], time.monotonic() - started)
def tool(*argv):
    subprocess.run(list(argv), check=True, capture_output=True, timeout=60)
def evidence_id():
    return json.loads(timed(deviceid.attest, app, b"n" * 32))["hardware_id"]
out = {"before": timed(deviceid.hardware_id, app), "evidence_before": evidence_id()}
tool("tpm2_clear")
try:
    out["refused_after_clear"] = timed(deviceid.hardware_id, app)
except deviceid.DeviceIDError as e:
    out["refused_after_clear"] = [e.name, str(e)]
tool(os.environ["DEVICEID_TEST_CLI"], "tpm-pin", "forget")   # another process: the way out
out["after_clear"] = timed(deviceid.hardware_id, app)
out["evidence_after_clear"] = evidence_id()
tool("tpm2_changeauth", "-c", "o", "owner-secret")
try:
    out["with_owner_password"] = timed(deviceid.hardware_id, app)
except deviceid.DeviceIDError as e:
    out["with_owner_password"] = [e.name, str(e)]
out["slowest_s"] = slowest[0]
print(json.dumps(out))
"""


@pytest.fixture
def machine(machines, request):
    return machines(request.node.name[-12:])


def test_the_hardware_id_follows_a_clear_and_an_owner_password_in_a_running_process(machine):
    out = in_one_process(machine, CLEARED, APP)
    assert out["before"] == out["evidence_before"], out
    # The clear made a new salting key: refused until this machine's pin for the TPM is forgotten
    # (docs/STATE.md, "TPM pins"), which another process did while this one ran.
    name, message = out["refused_after_clear"]
    assert name == "IO" and "another salting key" in message and "tpm-pin forget" in message, out
    assert out["after_clear"] != out["before"], "a clear makes a new storage seed: a new ID at the next call"
    assert out["after_clear"] == out["evidence_after_clear"], "hardware_id() and the evidence agree"
    name, message = out["with_owner_password"]
    assert name == "PERMISSION" and "a hierarchy has a password" in message, out
    assert out["slowest_s"] < DEADLINE_MS / 1000 + SLACK_S, out
    # Case 7, through the command: worded as the TPM's problem, not a store's.
    worded = deviceid(machine, "hardware-id", APP)
    assert worded.returncode == 19, worded.stderr   # PERMISSION
    assert "TPM access denied: " in worded.stderr and "unsafe location" not in worded.stderr, worded.stderr
    # A new process agrees with what the running one saw after the clear (the password removed).
    subprocess.run(["tpm2_changeauth", "-c", "o", "-p", "owner-secret"], check=True, capture_output=True,
                   env=dict(os.environ, TPM2TOOLS_TCTI=machine.tpm.tcti), timeout=60)
    fresh = deviceid(machine, "hardware-id", APP)
    assert fresh.returncode == 0 and fresh.stdout.strip() == out["after_clear"], fresh.stderr


def test_tpm_statuses_are_worded_as_the_tpms(tmp_path):
    """No TPM: "TPM unavailable: …", not "store unavailable: …" (case 7)."""
    result = deviceid(None, "hardware-id", APP, env={"DEVICEID_TPM_TCTI": f"swtpm:path={tmp_path}/none.sock"})
    assert result.returncode == 15, result.stderr   # UNAVAILABLE
    assert "TPM unavailable: " in result.stderr and "store unavailable" not in result.stderr, result.stderr


# Phase 1: a thread asks for evidence in a loop (attest: a conversation every time) while the main
# thread forks every 30 ms, so that many children are born inside a conversation; they hold what
# they inherited while alive. Phase 2, once the loop has ended: each child makes its own first
# call, one at a time (a lock file: swtpm has three object slots, so no two callers at once).
FORKING = r"""
import fcntl, json, os, sys, threading, time
import deviceid
app, seconds, lock = sys.argv[1], float(sys.argv[2]), sys.argv[3]
stop = time.monotonic() + seconds
durations, errors, inside = [], [], [False]
def parent_calls():
    while time.monotonic() < stop:
        started = time.monotonic()
        inside[0] = True
        try:
            deviceid.attest(app, b"n" * 32)
        except deviceid.DeviceIDError as e:
            errors.append(str(e))
        inside[0] = False
        durations.append(time.monotonic() - started)
# The process's first call before any fork: a child forked during another thread's *first* call
# may be forked inside its load of tpm2-tss, and then has no TPM (include/deviceid.h, fork()); this
# test is about conversations, every later one.
deviceid.attest(app, b"w" * 32)
thread = threading.Thread(target=parent_calls)
thread.start()
phase_two, go = os.pipe()
children, born_inside = [], 0
while time.monotonic() < stop:
    born_inside += inside[0]   # the thread is inside attest(): a conversation under way
    pid = os.fork()
    if pid == 0:
        os.close(go)
        os.read(phase_two, 1)          # EOF when the parent's loop has ended
        with open(lock, "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            started = time.monotonic()
            try:
                deviceid.hardware_id(app)
                status = 0 if time.monotonic() - started < 2.5 else 3
            except deviceid.DeviceIDError:
                status = 1
        os._exit(status)
    children.append(pid)
    time.sleep(0.03)
thread.join()
os.close(go)
statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
print(json.dumps({"calls": len(durations), "slowest": max(durations), "errors": errors, "children": statuses,
                  "born_inside": born_inside}))
"""


def test_children_forked_during_tpm_calls_neither_hang_nor_block_the_parent(machine):
    """No parent call outlives its deadline while children born inside its conversations live, and
    every child's own first call answers within it (0.3.0: the script never finished)."""
    out = in_one_process(machine, FORKING, APP, "4", str(machine.tpm.dir / "children.lock"), timeout=90)
    assert out["errors"] == [] and out["calls"] > 20, out
    assert out["slowest"] < DEADLINE_MS / 1000 + SLACK_S, out
    assert out["children"] and set(out["children"]) == {0}, out
    # The test is about children born inside conversations: most of them are (the thread is in
    # attest() but for the few microseconds between calls).
    assert out["born_inside"] >= len(out["children"]) // 2, out
