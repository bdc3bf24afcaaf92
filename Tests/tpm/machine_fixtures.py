"""The fixtures of the tests that use software TPMs, in Tests/tpm (DeviceID's device side) and
Tests/server (the verifier's): machines (machines.py), swtpm's local CA as the EK trust anchor,
and Privacy CAs. Each directory's conftest imports them (pytest keeps a conftest to its own
directory). A missing tool fails the tests; they never skip."""
import pytest
from cryptography import x509

import verifier_command  # noqa: F401  (the checkout's server/ first on sys.path)
from deviceid_verifier import PrivacyCA
from machines import Machine, localca_files, make_ca_certificate, require_tools


@pytest.fixture(scope="module")
def machines():
    """A factory of machines (independent swtpms), all stopped when the module ends."""
    require_tools()
    started = []

    def make(label: str, **options) -> Machine:
        machine = Machine(label, **options)
        started.append(machine)
        return machine

    yield make
    for machine in started:
        machine.tpm.stop()


@pytest.fixture(scope="module")
def machine_a(machines):
    return machines("a")


@pytest.fixture(scope="module")
def machine_b(machines):
    return machines("b")


@pytest.fixture(scope="module")
def swtpm_localca(machine_a):
    """[root, issuer] certificates of swtpm's local CA: the EK trust anchors. Read after a
    swtpm_setup has run, since the first one creates the local CA."""
    root, issuer = localca_files()
    anchors = [x509.load_pem_x509_certificate(issuer.read_bytes())]
    if root.exists():
        anchors.insert(0, x509.load_pem_x509_certificate(root.read_bytes()))
    return anchors


@pytest.fixture(scope="session")
def new_ca_certificate():
    """make_ca_certificate, for tests (they do not import conftest: another directory's may share the name)."""
    return make_ca_certificate


@pytest.fixture(scope="module")
def make_ca(swtpm_localca):
    """make_ca(name, ek_trust_anchors=<swtpm's local CA>, **options) → PrivacyCA."""
    def make(common_name: str = "deviceid test attestation CA", ek_trust_anchors=None, **options):
        key, certificate = make_ca_certificate(common_name)
        anchors = swtpm_localca if ek_trust_anchors is None else ek_trust_anchors
        return PrivacyCA(key, certificate, anchors, **options)

    return make


@pytest.fixture(scope="module")
def ca(make_ca):
    """The Privacy CA the app servers of the tests trust."""
    return make_ca("deviceid test attestation CA")


#: The app ids whose AKs the enrolled_a fixture enrols (test_verifier.py's APP_A and APP_B).
ENROLLED_APPS = ("com.example.a", "com.example.b")


@pytest.fixture(scope="module")
def enrolled_a(machine_a, ca):
    """Machine A, with the AKs of both ENROLLED_APPS enrolled with `ca` (its device holds an AK
    certificate per app)."""
    for app_id in ENROLLED_APPS:
        machine_a.device.enrol(ca, app_id)
    return machine_a
