"""The systemd unit python3-deviceid-verifier ships (issue 51, "Run as production runs it";
docs/SERVER.md, "systemd"): systemd-analyze verifies it, its sandbox holds the exposure score
below, and its command, expanded as systemd expands it, runs `serve` as an unprivileged user with
the CA key as a credential and an SQLite database in its state directory."""
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from conftest import ROOT, TIMEOUT, free_port
from verifier_command import environment

UNIT = ROOT / "debian" / "python3-deviceid-verifier.deviceid-verifier.service"
#: systemd-analyze security's overall exposure (0 to 10, lower is safer) the unit must stay at or
#: under: 1.3 when written (systemd 252), "OK".
EXPOSURE = 1.3


def analyze(*argv, path):
    return subprocess.run(["systemd-analyze", *argv, str(path)], capture_output=True, text=True, timeout=TIMEOUT)


def test_the_unit_verifies_and_its_sandbox_holds_the_exposure_score(tmp_path):
    unit = tmp_path / "deviceid-verifier.service"  # the name it is installed under
    shutil.copy(UNIT, unit)
    verified = analyze("verify", "--man=no", path=unit)
    assert verified.returncode == 0 and verified.stderr == "", verified.stderr
    security = analyze("security", "--offline=true", f"--threshold={round(EXPOSURE * 10)}", path=unit)
    assert security.returncode == 0, security.stdout + security.stderr
    [score] = re.findall(r"Overall exposure level for deviceid-verifier\.service: (\d+\.\d+) (\w+)", security.stdout)
    assert float(score[0]) <= EXPOSURE and score[1] == "OK", score
    settings = dict(line.split("=", 1) for line in UNIT.read_text().splitlines() if "=" in line and line[0] != "#")
    assert settings["DynamicUser"] == "yes" and settings["ProtectSystem"] == "strict"
    assert settings["NoNewPrivileges"] == "yes" and settings["SystemCallFilter"] == "@system-service"


def expanded_command(credentials, settings):
    """ExecStart as systemd runs it: %d the credentials directory, ${NAME} one word, $NAME split."""
    line = next(l for l in UNIT.read_text().splitlines() if l.startswith("ExecStart="))
    words = []
    for word in shlex.split(line.split("=", 1)[1].replace("%d", str(credentials))):
        if word.startswith("${"):
            words.append(settings[word[2:-1]])
        elif word.startswith("$"):
            words.extend(settings[word[1:]].split())
        else:
            words.append(word)
    return words


def test_the_unit_s_command_runs_serve_as_an_unprivileged_user(ca_files, ek_anchors, tmp_path):
    nobody = pwd.getpwnam("nobody")
    tmp_path = Path(tempfile.mkdtemp(prefix="deviceid-unit-"))  # pytest's is root's alone
    credentials, state = tmp_path / "credentials", tmp_path / "state"
    for directory in (credentials, state):
        directory.mkdir()
        os.chown(directory, nobody.pw_uid, nobody.pw_gid)
    tmp_path.chmod(0o755)
    key = credentials / "ca.key"  # as systemd hands a credential over: the service user's, read-only
    shutil.copy(ca_files[0], key)
    os.chown(key, nobody.pw_uid, nobody.pw_gid)
    key.chmod(0o400)
    port = free_port()
    settings = {"DATABASE": f"sqlite:///{state}/ca.sqlite3", "BIND": f"127.0.0.1:{port}",
                "OPTIONS": f"--ek-anchor {shutil.copy(ek_anchors[0], tmp_path / 'ek-root.pem')} --workers 2"}
    command = expanded_command(credentials, settings)
    assert command[:5] == ["/usr/bin/python3", "-m", "deviceid_verifier", "serve", "--database"]
    # the certificate the unit names in /etc/deviceid-verifier, here the test CA's
    command[command.index("/etc/deviceid-verifier/ca.pem")] = shutil.copy(ca_files[1], tmp_path / "ca.pem")
    # the package as the Debian package installs it, where the service user can read it: a
    # checkout in a private directory (CI's clone in a mkdtemp) is not
    library = tmp_path / "lib"
    shutil.copytree(ROOT / "server" / "deviceid_verifier", library / "deviceid_verifier",
                    ignore=shutil.ignore_patterns("__pycache__", ".mypy_cache"))
    for path in [library, *library.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    env = dict(environment(PGPASSFILE=f"{credentials}/pgpass"), PYTHONPATH=str(library))
    process = subprocess.Popen(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                                "--no-new-privs", *command], env=env, cwd="/", stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert process.poll() is None, process.stdout.read().decode(errors="replace")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health", timeout=5) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.1)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/nonce", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        assert (state / "ca.sqlite3").stat().st_uid == nobody.pw_uid
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=TIMEOUT)
        shutil.rmtree(tmp_path)
