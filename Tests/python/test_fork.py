"""A library lives in other people's processes, and those fork: Python multiprocessing (fork is
Debian 12's default), prefork servers. Children must get their answers at normal speed and never
hold a lock the parent or other processes need."""
import json
import multiprocessing
import os
import sys
import threading
import time

import deviceid
from conftest import run


def _child_get(app):
    start = time.monotonic()
    try:
        value = deviceid.get(app)
    except deviceid.DeviceIDError as error:
        value = f"{error.name}: {error}"
    return value, time.monotonic() - start


def _child_get_on_new_thread(app):
    # A thread of its own: nothing the forking thread cached answers for it.
    result = []
    thread = threading.Thread(target=lambda: result.append(_child_get(app)))
    thread.start()
    thread.join()
    return result[0]


def test_multiprocessing_fork_children_answer_at_once_with_the_parents_id(store, keyring):
    app = f"fork.mp.{time.time_ns()}"
    other = f"fork.mp.other.{time.time_ns()}"
    parent_id = deviceid.get(app)
    other_id = run([os.environ["DEVICEID_TEST_CLI"], "get", other]).stdout.strip()  # made by another process
    context = multiprocessing.get_context("fork")
    with context.Pool(4) as pool:
        answers = pool.map(_child_get_on_new_thread, [app] * 4 + [other] * 4)
    for value, elapsed in answers[:4]:
        assert value == parent_id and elapsed < 1.0, (value, elapsed)
    for value, elapsed in answers[4:]:
        assert value == other_id and elapsed < 1.0, (value, elapsed)


def _child_keyring_work(app, service):
    start = time.monotonic()
    minted = deviceid.get_info(app)
    deviceid.store_secret(service, "acct", b"from a child")
    secret = deviceid.lookup_secret(service, "acct")
    return minted.id, minted.source, secret, time.monotonic() - start


def test_a_forked_child_mints_and_keeps_secrets_in_the_keyring(store, keyring):
    """GLib's D-Bus does not survive fork; the child reaches the Secret Service over a libdbus
    connection of its own, at normal speed, and what it writes is the real keyring's."""
    deviceid.lookup_secret("fork.svc", "nobody")  # the parent has used the keyring
    app, service = f"fork.new.{time.time_ns()}", f"fork.svc.{time.time_ns()}"
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        minted, source, secret, elapsed = pool.apply(_child_keyring_work, (app, service))
    assert source == "created" and secret == b"from a child" and elapsed < 1.0, (source, secret, elapsed)
    assert run(["secret-tool", "lookup", "service", "deviceid.app", "username", app]).stdout == minted
    assert deviceid.get(app) == minted, "the parent reads what the child kept"
    assert deviceid.lookup_secret(service, "acct") == b"from a child"
    deviceid.delete_secret(service, "acct")


def _sleep_holding_nothing(seconds):
    time.sleep(seconds)


def test_a_sleeping_child_holds_no_store_lock(tmp_path, monkeypatch):
    """The file store's lock is a record lock, which children never inherit: a child forked while
    another thread held it must not block anyone."""
    directory = tmp_path / "store"
    monkeypatch.setenv("DEVICEID_STORE_DIR", str(directory))
    deviceid.set_store_dir(str(directory))
    deviceid.set_backend("file")
    try:
        stop = threading.Event()

        def churn():
            n = 0
            while not stop.is_set():
                # Minting holds the store lock across two fsyncs: a fork lands inside it often.
                deviceid.get(f"fork.lock.{n}")
                n += 1

        worker = threading.Thread(target=churn)
        worker.start()
        children = []
        for _ in range(40):
            pid = os.fork()
            if pid == 0:
                _sleep_holding_nothing(8)
                os._exit(0)
            children.append(pid)
            time.sleep(0.005)
        # Neither this process's own thread nor another process may wait for a sleeping child.
        start = time.monotonic()
        stop.set()
        worker.join()
        result = run([os.environ["DEVICEID_TEST_CLI"], "--backend", "file", "reset", "fork.lock"])
        elapsed = time.monotonic() - start
        deviceid.reset("fork.lock")
        assert result.returncode == 0 and elapsed < 2.0, f"{elapsed:.1f} s: a sleeping child held the lock"
    finally:
        for pid in children:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        deviceid.set_backend("auto")
        deviceid.set_store_dir(None)


def test_a_child_forked_while_another_thread_seals_seals_too(tmp_path, monkeypatch):
    """The file store seals secrets with AES-256-GCM in libcrypto, which takes locks of its own (an
    implicit fetch in every EVP_EncryptInit_ex): a child forked while another thread held one would
    wait for it for good in its own first seal. fork() waits for the sealing under way
    (dids_computing_begin). Every child, forked at a random moment of the parent's sealing, stores
    and reads back a secret of its own within 5 s."""
    directory = tmp_path / "store"
    monkeypatch.setenv("DEVICEID_STORE_DIR", str(directory))
    deviceid.set_store_dir(str(directory))
    deviceid.set_backend("file")
    stop = threading.Event()

    def churn():
        n = 0
        while not stop.is_set():
            deviceid.store_secret("fork.seal.parent", f"a{n % 8}", b"parent's secret")
            n += 1

    worker = threading.Thread(target=churn)
    worker.start()
    children, statuses = [], {}
    try:
        for i in range(40):
            time.sleep(0.001 * (i % 7))
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    deviceid.store_secret("fork.seal.child", f"c{i}", b"child %d" % i)
                    status = 0 if deviceid.lookup_secret("fork.seal.child", f"c{i}") == b"child %d" % i else 2
                finally:
                    os._exit(status)
            children.append(pid)
        deadline = time.monotonic() + 5
        while len(statuses) < len(children) and time.monotonic() < deadline:
            for pid in children:
                if pid not in statuses:
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done == pid:
                        statuses[pid] = os.waitstatus_to_exitcode(status)
            time.sleep(0.01)
        assert len(statuses) == len(children), f"{len(children) - len(statuses)} of 40 children still sealing after 5 s"
        assert sorted(set(statuses.values())) == [0], statuses
    finally:
        stop.set()
        worker.join()
        for pid in set(children) - set(statuses):
            os.kill(pid, 9)
            os.waitpid(pid, 0)


# A fresh process whose thread makes the process's very first DeviceID call while the main thread
# forks at once, again and again: children are born while the library's shared instance, its
# locks and its surroundings are being made (swift_once). Each child calls once with a deadline;
# the parent reports how each child ended and how long it took.
FIRST_CALL = r"""
import json, os, sys, threading, time
import deviceid
deviceid.set_timeout_ms(2000)
thread = threading.Thread(target=lambda: deviceid.get(sys.argv[1]))
thread.start()
children = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        started = time.monotonic()
        try:
            deviceid.get(sys.argv[1])
            code = 0
        except deviceid.DeviceIDError as e:   # a child forked mid-load may have no keyring library
            code = 0 if e.name == "UNAVAILABLE" and "forked while another thread" in str(e) else 2
        os._exit(code if time.monotonic() - started < 2.5 else 3)
    children.append((pid, time.monotonic()))
    time.sleep(0.002)
thread.join()
ended = []
for pid, born in children:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            ended.append(os.waitstatus_to_exitcode(status))
            break
        if time.monotonic() - born > 10:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            ended.append("hung")
            break
        time.sleep(0.01)
print(json.dumps(ended))
"""


def test_children_forked_during_the_processes_first_call_never_hang(store, keyring, tmp_path):
    """0.3.0: a child forked during another thread's first call spun in swift_once for good (1 run
    in 5 of the TPM fork test); the library's instance is now made before fork() (a prepare
    handler). Then 1 child in 96 to 320 still waited for good in GLib (g_type_class_ref,
    g_slice_alloc, g_once_init_enter): forked while the parent's thread was inside GLib before
    the library marked GLib as used; the mark now comes before GLib's first call. 20 fresh
    processes, 8 children each, born 2 ms apart from the first call's start."""
    script = tmp_path / "first_call.py"
    script.write_text(FIRST_CALL)
    for i in range(20):
        result = run([sys.executable, str(script), f"fork.first.{time.time_ns()}.{i}"], timeout=60)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == [0] * 8, (i, result.stdout, result.stderr[-1500:])
