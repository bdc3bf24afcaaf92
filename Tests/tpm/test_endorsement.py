"""Every endorsement key of the TCG EK Credential Profile that DeviceID supports, on swtpms laid out
as users' TPMs are (issue 34): swtpm's own RSA 2048 (L-1) and P-384 (H-3) certificates, either one
alone, an EK of each other kind with a certificate from a test manufacturer, a nonce index, a
template index, persistent EKs, a chain in NV, and no certificate at all (one given to the CA out
of band). Each enrols through the installed `deviceid` command
with PrivacyCA, activates, and gives evidence Verifier accepts, or fails with the words that fit.

The EK templates here are written from the profile (version 2.5, Annex B), not from DeviceID's:
the certificate is issued for the key the TPM makes from this file's template, so any difference
in DeviceID's makes its activation fail. tpm2-tools' MakeCredential is the independent maker of
challenges DeviceID's activation is checked against."""
import base64
import datetime
import hashlib
import json
import os
import struct
import subprocess

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from deviceid_verifier import PrivacyCA, Rejected, Verifier, make_credential
from deviceid_verifier import _ek, _tpm
from machines import Machine, make_ca_certificate
from test_deviceid_device import deviceid, evidence, hardware_id, transient_handles

APP = "com.example.endorsement"
ALG = {"sha256": 0x000B, "sha384": 0x000C, "sha512": 0x000D}
TPM_CC_POLICY_SECRET, TPM_CC_POLICY_AUTHORIZE_NV, TPM_CC_POLICY_OR = 0x151, 0x192, 0x171
TPM_RH_ENDORSEMENT = 0x4000000B
#: The profile's policy indices I-1, I-2, I-3 (§B.6.1), by nameAlg.
POLICY_INDEX = {"sha256": 0x01C07F01, "sha384": 0x01C07F02, "sha512": 0x01C07F03}
#: PolicyB of each hash as the profile prints it (Table "PolicyB", the high-range authPolicy).
PUBLISHED_POLICY_B = {
    "sha256": "ca3d0a99a2b93906f7a3342414efcfb3a385d44cd1fd459089d19b5071c0b7a0",
    "sha384": "b26e7d28d11a50bc53d882bcf5fd3a1a074148bb35d3b4e4cb1c0ad9bde419cacb47ba09699646150f9fc000f3f80e12",
    "sha512": "b8221ca69e8550a4914de3faa6a18c072cc01208073a928d5d66d59ef79e49a4"
              "29c41a6b269571d57edb25fbdb1838425608b413cd616a5f6db5b6071af99bea",
}
LOW_ATTRIBUTES, HIGH_ATTRIBUTES = 0x000300B2, 0x000300F2


# -- the profile's policies, from their definitions -----------------------------------------------

def policy_a(alg: str) -> bytes:
    """PolicySecret(TPM_RH_ENDORSEMENT) from the zero digest, with an empty policyRef (Part 3 §23.4)."""
    size = hashlib.new(alg).digest_size
    step = hashlib.new(alg, b"\0" * size + struct.pack(">II", TPM_CC_POLICY_SECRET, TPM_RH_ENDORSEMENT)).digest()
    return hashlib.new(alg, step).digest()


def policy_c(alg: str) -> bytes:
    """PolicyAuthorizeNV of the policy index of `alg` (§B.6.1: PolicyA as its authPolicy, a Name
    as its data, policyWrite | writeAll | ppRead | ownerRead | authRead | policyRead | noDA | written)."""
    attributes = 0x8 | 0x1000 | 0x10000 | 0x20000 | 0x40000 | 0x80000 | 0x2000000 | 0x20000000
    size = hashlib.new(alg).digest_size
    a = policy_a(alg)
    nv_public = struct.pack(">IHI", POLICY_INDEX[alg], ALG[alg], attributes) + struct.pack(">H", len(a)) + a \
        + struct.pack(">H", size + 2)
    name = struct.pack(">H", ALG[alg]) + hashlib.new(alg, nv_public).digest()
    return hashlib.new(alg, b"\0" * size + struct.pack(">I", TPM_CC_POLICY_AUTHORIZE_NV) + name).digest()


def policy_b(alg: str) -> bytes:
    size = hashlib.new(alg).digest_size
    return hashlib.new(alg, b"\0" * size + struct.pack(">I", TPM_CC_POLICY_OR) + policy_a(alg) + policy_c(alg)).digest()


@pytest.mark.parametrize("alg", sorted(ALG))
def test_the_policies_are_the_profiles(alg):
    """Known answers: PolicyA of SHA-256 is the low-range authPolicy every EK certificate's key was
    made with (837197…), and PolicyB = PolicyOR(PolicyA, PolicyC) is the profile's printed value."""
    if alg == "sha256":
        assert policy_a(alg).hex() == "837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa"
    assert policy_b(alg).hex() == PUBLISHED_POLICY_B[alg]


# -- EKs made from the profile's templates -----------------------------------------------------------

#: kind → (tpm2-pytss algorithm string, nameAlg, high range, unique size of a low-range key)
TEMPLATES = {
    "L-1": ("rsa2048:aes128cfb", "sha256", False, 256),
    "L-2": ("ecc256:aes128cfb", "sha256", False, 32),
    "H-1": ("rsa2048:aes128cfb", "sha256", True, 0),
    "H-2": ("ecc256:aes128cfb", "sha256", True, 0),
    "H-3": ("ecc384:aes256cfb", "sha384", True, 0),
    "H-4": ("ecc521:aes256cfb", "sha512", True, 0),
    "H-6": ("rsa3072:aes256cfb", "sha384", True, 0),
}


def ek_template(kind: str, nonce: bytes = b""):
    """The profile's template of `kind` (TPM2B_PUBLIC), `nonce` first in a low-range key's unique."""
    from tpm2_pytss import TPM2B_PUBLIC, TPMA_OBJECT
    algorithm, alg, high, unique = TEMPLATES[kind]
    template = TPM2B_PUBLIC.parse(algorithm, objectAttributes=TPMA_OBJECT(HIGH_ATTRIBUTES if high else LOW_ATTRIBUTES),
                                  nameAlg=alg)
    template.publicArea.authPolicy = policy_b(alg) if high else policy_a(alg)
    if algorithm.startswith("rsa"):
        template.publicArea.parameters.rsaDetail.exponent = 0
        template.publicArea.unique.rsa = (nonce + b"\0" * unique)[:unique] if unique else b""
    else:
        template.publicArea.unique.ecc.x = (nonce + b"\0" * unique)[:unique] if unique else b""
        template.publicArea.unique.ecc.y = b"\0" * unique
    return template


def make_ek(machine: Machine, kind: str = "", nonce: bytes = b"", persist: int = 0, template=None):
    """The public key of the EK of `kind` (or of `template`) that `machine`'s TPM makes: flushed
    again, or made persistent at handle `persist`."""
    from tpm2_pytss import ESAPI, ESYS_TR, TCTILdr, TPM2B_SENSITIVE_CREATE
    if template is None:
        template = ek_template(kind, nonce)
    with ESAPI(TCTILdr("swtpm", f"path={machine.tpm.socket}")) as esys:
        handle, public, *_ = esys.create_primary(TPM2B_SENSITIVE_CREATE(), template, ESYS_TR.ENDORSEMENT)
        if persist:
            esys.evict_control(ESYS_TR.OWNER, handle, persist)
        esys.flush_context(handle)
    return serialization.load_pem_public_key(public.publicArea.to_pem())


@pytest.fixture(scope="module")
def manufacturer():
    """A test TPM manufacturer's CA: (key, certificate)."""
    return make_ca_certificate("deviceid test TPM manufacturer")


def leaf_builder(issuer, key, subject: x509.Name) -> x509.CertificateBuilder:
    """A certificate for `key` from `issuer` ((key, certificate)), valid for 30 days from now."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer[1].subject).public_key(key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=30)))


def ek_certificate(manufacturer, key) -> bytes:
    return (leaf_builder(manufacturer, key, x509.Name([]))
            .add_extension(x509.SubjectAlternativeName([x509.DirectoryName(x509.Name([
                x509.NameAttribute(NameOID.COMMON_NAME, "deviceid test TPM"),
            ]))]), critical=True)
            .sign(manufacturer[0], hashes.SHA256())).public_bytes(serialization.Encoding.DER)


def ca_certificate(name: str, key, issuer=None, path_length: int = 0) -> x509.Certificate:
    """A CA certificate for `key`, self-signed or issued by `issuer` ((key, certificate))."""
    issuer_key, issuer_name = (key, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])) if issuer is None \
        else (issuer[0], issuer[1].subject)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(issuer_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(issuer_key, hashes.SHA256()))


@pytest.fixture(scope="module")
def manufacturer_with_intermediate():
    """A test manufacturer's root and the intermediate that issues its EK certificates:
    (root certificate, (intermediate key, intermediate certificate))."""
    root_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP384R1())
    root = ca_certificate("deviceid test TPM manufacturer root", root_key, path_length=1)
    return root, (key, ca_certificate("deviceid test TPM EK intermediate", key, (root_key, root)))


def platform(machine: Machine, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=dict(os.environ, TPM2TOOLS_TCTI=machine.tpm.tcti), capture_output=True,
                          timeout=60, check=check, cwd=machine.tpm.dir)


def nv_remove(machine: Machine, index: int) -> None:
    platform(machine, "tpm2_nvundefine", "-C", "p", f"{index:#x}")


def nv_store(machine: Machine, index: int, data: bytes) -> None:
    """Defines `index` as a manufacturer does (platform-created, readable by the owner) with `data`."""
    path = machine.tpm.dir / f"nv-{index:08x}.bin"
    path.write_bytes(data)
    platform(machine, "tpm2_nvdefine", "-C", "p", "-s", str(len(data)), "-a",
             "ppwrite|ppread|ownerread|authread|no_da|platformcreate", f"{index:#x}")
    platform(machine, "tpm2_nvwrite", "-C", "p", "-i", str(path), f"{index:#x}")


@pytest.fixture
def unlocked(machines):
    """A factory of swtpms whose EK indices platform authorisation may change."""
    count = iter(range(100))
    return lambda: machines(f"ek{next(count)}", lock_nvram=False)


def request_of(machine) -> dict:
    result = deviceid(machine, "attest", "enrol", APP)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def enrol_and_attest(machine, ca: PrivacyCA, tmp_path) -> dict:
    """Enrols APP with `ca`, activates, and checks the evidence: the challenge, as JSON."""
    challenge = ca.challenge(json.dumps(request_of(machine)))
    response = deviceid(machine, "attest", "activate", APP, input=challenge)
    assert response.returncode == 0, response.stderr
    certificate = ca.finish(response.stdout)
    verifier = Verifier([ca.certificate])
    nonce = verifier.new_nonce()
    result = verifier.verify(evidence(machine, APP, nonce, certificate, tmp_path), nonce, app_id=APP)
    assert result.hardware_id == hardware_id(machine, APP)
    assert transient_handles(machine) == []
    return json.loads(challenge)


def offered(request: dict) -> list:
    """The EK kinds a request offers, its ek_kind first."""
    return [request["ek_kind"]] + sorted(k[len("ek_certificate_"):] for k in request if k.startswith("ek_certificate_"))


# -- layouts ------------------------------------------------------------------------------------------

def test_swtpms_own_layout_offers_both_and_the_ca_chooses(machine_a, make_ca, tmp_path):
    """swtpm makes an RSA 2048 (L-1) and a P-384 (H-3) certificate: the request offers both, the
    CA's policy picks, and either enrols end to end."""
    request = request_of(machine_a)
    assert offered(request) == ["L-1", "H-3"]
    assert request["ek_certificate_H-3"] == base64.b64encode(machine_a.device.ek_certificate(0x01C00016)).decode()
    assert enrol_and_attest(machine_a, make_ca("deviceid default EK policy CA"), tmp_path)["ek_kind"] == "L-1"
    ecc_ca = make_ca("deviceid ECC-first CA", ek_kinds=["H-3", "L-1"])
    assert enrol_and_attest(machine_a, ecc_ca, tmp_path)["ek_kind"] == "H-3"
    with pytest.raises(Rejected) as refused:
        make_ca("deviceid L-2 only CA", ek_kinds=["L-2"]).challenge(json.dumps(request))
    assert refused.value.reason == "ek-mismatch"
    assert "offers EKs of kind L-1, H-3; this CA accepts L-2" in str(refused.value)


@pytest.mark.parametrize("removed, left", [(0x01C00002, "H-3"), (0x01C00016, "L-1")])
def test_one_certificate_alone(unlocked, make_ca, tmp_path, removed, left):
    machine = unlocked()
    nv_remove(machine, removed)
    assert offered(request_of(machine)) == [left]
    assert enrol_and_attest(machine, make_ca(f"deviceid {left} CA"), tmp_path)["ek_kind"] == left


@pytest.mark.parametrize("kind", ["L-2", "H-1", "H-2", "H-4", "H-6"])
def test_each_kind_from_its_certificate(unlocked, make_ca, manufacturer, tmp_path, kind):
    """A TPM whose only EK certificate is of `kind`, issued by a manufacturer for the key the
    profile's template makes."""
    machine = unlocked()
    nv_remove(machine, 0x01C00002)
    nv_remove(machine, 0x01C00016)
    nv_store(machine, _ek.kind_named(kind).certificate_index, ek_certificate(manufacturer, make_ek(machine, kind)))
    assert offered(request_of(machine)) == [kind]
    ca = make_ca(f"deviceid {kind} CA", ek_trust_anchors=[manufacturer[1]])
    assert enrol_and_attest(machine, ca, tmp_path)["ek_kind"] == kind


# (kind, certificate index, nonce index, template index) of the low range (EK Credential Profile
# §2.2.1.4).
LOW_RANGE = {"L-1": (0x01C00002, 0x01C00003, 0x01C00004), "L-2": (0x01C0000A, 0x01C0000B, 0x01C0000C)}


@pytest.mark.parametrize("kind", sorted(LOW_RANGE))
def test_a_low_range_nonce_is_honoured(unlocked, make_ca, manufacturer, tmp_path, kind):
    """A low-range EK whose nonce index holds 16 bytes: the EK is made with them first in unique
    (unique.rsa for L-1, unique.x for L-2; §2.2.1.5.1), and only that EK activates what the CA
    sealed to its certificate. The TPM keeps that kind's certificate alone, and no persistent EK
    (swtpm_setup's L-1 at 0x81010001 was made without the nonce: a persistent EK is taken as the
    certified one, test_a_persistent_ek_is_used)."""
    certificate_index, nonce_index, _ = LOW_RANGE[kind]
    machine = unlocked()
    evict(machine, 0x81010001)
    nv_remove(machine, 0x01C00002)
    nv_remove(machine, 0x01C00016)
    nonce = bytes(range(1, 17))
    key = make_ek(machine, kind, nonce)
    assert key.public_numbers() != make_ek(machine, kind).public_numbers()
    nv_store(machine, nonce_index, nonce)
    nv_store(machine, certificate_index, ek_certificate(manufacturer, key))
    ca = make_ca(f"deviceid {kind} nonce CA", ek_trust_anchors=[manufacturer[1]])
    assert enrol_and_attest(machine, ca, tmp_path)["ek_kind"] == kind


def persistent_handles(machine: Machine) -> list:
    listed = platform(machine, "tpm2_getcap", "handles-persistent").stdout.decode()
    return [int(line.lstrip("- "), 16) for line in listed.splitlines() if line.strip()]


def evict(machine: Machine, handle: int) -> None:
    platform(machine, "tpm2_evictcontrol", "-C", "o", "-c", f"{handle:#x}")


def test_swtpm_setup_keeps_its_eks_persistent(machine_a):
    """The layout the tests below change: swtpm_setup --createek keeps the L-1 EK at 0x81010001
    and the H-3 one at 0x81010016, so the other tests' activations use persistent EKs."""
    assert persistent_handles(machine_a) == [0x81010001, 0x81010016]


def test_with_no_persistent_ek_one_is_made(unlocked, make_ca, tmp_path):
    machine = unlocked()
    evict(machine, 0x81010001)
    evict(machine, 0x81010016)
    assert enrol_and_attest(machine, make_ca("deviceid transient L-1 CA"), tmp_path)["ek_kind"] == "L-1"
    ecc_ca = make_ca("deviceid transient H-3 CA", ek_kinds=["H-3"])
    assert enrol_and_attest(machine, ecc_ca, tmp_path)["ek_kind"] == "H-3"
    assert persistent_handles(machine) == [], "a made EK is flushed, never kept"


def test_a_persistent_ek_is_used(unlocked, make_ca, manufacturer, tmp_path):
    """An L-1 EK kept at 0x81010001 (TCG's reserved EK handle) whose key is not the one the
    template makes now (another unique, as a provisioning tool may have used): only that EK
    activates what the CA sealed to its certificate, so the activation used it. A persistent EK
    of another kind's shape before it (an L-2 at 0x81010000) is passed over, and both stay."""
    machine = unlocked()
    nv_remove(machine, 0x01C00016)
    evict(machine, 0x81010001)
    evict(machine, 0x81010016)
    make_ek(machine, "L-2", persist=0x81010000)
    kept = make_ek(machine, "L-1", b"provisioned elsewhere", persist=0x81010001)
    assert kept.public_numbers() != make_ek(machine, "L-1").public_numbers()
    nv_remove(machine, 0x01C00002)
    nv_store(machine, 0x01C00002, ek_certificate(manufacturer, kept))
    ca = make_ca("deviceid persistent EK CA", ek_trust_anchors=[manufacturer[1]])
    assert enrol_and_attest(machine, ca, tmp_path)["ek_kind"] == "L-1"
    assert persistent_handles(machine) == [0x81010000, 0x81010001], "a persistent EK is used, never evicted"


def test_an_ek_chain_in_nv_completes_the_path(unlocked, make_ca, manufacturer_with_intermediate, tmp_path):
    """The EK certificate is issued by an intermediate that the CA does not know; the TPM keeps
    that intermediate in the EK chain index 0x01c00100, padded as NV indices are (rust-keylime#859:
    Intel's 11th-gen fTPMs). Without the index the CA cannot build the path; with it the request
    carries the intermediate (ek_chain) and enrols. A second index's certificate comes after it."""
    root, (intermediate_key, intermediate) = manufacturer_with_intermediate
    machine = unlocked()
    nv_remove(machine, 0x01C00002)
    nv_remove(machine, 0x01C00016)
    nv_store(machine, 0x01C0000A, ek_certificate((intermediate_key, intermediate), make_ek(machine, "L-2")))
    ca = make_ca("deviceid EK chain CA", ek_trust_anchors=[root])
    bare = request_of(machine)
    assert "ek_chain" not in bare
    with pytest.raises(Rejected) as refused:
        ca.challenge(json.dumps(bare))
    assert refused.value.reason == "ek-untrusted" and "is not a trusted or known CA" in str(refused.value)
    der = intermediate.public_bytes(serialization.Encoding.DER)
    nv_store(machine, 0x01C00100, der + b"\xff" * 64)
    other = make_ca_certificate("deviceid test TPM manufacturer, another root")[1].public_bytes(serialization.Encoding.DER)
    nv_store(machine, 0x01C00107, other)
    assert base64.b64decode(request_of(machine)["ek_chain"]) == der + other
    assert enrol_and_attest(machine, ca, tmp_path)["ek_kind"] == "L-2"


def test_a_malformed_ek_chain_is_refused_with_its_reason(machine_a, make_ca):
    request = request_of(machine_a)
    ca = make_ca("deviceid EK chain checks CA")
    spare = make_ca_certificate("deviceid spare CA")[1].public_bytes(serialization.Encoding.DER)
    for chain, words in [(b"\x30\x82\x01\x00\x01", "is cut short"), (spare + b"\x00", "does not start a DER certificate"),
                         (spare * 7, "holds 7 certificates; at most 6"), (b"\x30\x03\x02\x01\x01", "not a DER X.509")]:
        with pytest.raises(Rejected) as refused:
            ca.challenge(json.dumps({**request, "ek_chain": base64.b64encode(chain).decode()}))
        assert refused.value.reason == "malformed" and words in str(refused.value), (words, refused.value)
    assert json.loads(ca.challenge(json.dumps({**request, "ek_chain": base64.b64encode(spare * 6).decode()})))["ek_kind"] \
        == "L-1", "an untrusted chain that is not needed does no harm"


@pytest.mark.parametrize("kind", sorted(LOW_RANGE))
def test_an_ek_template_in_nv_makes_the_ek(unlocked, make_ca, manufacturer, tmp_path, kind):
    """The TPM keeps the kind's template in NV (0x01c00004 for L-1, 0x01c0000c for L-2) with
    attributes (noDA) and a unique of its own: the certificate is for the key that template makes,
    which the profile's does not, so only an EK made from the template in NV activates. Doctor says
    where the EK comes from."""
    from tpm2_pytss import TPMA_OBJECT
    certificate_index, _, template_index = LOW_RANGE[kind]
    machine = unlocked()
    nv_remove(machine, 0x01C00016)
    nv_remove(machine, 0x01C00002)
    template = ek_template(kind, b"the manufacturer's own unique")
    template.publicArea.objectAttributes |= TPMA_OBJECT.NODA
    key = make_ek(machine, template=template)
    assert key.public_numbers() != make_ek(machine, kind).public_numbers()
    nv_store(machine, template_index, template.publicArea.marshal())
    nv_store(machine, certificate_index, ek_certificate(manufacturer, key))
    assert offered(request_of(machine)) == [kind]
    ca = make_ca(f"deviceid {kind} NV template CA", ek_trust_anchors=[manufacturer[1]])
    assert enrol_and_attest(machine, ca, tmp_path)["ek_kind"] == kind
    assert f"; EK {kind} made from the template in NV index {template_index:#010x}" in doctor_tpm(machine)["detail"]


def test_an_ek_template_of_another_kind_of_key_rules_out_that_ek(unlocked):
    """L-1's template with AES-256 in place of the profile's AES-128: the Privacy CA's MakeCredential
    for L-1 would not fit that EK. DeviceID offers only H-3, and with H-3 gone says why in enrol
    and doctor."""
    machine = unlocked()
    template = ek_template("L-1")
    template.publicArea.parameters.rsaDetail.symmetric.keyBits.aes = 256
    nv_store(machine, 0x01C00004, template.publicArea.marshal())
    assert offered(request_of(machine)) == ["H-3"]
    detail = doctor_tpm(machine)["detail"]
    assert "through EK H-3; EK L-1 not used: its template in NV index 0x01c00004 is one DeviceID cannot use: " \
           "not a TPMT_PUBLIC, or a key of another type, name algorithm, policy, symmetric key" in detail, detail
    nv_remove(machine, 0x01C00016)
    result = deviceid(machine, "attest", "enrol", APP)
    assert result.returncode == 22, result.stderr  # UNSUPPORTED
    words = "holds an EK certificate of kind L-1, but makes that EK from the template in NV index 0x01c00004, which " \
            "DeviceID cannot use: not a TPMT_PUBLIC"
    assert words in result.stderr, result.stderr
    check = doctor_tpm(machine)
    assert check["ok"] is False and words in check["detail"], check


def test_a_template_index_rules_out_that_ek(unlocked, make_ca, tmp_path):
    """An EK template in NV (0x01c00004 for L-1) that is not a TPMT_PUBLIC: DeviceID offers the
    other certificates, and says why when none is left."""
    machine = unlocked()
    nv_store(machine, 0x01C00004, b"\x00\x01" + b"\0" * 30)
    assert offered(request_of(machine)) == ["H-3"]
    assert enrol_and_attest(machine, make_ca("deviceid templated CA"), tmp_path)["ek_kind"] == "H-3"
    nv_remove(machine, 0x01C00016)
    result = deviceid(machine, "attest", "enrol", APP)
    assert result.returncode == 22, result.stderr  # UNSUPPORTED
    assert "EK certificate of kind L-1" in result.stderr and "template in NV index 0x01c00004" in result.stderr


def test_no_ek_certificate_in_nv_sends_the_ek_public_key(unlocked, make_ca, manufacturer, tmp_path):
    """A TPM that keeps no EK certificate in NV (Intel PTT and AMD fTPM publish theirs online):
    the request carries the L-1 EK's TPMT_PUBLIC (byte for byte what tpm2_readpublic marshals), a
    CA without the certificate refuses it saying why, and one given it out of band enrols."""
    machine = unlocked()
    nv_remove(machine, 0x01C00002)
    nv_remove(machine, 0x01C00016)
    request = request_of(machine)
    assert request["ek_kind"] == "L-1" and "ek_certificate" not in request
    platform(machine, "tpm2_readpublic", "-c", "0x81010001", "-o", "ek.tpm2b")
    assert base64.b64decode(request["ek_public"]) == (machine.tpm.dir / "ek.tpm2b").read_bytes()[2:]
    assert _ek.key_of_public(base64.b64decode(request["ek_public"])).public_numbers() \
        == make_ek(machine, "L-1").public_numbers()
    with pytest.raises(Rejected) as refused:
        make_ca("deviceid CA without out-of-band certificates").challenge(json.dumps(request))
    assert refused.value.reason == "ek-untrusted" and "keeps no EK certificate in NV" in str(refused.value)
    online = x509.load_der_x509_certificate(ek_certificate(manufacturer, make_ek(machine, "L-1")))
    ca = make_ca("deviceid out-of-band CA", ek_trust_anchors=[manufacturer[1]], out_of_band_ek_certificates=[online])
    assert enrol_and_attest(machine, ca, tmp_path)["ek_kind"] == "L-1"
    evict(machine, 0x81010001)
    assert request_of(machine)["ek_public"] == request["ek_public"], "the EK made from the template is the same key"
    for bad, words in [(b"\x00\x01", "cut short"), (base64.b64decode(request["ek_public"]) + b"\0", "1 bytes after"),
                       (bytes.fromhex("0008000b" "00000000" "0000" "0010" "0010"), "neither RSA nor ECC")]:
        with pytest.raises(Rejected) as refused:
            ca.challenge(json.dumps({**request, "ek_public": base64.b64encode(bad).decode()}))
        assert refused.value.reason == "malformed" and words in str(refused.value), (words, refused.value)


# -- challenges from an independent maker ---------------------------------------------------------

@pytest.mark.parametrize("kind, make", [
    ("L-1", ["tpm2_createek", "-G", "rsa", "-c", "ek.ctx"]),  # tpm2_createek's RSA EK is template L-1
    ("H-3", ["tpm2_createprimary", "-C", "e", "-G", "ecc384:null:aes256cfb", "-g", "sha384", "-a",
             "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|adminwithpolicy|restricted|decrypt",
             "-L", "policy", "-c", "ek.ctx"]),
])
def test_tpm2_makecredential_challenges_activate(machine_b, kind, make):
    """tpm2_makecredential (tpm2-tools, with no TPM) seals a secret to the EK's public area for the
    AK of DeviceID's request; `deviceid attest activate` recovers it. The same EK's public area
    makes deviceid_verifier's make_credential, which swtpm activates in the other tests."""
    directory = machine_b.tpm.dir
    (directory / "policy").write_bytes(policy_b("sha384"))
    platform(machine_b, "tpm2_flushcontext", "-t")
    platform(machine_b, *make)
    platform(machine_b, "tpm2_readpublic", "-c", "ek.ctx", "-f", "pem", "-o", "ek.pem")
    platform(machine_b, "tpm2_readpublic", "-c", "ek.ctx", "-o", "ek.tpm2b")
    platform(machine_b, "tpm2_flushcontext", "-t")
    request = request_of(machine_b)
    certificate = request["ek_certificate"] if kind == "L-1" else request[f"ek_certificate_{kind}"]
    ek_key = x509.load_der_x509_certificate(base64.b64decode(certificate)).public_key()
    assert serialization.load_pem_public_key((directory / "ek.pem").read_bytes()).public_numbers() \
        == ek_key.public_numbers(), "tpm2-tools made the EK of the certificate"
    name = _tpm.name_of(base64.b64decode(request["ak_public"]))
    secret = os.urandom(32)
    (directory / "secret.bin").write_bytes(secret)
    subprocess.run(["tpm2_makecredential", "--tcti", "none", "-u", "ek.tpm2b", "-s", "secret.bin", "-n", name.hex(),
                    "-o", "made.cred"], cwd=directory, check=True, capture_output=True, timeout=60)
    made = (directory / "made.cred").read_bytes()
    assert made[:8] == struct.pack(">II", 0xBADCC0DE, 1)
    blob_size = struct.unpack(">H", made[8:10])[0]
    blob, rest = made[10:10 + blob_size], made[10 + blob_size:]
    encrypted = rest[2:2 + struct.unpack(">H", rest[:2])[0]]
    challenge = json.dumps({"v": 1, "type": "deviceid.enrolment-challenge", "id": "tpm2-tools", "ek_kind": kind,
                            "credential_blob": base64.b64encode(blob).decode(),
                            "encrypted_secret": base64.b64encode(encrypted).decode()})
    response = deviceid(machine_b, "attest", "activate", APP, input=challenge)
    assert response.returncode == 0, response.stderr
    assert base64.b64decode(json.loads(response.stdout)["credential"]) == secret
    ours = make_credential(ek_key, secret, name, kind=_ek.kind_named(kind))
    assert len(ours.credential_blob) == len(blob) and len(ours.encrypted_secret) == len(encrypted)


# -- doctor ----------------------------------------------------------------------------------------

def doctor_tpm(machine) -> dict:
    result = deviceid(machine, "--json", "doctor")
    checks = [check for check in json.loads(result.stdout)["checks"] if check["name"] == "tpm"]
    assert len(checks) == 1, result.stdout
    assert checks[0]["essential"] is False, "the stable ID needs no TPM: doctor's verdict ignores it"
    return checks[0]


def test_doctor_says_which_eks_and_which_route(machine_a, unlocked):
    check = doctor_tpm(machine_a)
    assert check["ok"] is True, check
    assert f"{machine_a.tpm.tcti}: IBM, firmware 0x" in check["detail"]  # swtpm reports IBM's vendor id
    assert "EK certificates: L-1, H-3; attestation: with a Privacy CA through EK L-1 (or H-3, as the CA chooses)" \
        in check["detail"]
    bare = unlocked()
    nv_remove(bare, 0x01C00002)
    nv_remove(bare, 0x01C00016)
    check = doctor_tpm(bare)
    assert check["ok"] is True, check
    assert "EK certificates: none; attestation: with a Privacy CA given EK L-1's certificate out of band" \
        in check["detail"] and "published online only (Intel PTT, AMD fTPM)" in check["detail"]
    absent = deviceid(None, "--json", "doctor", env={"DEVICEID_TPM_TCTI": f"swtpm:path={bare.tpm.dir}/absent.sock"})
    tpm = [c for c in json.loads(absent.stdout)["checks"] if c["name"] == "tpm"][0]
    assert tpm["ok"] is False and "hardware-id and attest cannot work" in tpm["detail"], tpm
