"""The deadline from the first byte (issue "On the TPMs people have", case 1): the TCTI's
initialisation and TPM2_Startup are under the call's deadline like every other command. On the
previous commit a swtpm silent in the TCTI's CMD_SET_LOCALITY, or in TPM2_Startup, held the caller
past any deadline (12 s here, then killed), a dripping one for 4.5 s on a 1 s deadline, and a
client holding swtpm's one command connection for as long as it held it (14.9 s measured). Behind
such a client, swtpm's listen queue (listen(fd, 1): Linux queues two) is full after two calls: tpm2-tss's
swtpm TCTI then blocked in connect() for good (issue 34, case 1); DeviceID's own TCTI waits for the
connection until the deadline.

The misbehaving TPMs are Tests/fakes/fake-swtpm (faults a real swtpm cannot show); the holder
of the connection is a real swtpm."""
import socket
import subprocess
import time
from pathlib import Path

import pytest

from test_deviceid_device import APP_A, ROOT, deviceid, hardware_id

FAKE = ROOT / "Tests" / "fakes" / "fake-swtpm"
DEADLINE_MS = 1000
# What the deadline may be exceeded by: the process's own start and exit, and a poll's wake-up.
SLACK_S = 0.5


def timed(tcti):
    started = time.monotonic()
    result = deviceid(None, "--timeout", str(DEADLINE_MS), "hardware-id", APP_A, env={"DEVICEID_TPM_TCTI": tcti},
                      timeout=30)
    return result, time.monotonic() - started


@pytest.fixture
def fake_swtpm(tmp_path):
    processes = []

    def start(mode):
        path = tmp_path / f"{mode}.sock"
        process = subprocess.Popen([str(FAKE), str(path), mode], stdout=subprocess.PIPE, text=True)
        processes.append(process)
        assert process.stdout.readline().strip() == "ready"
        return f"swtpm:path={path}"
    yield start
    for process in processes:
        process.kill()
        process.wait()


@pytest.mark.parametrize("mode", ["silent-control", "silent", "drip"])
def test_a_tpm_that_does_not_answer_in_time_ends_at_the_deadline(fake_swtpm, mode):
    result, elapsed = timed(fake_swtpm(mode))
    assert result.returncode == 16, result.stderr  # TIMED_OUT
    assert f"did not answer within {DEADLINE_MS} ms" in result.stderr
    assert elapsed <= DEADLINE_MS / 1000 + SLACK_S, f"{elapsed:.2f} s on a {DEADLINE_MS} ms deadline ({mode})"


def test_a_client_holding_swtpms_connection_costs_the_deadline_not_its_hold(machine_a):
    before = hardware_id(machine_a, APP_A)
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder.connect(str(machine_a.tpm.socket))  # swtpm serves one command connection at a time
    try:
        result, elapsed = timed(machine_a.tpm.tcti)
    finally:
        holder.close()
    assert result.returncode == 16, result.stderr
    assert elapsed <= DEADLINE_MS / 1000 + SLACK_S, f"{elapsed:.2f} s on a {DEADLINE_MS} ms deadline"
    assert hardware_id(machine_a, APP_A) == before, "the TPM answers again, the same, once let go"


def test_calls_behind_a_full_listen_queue_each_end_at_the_deadline(machine_a):
    before = hardware_id(machine_a, APP_A)
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder.connect(str(machine_a.tpm.socket))
    try:
        # Each call's connection waits in swtpm's queue and stays there when the call gives up; the
        # queue holds two, so the third and fourth calls' connect() finds it full (EAGAIN).
        outcomes = [timed(machine_a.tpm.tcti) for _ in range(4)]
    finally:
        holder.close()
    for number, (result, elapsed) in enumerate(outcomes, 1):
        assert result.returncode == 16, f"call {number}: {result.stderr}"
        assert f"did not answer within {DEADLINE_MS} ms" in result.stderr, f"call {number}: {result.stderr}"
        assert elapsed <= DEADLINE_MS / 1000 + SLACK_S, f"call {number}: {elapsed:.2f} s on a {DEADLINE_MS} ms deadline"
    assert hardware_id(machine_a, APP_A) == before, "swtpm drains its queue and answers again, the same"
