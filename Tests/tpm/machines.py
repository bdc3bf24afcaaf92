"""Software TPMs for the tests (swtpm, each a "machine" with its own state, EK and EK certificate
from swtpm's local CA), that local CA, and test CA certificates. Shared by Tests/tpm and
Tests/server (a module, not a conftest: pytest keeps each directory's conftest to itself)."""
import datetime
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tools_device import ToolsDevice

TOOLS = ["swtpm", "swtpm_setup", "tpm2_createprimary", "tpm2_createek", "tpm2_readpublic", "tpm2_nvread",
         "tpm2_startauthsession", "tpm2_policysecret", "tpm2_activatecredential", "tpm2_flushcontext",
         "tpm2_certify", "tpm2_loadexternal", "tpm2_quote", "tpm2_hash", "tpm2_sign", "tpm2_getcap",
         "tpm2_evictcontrol"]
SETUP_CONF = Path("/etc/swtpm_setup.conf")
DEFAULT_LOCALCA_CONF = Path("/etc/swtpm-localca.conf")
ROOT_CERT = "swtpm-localca-rootca-cert.pem"
TIMEOUT = 60


def require_tools():
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"missing tools: {' '.join(missing)} (Debian: apt-get install swtpm swtpm-tools tpm2-tools)")
    try:
        import tpm2_pytss  # noqa: F401
    except ImportError as e:
        pytest.fail(f"tpm2-pytss is missing (Debian: apt-get install python3-tpm2-pytss): {e}")


def _conf(path: Path) -> dict:
    """key = value lines of a swtpm configuration file (# comments), with ${VAR}s expanded."""
    values = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*([A-Za-z_][\w-]*)\s*=\s*(.*?)\s*$", line)
        if m and not line.lstrip().startswith("#"):
            values[m.group(1)] = os.path.expandvars(m.group(2))
    return values


def localca_files():
    """(root certificate, issuer certificate) of the local CA that swtpm_setup's
    create_certs_tool (swtpm_localca) signs EK certificates with, found through
    /etc/swtpm_setup.conf → create_certs_tool_config → statedir / issuercert."""
    localca_conf = DEFAULT_LOCALCA_CONF
    if SETUP_CONF.exists():
        localca_conf = Path(_conf(SETUP_CONF).get("create_certs_tool_config", localca_conf))
    assert localca_conf.exists(), f"swtpm_localca's configuration {localca_conf} is missing"
    conf = _conf(localca_conf)
    assert "statedir" in conf, f"{localca_conf} has no statedir"
    statedir = Path(conf["statedir"])
    issuer = Path(conf.get("issuercert", statedir / "issuercert.pem"))
    root = statedir / ROOT_CERT
    assert issuer.exists(), f"the local CA's issuer certificate {issuer} is missing (has swtpm_setup run?)"
    return root, issuer


class SwTPM:
    """One swtpm: manufactured by swtpm_setup (EKs, their certificates, platform certificate, NV
    locked unless `lock_nvram` is false: then platform authorisation may change the EK indices),
    serving a Unix socket in its own temporary directory until stop()."""

    def __init__(self, label: str, *, lock_nvram: bool = True):
        # short absolute paths: a Unix socket path has at most 107 bytes
        self.dir = Path(tempfile.mkdtemp(prefix=f"deviceid-swtpm-{label}-")).resolve()
        self.state = self.dir / "state"
        self.state.mkdir()
        self.socket = self.dir / "tpm.sock"
        self.pidfile = self.dir / "swtpm.pid"
        self.tcti = f"swtpm:path={self.socket}"
        self.pid = None
        home = self.dir / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
        env["HOME"] = str(home)
        setup = subprocess.run(
            ["swtpm_setup", "--tpm2", "--tpmstate", str(self.state), "--createek", "--create-ek-cert",
             "--create-platform-cert", *(["--lock-nvram"] if lock_nvram else [])],
            env=env, capture_output=True, text=True, timeout=TIMEOUT)
        assert setup.returncode == 0, f"swtpm_setup failed:\n{setup.stdout}\n{setup.stderr}"
        subprocess.run(
            ["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={self.state}",
             "--server", f"type=unixio,path={self.socket}", "--ctrl", f"type=unixio,path={self.socket}.ctrl",
             "--flags", "startup-clear", "--daemon", "--pid", f"file={self.pidfile}"],
            env=env, check=True, capture_output=True, timeout=TIMEOUT)
        deadline = time.monotonic() + 10
        while not (self.socket.is_socket() and self.pidfile.exists() and self.pidfile.read_text().strip()):
            assert time.monotonic() < deadline, "swtpm did not start"
            time.sleep(0.02)
        self.pid = int(self.pidfile.read_text().strip())

    def _ours(self) -> bool:
        try:
            return str(self.state) in Path(f"/proc/{self.pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False

    def stop(self):
        """Stop this swtpm (by the pid it wrote, if that process is still this swtpm) and remove its files."""
        self.halt()
        shutil.rmtree(self.dir, ignore_errors=True)

    def halt(self):
        """Stop serving, keeping the state: another swtpm (qemu's TPM backend) may take it over."""
        if self.pid is not None and self._ours():
            os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 5
            while self._ours() and time.monotonic() < deadline:
                time.sleep(0.02)
            if self._ours():
                os.kill(self.pid, signal.SIGKILL)
        self.pid = None


class Machine:
    """A swtpm and the tpm2-tools device that drives it."""

    def __init__(self, label: str, *, lock_nvram: bool = True):
        self.tpm = SwTPM(label, lock_nvram=lock_nvram)
        self.device = ToolsDevice(self.tpm.tcti, self.tpm.dir / "device")


def make_ca_certificate(common_name: str, *, days: int = 3650):
    """A self-signed ECDSA P-256 CA (key, certificate) for a Privacy CA of the tests."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, certificate
