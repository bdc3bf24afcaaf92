"""The server's own distribution, deviceid-verifier: a pure-Python wheel (py3-none-any, nothing
compiled inside), its version the header's, that installs into a fresh venv (its one requirement,
cryptography, from PyPI) and runs there with no part of DeviceID's client anywhere: no
libdeviceid, no `deviceid` package, no PYTHONPATH or LD_LIBRARY_PATH. Without gunicorn, `serve`
names the installs that bring it, and a PostgreSQL URL without psycopg those of psycopg."""
import os
import re
import subprocess
import zipfile

import pytest

from conftest import ROOT

VERSION = re.search(r'#define DEVICEID_VERSION_STRING "(.*)"', (ROOT / "include/deviceid.h").read_text()).group(1)
PACKAGED = re.compile(r"deviceid_verifier/(.+\.py|py\.typed|schemas/[a-z-]+\.schema\.json)"
                      rf"|deviceid_verifier-{re.escape(VERSION)}\.dist-info/[A-Za-z_.]+")


def test_the_wheel_is_pure_python_at_the_headers_version(verifier_wheel):
    assert verifier_wheel.name == f"deviceid_verifier-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(verifier_wheel) as wheel:
        names = wheel.namelist()
        info = f"deviceid_verifier-{VERSION}.dist-info"
        tags = wheel.read(f"{info}/WHEEL").decode()
        metadata = wheel.read(f"{info}/METADATA").decode()
    assert "Root-Is-Purelib: true" in tags and re.findall(r"^Tag: (.*)$", tags, re.M) == ["py3-none-any"], tags
    assert [n for n in names if not PACKAGED.fullmatch(n)] == []
    assert "deviceid_verifier/_service/_serve.py" in names and "deviceid_verifier/schemas/nonce.schema.json" in names
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    assert requires == ["cryptography (<49,>=38)", "prometheus-client (<1,>=0.16) ; extra == 'metrics'",
                        "PyKCS11 (<2,>=1.5.12) ; extra == 'pkcs11'",
                        "psycopg[binary] (<4,>=3.1) ; extra == 'postgresql'",
                        "gunicorn (<24,>=20.1) ; extra == 'service'"], requires


@pytest.fixture(scope="module")
def venv(verifier_wheel, tmp_path_factory):
    """A fresh venv with the wheel and nothing else of DeviceID's; its requirement from PyPI."""
    path = tmp_path_factory.mktemp("venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(path)], check=True, timeout=120)
    installed = subprocess.run([str(path / "bin/pip"), "install", "-q", str(verifier_wheel)], capture_output=True,
                               text=True, timeout=600, env=alone())
    assert installed.returncode == 0, f"pip install {verifier_wheel.name} (PyPI reachable?):\n{installed.stderr}"
    return path


def alone() -> dict:
    """An environment that names no part of the client: no PYTHONPATH, library path or DEVICEID_*."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD") and not k.startswith("DEVICEID_")}


def in_venv(venv, *args, cwd):
    return subprocess.run([str(venv / "bin/python"), *args], capture_output=True, text=True, timeout=120,
                          env=alone(), cwd=cwd)


def test_it_runs_with_no_part_of_the_client(venv, tmp_path):
    helped = in_venv(venv, "-m", "deviceid_verifier", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: python3 -m deviceid_verifier"), helped
    assert all(command in helped.stdout for command in ("new-ca", "challenge", "verify", "serve", "revoke"))
    made = in_venv(venv, "-m", "deviceid_verifier", "new-ca", "--key", "ca.key", "--cert", "ca.pem", "--name", "x",
                   cwd=tmp_path)
    assert made.returncode == 0 and (tmp_path / "ca.pem").read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    probe = in_venv(venv, "-c", """
import importlib.util, sys, deviceid_verifier
assert deviceid_verifier.__file__.startswith(sys.prefix), deviceid_verifier.__file__
assert importlib.util.find_spec("deviceid") is None, "a deviceid package is importable"
print(sorted({l.split()[-1] for l in open("/proc/self/maps") if "deviceid" in l.rsplit("/", 1)[-1]}))
""", cwd=tmp_path)
    assert (probe.returncode, probe.stdout) == (0, "[]\n"), probe.stderr
    [site] = venv.glob("lib/python3*/site-packages")
    ours = [p for p in site.iterdir() if p.name.startswith("deviceid")]
    assert sorted(p.name for p in ours) == ["deviceid_verifier", f"deviceid_verifier-{VERSION}.dist-info"]
    assert [p for d in ours for p in d.rglob("*") if p.suffix in (".so", ".a")] == []
    assert not (venv / "bin/deviceid").exists()


def test_serve_without_gunicorn_names_the_installs_that_bring_it(venv, tmp_path):
    assert in_venv(venv, "-c", "import gunicorn", cwd=tmp_path).returncode == 1  # the wheel alone: no [service]
    # gunicorn is looked for before any file is read
    served = in_venv(venv, "-m", "deviceid_verifier", "serve", "--database", f"sqlite:///{tmp_path}/db.sqlite3",
                     "--ca-key", "ca.key", "--ca-cert", "ca.pem", "--ek-anchor", "ca.pem", "--bind", "127.0.0.1:9",
                     cwd=tmp_path)
    assert served.returncode == 2 and served.stdout == "", served
    assert served.stderr == ("python3 -m deviceid_verifier: error: serve needs gunicorn (Debian: apt install "
                             "gunicorn; PyPI: pip install 'deviceid-verifier[service]')\n"), served.stderr


def test_a_postgresql_url_without_psycopg_names_the_installs_that_bring_it(venv, tmp_path):
    assert in_venv(venv, "-c", "import psycopg", cwd=tmp_path).returncode == 1  # the wheel alone: no [postgresql]
    migrated = in_venv(venv, "-m", "deviceid_verifier", "migrate", "--database", "postgresql://127.0.0.1:9/x",
                       cwd=tmp_path)
    assert (migrated.returncode, migrated.stdout) == (2, ""), migrated
    assert migrated.stderr.endswith("PostgreSQL needs psycopg 3 (Debian: apt install python3-psycopg; PyPI: pip "
                                    "install 'deviceid-verifier[postgresql]')\n"), migrated.stderr
