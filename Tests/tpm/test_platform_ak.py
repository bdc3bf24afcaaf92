"""The platform-AK route (issue 34): a virtual TPM without an EK certificate in NV whose platform AK
certifies the app's AK, laid out on swtpm as Azure's Trusted Launch vTPM is: a restricted signing
key persistent at 0x81000003 (RSA 2048 with RSASSA, as Azure's; and ECC P-256 with ECDSA) and its
certificate from a test "vTPM root" at NV index 0x01c101d0; and as GCE's Shielded VM is: no key
kept, but the TPMT_PUBLIC template the key is made from (in the endorsement hierarchy) at NV index
0x01c10001 (RSA) or 0x01c10003 (ECC), its certificate at 0x01c10000 or 0x01c10002. Each enrols through the installed
`deviceid` command with a PrivacyCA given that root, and gives evidence Verifier accepts; each
response that is not the platform AK's certification of the request's AK over the challenge's
nonce is refused with its reason. The platform AK is made here by tpm2-tools, not DeviceID."""
import base64
import json

import jsonschema
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID

from deviceid_verifier import PrivacyCA, Rejected
from deviceid_verifier._service._openapi import schema
from machines import Machine, make_ca_certificate
from test_deviceid_device import deviceid
from verifier_command import cli, cli_rejection
from test_endorsement import APP, doctor_tpm, enrol_and_attest, leaf_builder, nv_remove, nv_store, platform, request_of, unlocked  # noqa: F401

AZURE_AK, AZURE_AK_CERTIFICATE = 0x81000003, 0x01C101D0
#: GCE's NV indices: (certificate, template) of each algorithm's AK.
GCE_INDICES = {"rsa": (0x01C10000, 0x01C10001), "ecc": (0x01C10002, 0x01C10003)}
#: tpm2_createprimary's algorithm and attributes of a restricted signing AK of each kind.
AK_ALGORITHMS = {"rsa": "rsa2048:rsassa-sha256:null", "ecc": "ecc256:ecdsa-sha256:null"}
AK_ATTRIBUTES = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|restricted|sign"


@pytest.fixture(scope="module")
def vtpm_root():
    """A test cloud's vTPM root CA: (key, certificate)."""
    return make_ca_certificate("deviceid test vTPM root")


def platform_ak_certificate(root, key) -> bytes:
    """An AK certificate as a cloud's vTPM CA issues one: the instance named in its subject."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vm-0123456789abcdef")])
    return leaf_builder(root, key, subject).sign(root[0], hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def azure_style(machine: Machine, root, algorithm: str = "rsa", *, certificate: bool = True) -> bytes:
    """Lays `machine` out as an Azure vTPM: no EK certificate, a platform AK at 0x81000003 and (where
    `certificate`) its certificate from `root` at 0x01c101d0, which is returned."""
    nv_remove(machine, 0x01C00002)
    nv_remove(machine, 0x01C00016)
    platform(machine, "tpm2_createprimary", "-C", "o", "-G", AK_ALGORITHMS[algorithm], "-a", AK_ATTRIBUTES,
             "-c", "platform-ak.ctx")
    platform(machine, "tpm2_evictcontrol", "-C", "o", "-c", "platform-ak.ctx", f"{AZURE_AK:#x}")
    platform(machine, "tpm2_flushcontext", "-t")
    platform(machine, "tpm2_readpublic", "-c", f"{AZURE_AK:#x}", "-f", "pem", "-o", "platform-ak.pem")
    key = serialization.load_pem_public_key((machine.tpm.dir / "platform-ak.pem").read_bytes())
    der = platform_ak_certificate(root, key)
    if certificate:
        nv_store(machine, AZURE_AK_CERTIFICATE, der)
    return der


def gce_style(machine: Machine, root, algorithm: str = "rsa", *, template: bytes | None = None) -> bytes:
    """Lays `machine` out as a GCE vTPM: no EK certificate; at GCE's indices for `algorithm` the
    TPMT_PUBLIC template of a restricted signing key as tpm2-tools marshals it (or `template`), and
    the certificate from `root` of the key that template makes in the endorsement hierarchy, which
    is returned."""
    nv_remove(machine, 0x01C00002)
    nv_remove(machine, 0x01C00016)
    platform(machine, "tpm2_createprimary", "-C", "e", "-G", AK_ALGORITHMS[algorithm], "-a", AK_ATTRIBUTES,
             "--template-data", "gce-template.bin", "-c", "gce-ak.ctx")
    platform(machine, "tpm2_readpublic", "-c", "gce-ak.ctx", "-f", "pem", "-o", "gce-ak.pem")
    platform(machine, "tpm2_flushcontext", "-t")
    key = serialization.load_pem_public_key((machine.tpm.dir / "gce-ak.pem").read_bytes())
    der = platform_ak_certificate(root, key)
    certificate_index, template_index = GCE_INDICES[algorithm]
    nv_store(machine, template_index, template or (machine.tpm.dir / "gce-template.bin").read_bytes())
    nv_store(machine, certificate_index, der)
    return der


def platform_ca(make_ca, root, **options) -> PrivacyCA:
    return make_ca("deviceid platform AK CA", platform_ak_anchors=[root[1]], **options)


@pytest.mark.parametrize("algorithm", ["rsa", "ecc"])
def test_an_azure_style_vtpm_enrols_through_its_platform_ak(unlocked, make_ca, vtpm_root, tmp_path, algorithm):
    machine = unlocked()
    der = azure_style(machine, vtpm_root, algorithm)
    request = request_of(machine)
    assert request["platform_ak"] == "azure"
    assert base64.b64decode(request["platform_ak_certificate"]) == der
    assert "ek_public" in request, "a CA given the EK certificate out of band may still take the EK route"
    challenge = enrol_and_attest(machine, platform_ca(make_ca, vtpm_root), tmp_path)
    assert challenge["route"] == "platform-ak" and challenge["platform_ak"] == "azure"
    assert len(base64.b64decode(challenge["nonce"])) == 32
    assert "credential_blob" not in challenge


@pytest.mark.parametrize("algorithm", ["rsa", "ecc"])
def test_a_gce_style_vtpm_enrols_through_the_ak_its_template_makes(unlocked, make_ca, vtpm_root, tmp_path, algorithm):
    machine = unlocked()
    der = gce_style(machine, vtpm_root, algorithm)
    request = request_of(machine)
    assert request["platform_ak"] == f"gce-{algorithm}"
    assert base64.b64decode(request["platform_ak_certificate"]) == der
    challenge = enrol_and_attest(machine, platform_ca(make_ca, vtpm_root), tmp_path)
    assert challenge["route"] == "platform-ak" and challenge["platform_ak"] == f"gce-{algorithm}"
    transient = platform(machine, "tpm2_getcap", "handles-transient").stdout.strip()
    assert transient in (b"", b"[]"), f"the AK made from the template is flushed: {transient!r}"


def test_a_gce_template_that_is_not_a_tpmt_public_is_refused_with_words(unlocked, make_ca, vtpm_root):
    machine = unlocked()
    gce_style(machine, vtpm_root, template=b"\x00\x01\x00\x0b" + b"\xff" * 12)
    challenge = platform_ca(make_ca, vtpm_root).challenge(json.dumps(request_of(machine)))
    result = deviceid(machine, "attest", "activate", APP, input=challenge)
    assert result.returncode == 22, result.stderr  # UNSUPPORTED
    assert "keeps a platform AK template in NV that is not a TPMT_PUBLIC tpm2-tss can read" in result.stderr


def test_the_routes_messages_match_their_schemas(unlocked, make_ca, vtpm_root):
    machine = unlocked()
    azure_style(machine, vtpm_root)
    request = request_of(machine)
    challenge = json.loads(platform_ca(make_ca, vtpm_root).challenge(json.dumps(request)))
    response = activate(machine, challenge)
    for name, message in [("enrolment-request", request), ("enrolment-challenge", challenge),
                          ("enrolment-response", response)]:
        jsonschema.Draft202012Validator(schema(name)).validate(message)
    for name, message in [("enrolment-challenge", {k: v for k, v in challenge.items() if k != "nonce"}),
                          ("enrolment-response", {k: v for k, v in response.items() if k != "certify_signature"})]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(schema(name)).validate(message)


def test_a_request_the_ca_cannot_trust_is_refused_with_words(unlocked, make_ca, vtpm_root):
    machine = unlocked()
    azure_style(machine, vtpm_root)
    request = json.dumps(request_of(machine))
    with pytest.raises(Rejected) as refused:
        make_ca("deviceid CA without platform anchors").challenge(request)
    assert refused.value.reason == "ek-untrusted"
    assert "keeps no EK certificate in NV" in str(refused.value) and "platform_ak_anchors" in str(refused.value)
    with pytest.raises(Rejected) as refused:
        platform_ca(make_ca, make_ca_certificate("another cloud's vTPM root")).challenge(request)
    assert refused.value.reason == "ek-untrusted" and "does not chain to a trusted platform AK root" in str(refused.value)
    fields = json.loads(request)
    for bad, reason, words in [({"platform_ak": "aws"}, "malformed", "not one of azure, gce-rsa, gce-ecc"),
                               ({"platform_ak_certificate": base64.b64encode(b"junk").decode()}, "malformed",
                                "the platform AK certificate"),
                               ({"ak_public": base64.b64encode(b"\0" * 8).decode()}, "ak-template", "frozen template")]:
        with pytest.raises(Rejected) as refused:
            platform_ca(make_ca, vtpm_root).challenge(json.dumps({**fields, **bad}))
        assert refused.value.reason == reason and words in str(refused.value), refused.value


def test_a_certificate_under_the_root_that_is_not_an_ak_s_is_refused(unlocked, make_ca, vtpm_root):
    """Only an AK certificate stands for the platform AK: a cloud's root may issue others (GCE's
    issues EK certificates too), whose keys are not restricted signing keys of a TPM."""
    machine = unlocked()
    der = azure_style(machine, vtpm_root)
    key = x509.load_der_x509_certificate(der).public_key()
    fields = json.loads(json.dumps(request_of(machine)))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vm-0123456789abcdef")])
    as_ca = leaf_builder(vtpm_root, key, subject).add_extension(x509.BasicConstraints(ca=True, path_length=None),
                                                                critical=True)
    for_encryption = leaf_builder(vtpm_root, key, subject).add_extension(x509.KeyUsage(
        digital_signature=False, content_commitment=False, key_encipherment=True, data_encipherment=False,
        key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False),
        critical=True)
    root_der = vtpm_root[1].public_bytes(serialization.Encoding.DER)
    for certificate, reason, words in [
            (root_der, "ek-untrusted", "is a trusted root itself"),
            (as_ca.sign(vtpm_root[0], hashes.SHA256()).public_bytes(serialization.Encoding.DER), "ek-untrusted",
             "is a CA's"),
            (for_encryption.sign(vtpm_root[0], hashes.SHA256()).public_bytes(serialization.Encoding.DER),
             "ek-untrusted", "does not include digitalSignature")]:
        with pytest.raises(Rejected) as refused:
            platform_ca(make_ca, vtpm_root).challenge(json.dumps(
                {**fields, "platform_ak_certificate": base64.b64encode(certificate).decode()}))
        assert refused.value.reason == reason and words in str(refused.value), refused.value
    with pytest.raises(Rejected) as refused:   # the Azure AK here is RSA: not what gce-ecc names
        platform_ca(make_ca, vtpm_root).challenge(json.dumps({**fields, "platform_ak": "gce-ecc"}))
    assert refused.value.reason == "ek-mismatch" and "is an ECC key" in str(refused.value), refused.value


def test_a_platform_ak_without_its_certificate_is_not_offered(unlocked, make_ca, vtpm_root):
    machine = unlocked()
    azure_style(machine, vtpm_root, certificate=False)
    request = request_of(machine)
    assert "platform_ak" not in request and "platform_ak_certificate" not in request and "ek_public" in request


def activate_text(machine, challenge: str, app: str = APP) -> str:
    result = deviceid(machine, "attest", "activate", app, input=challenge)
    assert result.returncode == 0, result.stderr
    return result.stdout


def activate(machine, challenge: dict, app: str = APP) -> dict:
    return json.loads(activate_text(machine, json.dumps(challenge), app))


def test_each_response_that_is_not_the_certification_asked_for_is_refused(unlocked, make_ca, vtpm_root, tmp_path):
    machine, other = unlocked(), unlocked()
    azure_style(machine, vtpm_root)
    other_der = azure_style(other, vtpm_root)
    ca = platform_ca(make_ca, vtpm_root)
    request = json.dumps(request_of(machine))

    def refused(response: dict, reason: str, words: str) -> None:
        with pytest.raises(Rejected) as e:
            ca.finish(json.dumps(response))
        assert e.value.reason == reason and words in str(e.value), e.value

    challenge = json.loads(ca.challenge(request))
    response = activate(machine, {**challenge, "nonce": base64.b64encode(b"\1" * 32).decode()})
    refused(response, "nonce-mismatch", "another nonce than the challenge's")
    challenge = json.loads(ca.challenge(request))
    refused(activate(machine, challenge, "com.example.another-app"), "ak-mismatch", "another key than the AK")
    challenge = json.loads(ca.challenge(request))
    response = activate(machine, challenge)
    signature = bytearray(base64.b64decode(response["certify_signature"]))
    signature[-1] ^= 1
    refused({**response, "certify_signature": base64.b64encode(signature).decode()}, "signature", "not valid")
    challenge = json.loads(ca.challenge(request))
    response = activate(machine, challenge)
    refused({**response, "platform_ak_certificate": base64.b64encode(other_der).decode()}, "credential",
            "not from the platform AK the enrolment request named")
    challenge = json.loads(ca.challenge(request))
    refused(activate(other, challenge), "credential", "not from the platform AK the enrolment request named")
    challenge = json.loads(ca.challenge(request))
    refused({**activate(machine, challenge), "credential": base64.b64encode(b"\0" * 32).decode()}, "malformed",
            "both a credential")
    challenge = json.loads(ca.challenge(request))
    response = activate(machine, challenge)
    certificate = ca.finish(json.dumps(response))
    assert certificate, "the untouched response still passes"
    # the same response again is a retry (docs/SERVER-STATE.md, invariant 9): the same certificate
    assert ca.finish(json.dumps(response)) == certificate


def test_a_challenge_for_a_platform_ak_the_tpm_lacks_says_so(unlocked, make_ca, vtpm_root):
    machine = unlocked()
    challenge = {"v": 1, "type": "deviceid.enrolment-challenge", "id": "0" * 32, "route": "platform-ak",
                 "platform_ak": "azure", "nonce": base64.b64encode(b"\0" * 32).decode()}
    result = deviceid(machine, "attest", "activate", APP, input=json.dumps(challenge))
    assert result.returncode == 1, result.stderr  # NOT_FOUND
    assert "no longer holds platform AK azure (AK 0x81000003, certificate in NV index 0x01c101d0)" in result.stderr
    for bad, words in [({"route": "another"}, 'route "another", which DeviceID does not know'),
                       ({"platform_ak": "aws"}, 'platform AK "aws", which DeviceID does not know')]:
        result = deviceid(machine, "attest", "activate", APP, input=json.dumps({**challenge, **bad}))
        assert result.returncode == 22 and words in result.stderr, result.stderr  # UNSUPPORTED


def test_doctor_names_the_platform_ak(unlocked, vtpm_root):
    machine = unlocked()
    azure_style(machine, vtpm_root)
    check = doctor_tpm(machine)
    assert check["ok"] is True, check
    assert "EK certificates: none; attestation: with a Privacy CA through the platform AK azure (AK 0x81000003, " \
           "certificate in NV index 0x01c101d0), or given EK L-1's certificate out of band" in check["detail"], check


def test_doctor_names_a_platform_ak_made_from_its_template(unlocked, vtpm_root):
    machine = unlocked()
    gce_style(machine, vtpm_root, "ecc")
    check = doctor_tpm(machine)
    assert check["ok"] is True, check
    assert "through the platform AK gce-ecc (AK made from the template in NV index 0x01c10003, certificate in NV " \
           "index 0x01c10002)" in check["detail"], check


def test_the_command_line_ca_takes_a_vtpm_root(unlocked, vtpm_root, swtpm_localca, tmp_path):
    """`python3 -m deviceid_verifier challenge --platform-ak-anchor` and `finish` (which needs no
    anchors) enrol an Azure-style vTPM; without the option the CLI refuses, naming it."""
    machine = unlocked()
    azure_style(machine, vtpm_root)
    key, certificate = tmp_path / "ca.key", tmp_path / "ca.pem"
    assert cli("new-ca", "--key", key, "--cert", certificate, "--name", "deviceid CLI platform CA").returncode == 0
    ek_roots, vtpm = tmp_path / "ek-roots.pem", tmp_path / "vtpm-root.pem"
    ek_roots.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in swtpm_localca))
    vtpm.write_bytes(vtpm_root[1].public_bytes(serialization.Encoding.PEM))
    ca_args = ["--ca-key", key, "--ca-cert", certificate, "--state", tmp_path / "pending.json"]
    request = json.dumps(request_of(machine))
    refused = cli("challenge", *ca_args, "--ek-anchor", ek_roots, input=request)
    assert cli_rejection(refused) == "ek-untrusted" and "platform_ak_anchors" in refused.stderr
    challenge = cli("challenge", *ca_args, "--ek-anchor", ek_roots, "--platform-ak-anchor", vtpm, input=request)
    assert challenge.returncode == 0, challenge.stderr
    assert json.loads(challenge.stdout)["route"] == "platform-ak"
    finished = cli("finish", *ca_args, input=activate_text(machine, challenge.stdout))
    assert finished.returncode == 0, finished.stderr
    ak = x509.load_der_x509_certificate(base64.b64decode(json.loads(finished.stdout)["certificate"]))
    assert ak.issuer.rfc4514_string() == "CN=deviceid CLI platform CA"
