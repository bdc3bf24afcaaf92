"""App Attest for Linux, judged by WebAuthn verifiers nobody here wrote: what `deviceid attest
webauthn` prints on a software TPM (swtpm) is registered by PyPI's python-fido2 and py_webauthn,
each in a venv this module makes, with the Privacy CA's certificate as the only root; and each
rejects it for other client data, another relying party, another app's AK certificate and a
changed byte. The verifiers run in webauthn_judges.py, in their own interpreter, so that nothing
of DeviceID's verifier is on their path."""
import base64
import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types
import venv
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from deviceid_verifier import MemoryStore, Rejected, WebAuthnCredential, WebAuthnVerifier, _cbor
from proxies import Listener, both_ways
from test_deviceid_device import RestartingProxy, deviceid, enrol, hardware_id, start_swtpm, transient_handles

HERE = Path(__file__).resolve().parent
APP, OTHER = "com.example.webauthn", "com.example.webauthn-other"
ORIGIN = "https://app.example"
#: The judges, at the versions whose requirements were measured (docs/TESTING.md).
JUDGES = ["fido2==2.2.1", "webauthn==3.0.1"]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture(scope="module")
def judges(tmp_path_factory):
    """The venv's python, with the verifiers from PyPI (a fresh venv: no Debian package in it)."""
    where = tmp_path_factory.mktemp("webauthn-judges") / "venv"
    venv.EnvBuilder(with_pip=True).create(where)
    python = where / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *JUDGES],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, f"pip could not install {JUDGES} from PyPI:\n{installed.stderr}"
    return python


def judge(python, case):
    out = subprocess.run([str(python), str(HERE / "webauthn_judges.py")], input=json.dumps(case),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def machine(machines):
    return machines("webauthn")


@pytest.fixture(scope="module")
def certificates(machine, ca):
    """The AK certificate messages of APP and OTHER, from an enrolment with the Privacy CA."""
    return {app: enrol(machine, app, ca) for app in (APP, OTHER)}


def client_data(challenge, cross_origin=False):
    return json.dumps({"type": "webauthn.create", "challenge": b64url(challenge), "origin": ORIGIN,
                       "crossOrigin": cross_origin}).encode()


def attest(machine, app, data, certificate_message, tmp_path, *extra):
    path = tmp_path / f"ak-{app}.json"
    path.write_text(certificate_message)
    return deviceid(machine, "attest", "webauthn", app, "--client-data-hash", b64url(hashlib.sha256(data).digest()),
                    "--ak-certificate", str(path), *extra)


def registration(attestation_object, data, challenge, ca, rp_id=APP):
    return {"kind": "registration", "attestation_object": b64url(attestation_object), "client_data_json": b64url(data),
            "challenge": b64url(challenge), "rp_id": rp_id, "origin": ORIGIN,
            "root_pem": ca.certificate.public_bytes(serialization.Encoding.PEM).decode()}


@pytest.fixture(scope="module")
def registered(machine, certificates, ca, tmp_path_factory):
    """One registration of APP: (the CLI's message, its client data, its challenge)."""
    challenge = os.urandom(32)
    data = client_data(challenge)
    made = attest(machine, APP, data, certificates[APP], tmp_path_factory.mktemp("registered"))
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout), data, challenge


def test_the_message_is_the_documented_json(registered):
    message, _, _ = registered
    assert sorted(message) == ["app_id", "attestation_object", "credential_id", "type", "v"]
    assert (message["v"], message["type"], message["app_id"]) == (1, "deviceid.webauthn-attestation", APP)
    for field in ("credential_id", "attestation_object"):
        assert "=" not in message[field] and "+" not in message[field] and "/" not in message[field]
    assert len(unb64url(message["credential_id"])) == 32


def test_fido2_and_py_webauthn_register_the_credential(registered, judges, ca, machine):
    message, data, challenge = registered
    verdicts = judge(judges, registration(unb64url(message["attestation_object"]), data, challenge, ca))
    for name in ("fido2", "py_webauthn"):
        assert verdicts[name]["ok"], (name, verdicts[name])
        assert verdicts[name]["credential_id"] == message["credential_id"], name
        assert verdicts[name]["counter"] == 0, name
    assert verdicts["fido2"]["public_key"] == verdicts["py_webauthn"]["public_key"]
    assert verdicts["fido2"]["flags"] == 0x40, "AT only: no user presence is claimed, nothing is backed up"
    assert transient_handles(machine) == []


def test_the_same_app_gets_the_same_credential_and_another_app_another(machine, certificates, registered, tmp_path):
    message, _, _ = registered
    again = attest(machine, APP, client_data(os.urandom(32)), certificates[APP], tmp_path)
    other = attest(machine, OTHER, client_data(os.urandom(32)), certificates[OTHER], tmp_path)
    assert again.returncode == 0 and other.returncode == 0, (again.stderr, other.stderr)
    assert json.loads(again.stdout)["credential_id"] == message["credential_id"]
    assert json.loads(other.stdout)["credential_id"] != message["credential_id"]


def flipped(data, marker, offset):
    at = data.index(marker) + offset
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


def test_both_verifiers_reject_what_is_not_this_registration(registered, judges, ca, machine, certificates, tmp_path):
    message, data, challenge = registered
    attestation_object = unb64url(message["attestation_object"])
    rp_hash = hashlib.sha256(APP.encode()).digest()
    cases = {
        # the same challenge and origin: only the hash in certInfo tells them apart
        "other client data": registration(attestation_object, client_data(challenge, cross_origin=True), challenge, ca),
        "another challenge": registration(attestation_object, client_data(os.urandom(32)), challenge, ca),
        "another relying party": registration(attestation_object, data, challenge, ca, rp_id=OTHER),
        "a byte of authData (its counter)": registration(flipped(attestation_object, rp_hash, 33), data, challenge, ca),
        "a byte of certInfo (after its magic)": registration(flipped(attestation_object, b"\xffTCG", 40), data,
                                                             challenge, ca),
    }
    # The AK certificate of another app: its AK did not sign this app's credential.
    crossed = attest(machine, APP, data, certificates[OTHER], tmp_path)
    assert crossed.returncode == 0, crossed.stderr
    cases["another app's AK certificate"] = registration(unb64url(json.loads(crossed.stdout)["attestation_object"]),
                                                         data, challenge, ca)
    for what, case in cases.items():
        verdicts = judge(judges, case)
        for name in ("fido2", "py_webauthn"):
            assert not verdicts[name]["ok"], f"{name} accepted {what}"


def test_bad_input_gets_its_status(machine, certificates, tmp_path):
    path = tmp_path / "ak.json"
    path.write_text(certificates[APP])
    wrong_length = deviceid(machine, "attest", "webauthn", APP, "--client-data-hash", b64url(bytes(31)),
                            "--ak-certificate", str(path))
    assert wrong_length.returncode == 11 and "32 bytes" in wrong_length.stderr, wrong_length.stderr
    padded = deviceid(machine, "attest", "webauthn", APP, "--client-data-hash", base64.b64encode(bytes(32)).decode(),
                      "--ak-certificate", str(path))
    assert padded.returncode == 2 and "base64url" in padded.stderr, padded.stderr
    not_a_certificate = tmp_path / "evidence.json"
    not_a_certificate.write_text('{"v":1,"type":"deviceid.attestation"}')
    wrong_message = deviceid(machine, "attest", "webauthn", APP, "--client-data-hash", b64url(bytes(32)),
                             "--ak-certificate", str(not_a_certificate))
    assert wrong_message.returncode == 11 and "deviceid.ak-certificate" in wrong_message.stderr, wrong_message.stderr
    no_tpm = deviceid(None, "attest", "webauthn", APP, "--client-data-hash", b64url(bytes(32)),
                      "--ak-certificate", str(path), env={"DEVICEID_TPM_TCTI": f"swtpm:path={tmp_path}/no.sock"})
    assert no_tpm.returncode == 15, no_tpm.stderr



# -- assertions -----------------------------------------------------------------------------

COUNTER_LABEL = b"deviceid.assertion-counter.v1"


def length_prefixed(data):
    return len(data).to_bytes(4, "big") + data


def counter_tag(app):
    """The counter's tag, as docs/HARDWARE-ID.md derives it (recomputed here, not taken from DeviceID)."""
    return hashlib.sha256(length_prefixed(COUNTER_LABEL) + length_prefixed(app.encode())).digest()


def counter_slot(app):
    return 0x01800000 + int.from_bytes(counter_tag(app)[:3], "big") % (0x400000 - 8)


def assertion(machine, app, data, *extra, **kw):
    return deviceid(machine, "assert", app, "--client-data-hash", b64url(hashlib.sha256(data).digest()), *extra, **kw)


def assertion_case(message, data, public_key, rp_id=APP):
    return {"kind": "assertion", "public_key": public_key, "authenticator_data": message["authenticator_data"],
            "client_data_hash": b64url(hashlib.sha256(data).digest()), "signature": message["signature"],
            "rp_id": rp_id}


@pytest.fixture(scope="module")
def registered_key(registered, judges, ca):
    """The COSE key python-fido2 registered from the attestation."""
    message, data, challenge = registered
    verdicts = judge(judges, registration(unb64url(message["attestation_object"]), data, challenge, ca))
    assert verdicts["fido2"]["ok"], verdicts
    return verdicts["fido2"]["public_key"]


def tools(machine, *argv):
    return subprocess.run(list(argv), env=dict(os.environ, TPM2TOOLS_TCTI=machine.tpm.tcti), capture_output=True,
                          text=True, timeout=60)


def test_fido2_verifies_each_assertion_and_the_counter_grows_by_one(machine, registered, registered_key, judges):
    message, _, _ = registered
    counters = []
    for _ in range(3):
        data = client_data(os.urandom(32)).replace(b"webauthn.create", b"webauthn.get")
        made = assertion(machine, APP, data)
        assert made.returncode == 0, made.stderr
        signed = json.loads(made.stdout)
        assert sorted(signed) == ["app_id", "authenticator_data", "counter", "credential_id", "signature", "type", "v"]
        assert (signed["v"], signed["type"], signed["app_id"]) == (1, "deviceid.webauthn-assertion", APP)
        assert signed["credential_id"] == message["credential_id"]
        verdict = judge(judges, assertion_case(signed, data, registered_key))["fido2"]
        assert verdict["ok"], verdict
        assert verdict["counter"] == signed["counter"] and verdict["flags"] == 0, verdict
        counters.append(signed["counter"])
    assert counters == [counters[0], counters[0] + 1, counters[0] + 2] and counters[0] >= 1, counters
    assert transient_handles(machine) == []


def test_the_counter_is_the_nv_index_the_docs_name(machine):
    made = assertion(machine, APP, b"{}")
    assert made.returncode == 0, made.stderr
    counter = json.loads(made.stdout)["counter"]
    slot = f"0x{counter_slot(APP):x}"
    public = tools(machine, "tpm2_nvreadpublic", slot)
    assert public.returncode == 0, public.stderr
    assert "authwrite|nt=0x1|authread|no_da|orderly|written" in public.stdout.replace(" ", ""), public.stdout
    assert counter_tag(APP).hex() in public.stdout.lower().replace(" ", ""), public.stdout
    value = tools(machine, "tpm2_nvread", "-P", "", slot, "-s", "8")
    assert value.returncode == 0, value.stderr


def test_fido2_rejects_an_assertion_that_is_not_this_one(machine, registered_key, judges):
    data = b'{"type":"webauthn.get"}'
    signed = json.loads(assertion(machine, APP, data).stdout)
    tampered_data = dict(signed, authenticator_data=b64url(flipped(unb64url(signed["authenticator_data"]), b"", 33)))
    other = json.loads(assertion(machine, OTHER, data).stdout)
    cases = {
        "other client data": assertion_case(signed, b'{"type":"webauthn.get","x":1}', registered_key),
        "a changed counter": assertion_case(tampered_data, data, registered_key),
        "another relying party": assertion_case(signed, data, registered_key, rp_id=OTHER),
        "another app's credential": assertion_case(other, data, registered_key, rp_id=OTHER),
    }
    for what, case in cases.items():
        assert not judge(judges, case)["fido2"]["ok"], f"fido2 accepted {what}"


def test_each_app_has_its_own_counter(machine):
    first = json.loads(assertion(machine, "com.example.counter-a", b"{}").stdout)["counter"]
    for _ in range(3):
        assertion(machine, "com.example.counter-a", b"{}")
    other = json.loads(assertion(machine, "com.example.counter-b", b"{}").stdout)["counter"]
    again = json.loads(assertion(machine, "com.example.counter-a", b"{}").stdout)["counter"]
    assert again == first + 4, (first, again)
    assert other >= 1


def test_no_counter_left_is_no_memory_and_nothing_is_left_behind(machines):
    """Another program's counters fill the TPM's NV memory (swtpm 0.7 takes about 935 of 8 bytes;
    indices of other kinds leave room for counters there)."""
    full = machines("nv-full")
    defined = []
    while True:
        index = f"0x{0x01000000 + len(defined):x}"
        made = tools(full, "tpm2_nvdefine", index, "-C", "o", "-s", "8", "-a", "ownerread|ownerwrite|nt=counter")
        if made.returncode != 0:
            assert "0x14b" in (made.stderr + made.stdout).lower(), made.stderr  # TPM_RC_NV_SPACE
            break
        defined.append(index)
    assert defined, "no counter could be defined at all"
    made = assertion(full, APP, b"{}")
    assert made.returncode == 20 and "NV counters" in made.stderr, (made.returncode, made.stderr)
    assert transient_handles(full) == []
    assert tools(full, "tpm2_nvundefine", "-C", "o", defined[0]).returncode == 0
    again = assertion(full, APP, b"{}")
    assert again.returncode == 0 and json.loads(again.stdout)["counter"] >= 1, again.stderr


def test_no_tpm_and_a_bad_hash_get_their_status(machine, tmp_path):
    assert assertion(None, APP, b"{}", env={"DEVICEID_TPM_TCTI": f"swtpm:path={tmp_path}/no.sock"}).returncode == 15
    short = deviceid(machine, "assert", APP, "--client-data-hash", b64url(bytes(16)))
    assert short.returncode == 11 and "32 bytes" in short.stderr, short.stderr
    missing = deviceid(machine, "assert", APP)
    assert missing.returncode == 2 and "--client-data-hash" in missing.stderr, missing.stderr


# -- DeviceID's own verifier: registration, assertions, the counter rule, a cloned TPM --------

def signed_in(verifier, machine, app, certificate_message, tmp_path):
    """A credential registered with `verifier` for `app` on `machine`."""
    data = client_data(verifier.new_challenge())
    made = attest(machine, app, data, certificate_message, tmp_path)
    assert made.returncode == 0, made.stderr
    return verifier.register(made.stdout, data, app_id=app)


def asserted(verifier, machine, app):
    """(the assertion message, its client data) for a fresh challenge of `verifier`."""
    data = json.dumps({"type": "webauthn.get", "challenge": b64url(verifier.new_challenge()),
                       "origin": ORIGIN}).encode()
    made = assertion(machine, app, data)
    assert made.returncode == 0, made.stderr
    return made.stdout, data


def rejected(reason, call, *args):
    with pytest.raises(Rejected) as caught:
        call(*args)
    assert caught.value.reason == reason, (caught.value.reason, str(caught.value))


def test_the_verifier_registers_and_follows_the_counter(machine, certificates, ca, registered, tmp_path):
    verifier = WebAuthnVerifier([ca.certificate], origins=[ORIGIN])
    credential = signed_in(verifier, machine, APP, certificates[APP], tmp_path)
    message, _, _ = registered
    assert (credential.app_id, credential.counter) == (APP, 0)
    assert b64url(credential.credential_id) == message["credential_id"]
    assert WebAuthnCredential.from_json(credential.to_json()) == credential
    counters = []
    for _ in range(3):
        text, data = asserted(verifier, machine, APP)
        credential = verifier.verify_assertion(text, data, credential)
        counters.append(credential.counter)
    assert counters == sorted(counters) and len(set(counters)) == 3, counters
    text, data = asserted(verifier, machine, APP)
    rejected("nonce-replayed", verifier.verify_assertion, text, data, verifier.verify_assertion(text, data, credential))
    ahead = dataclasses.replace(credential, counter=json.loads(text)["counter"] + 1)
    text, data = asserted(verifier, machine, APP)
    rejected("counter", verifier.verify_assertion, text, data, ahead)


def test_the_verifier_rejects_each_tampered_registration_with_its_reason(machine, certificates, ca, make_ca,
                                                                         tmp_path):
    store = MemoryStore()  # shared with a verifier of another CA below: the challenges are one set
    verifier = WebAuthnVerifier([ca.certificate], origins=[ORIGIN], store=store)

    def made(app=APP, certificate=certificates[APP]):
        data = client_data(verifier.new_challenge())
        out = attest(machine, app, data, certificate, tmp_path)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout), data

    def with_object(message, change):
        return json.dumps(dict(message, attestation_object=b64url(change(unb64url(message["attestation_object"])))))

    cases = [
        ("another app id", lambda m, d: (json.dumps(dict(m, app_id=OTHER)), d), "rp-id-mismatch"),
        ("a changed authData byte", lambda m, d: (with_object(m, lambda o: flipped(o, hashlib.sha256(APP.encode())
                                                                                  .digest(), 33)), d), "nonce-mismatch"),
        ("a changed certInfo byte", lambda m, d: (with_object(m, lambda o: flipped(o, b"\xffTCG", 40)), d), "signature"),
        ("other client data", lambda m, d: (json.dumps(m), d.replace(b'"crossOrigin": false', b'"crossOrigin": true')),
         "nonce-mismatch"),
        ("another credential id", lambda m, d: (json.dumps(dict(m, credential_id=b64url(bytes(32)))), d),
         "credential-mismatch"),
        ("a registration's type", lambda m, d: (json.dumps(m), d.replace(b"webauthn.create", b"webauthn.get")),
         "client-data"),
        ("another origin", lambda m, d: (json.dumps(m), d.replace(ORIGIN.encode(), b"https://evil.example")),
         "client-data"),
    ]
    for what, change, reason in cases:
        message, data = made()
        text, changed = change(message, data)
        rejected(reason, verifier.register, text, changed)
    # another app's AK certificate: its AK did not make this app's attestation
    message, data = made(certificate=certificates[OTHER])
    rejected("app-id-mismatch", verifier.register, json.dumps(message), data)
    # a CA the server does not trust
    message, data = made()
    stranger = WebAuthnVerifier([make_ca("another CA").certificate], store=store)
    rejected("ak-untrusted", stranger.register, json.dumps(message), data)
    # the same client data (its challenge) twice
    message, data = made()
    verifier.register(json.dumps(message), data)
    rejected("nonce-replayed", verifier.register, json.dumps(message), data)


def test_the_verifier_rejects_any_changed_byte_with_a_reason_and_nothing_else(machine, certificates, ca, tmp_path):
    """Random byte changes anywhere in the attestation object: each one a Rejected, never
    another exception (python-fido2 and py_webauthn are not asked: some changes are harmless to
    them, e.g. in a certificate's unsigned part)."""
    verifier = WebAuthnVerifier([ca.certificate])
    data = client_data(verifier.new_challenge())
    made = attest(machine, APP, data, certificates[APP], tmp_path)
    message = json.loads(made.stdout)
    original = unb64url(message["attestation_object"])
    random = __import__("random").Random(20261203)
    for _ in range(300):
        changed = bytearray(original)
        for _ in range(random.randint(1, 3)):
            changed[random.randrange(len(changed))] ^= 1 << random.randrange(8)
        data = client_data(verifier.new_challenge())
        text = json.dumps(dict(message, attestation_object=b64url(bytes(changed))))
        with pytest.raises(Rejected):
            verifier.register(text, data)
    for cut in range(0, len(original), 97):
        text = json.dumps(dict(message, attestation_object=b64url(original[:cut])))
        with pytest.raises(Rejected):
            verifier.register(text, client_data(verifier.new_challenge()))


def clone_machine(machine, directory):
    """`machine`'s swtpm stopped, its state directory copied, and both started again: the copy is
    a clone, as a VM's TPM state is copied with the VM (same seeds, same counters)."""
    tpm = machine.tpm
    os.kill(tpm.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{tpm.pid}").exists():
        assert time.monotonic() < deadline, "swtpm did not stop"
        time.sleep(0.02)
    state = directory / "state"
    shutil.copytree(tpm.state, state)
    start_swtpm(machine)
    socket_path = directory / "tpm.sock"
    subprocess.run(["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={state}", "--server",
                    f"type=unixio,path={socket_path}", "--ctrl", f"type=unixio,path={socket_path}.ctrl",
                    "--flags", "startup-clear", "--daemon", "--pid", f"file={directory / 'swtpm.pid'}"],
                   check=True, capture_output=True, timeout=60)
    while not (socket_path.is_socket() and (directory / "swtpm.pid").exists()):
        assert time.monotonic() < deadline, "the clone's swtpm did not start"
        time.sleep(0.02)
    pid = int((directory / "swtpm.pid").read_text().strip())
    return types.SimpleNamespace(tpm=types.SimpleNamespace(tcti=f"swtpm:path={socket_path}", pid=pid))


def test_a_cloned_tpm_is_caught_by_its_counter(machines, ca, tmp_path_factory):
    original = machines("cloned")
    certificate = enrol(original, APP, ca)
    verifier = WebAuthnVerifier([ca.certificate])
    directory = tmp_path_factory.mktemp("clone")
    credential = signed_in(verifier, original, APP, certificate, directory)
    credential = verifier.verify_assertion(*asserted(verifier, original, APP), credential)
    clone = clone_machine(original, directory)
    try:
        # the same TPM as far as anyone can see: the same credential, hardware ID and AK
        assert hardware_id(clone, APP) == hardware_id(original, APP)
        credential = verifier.verify_assertion(*asserted(verifier, original, APP), credential)
        text, data = asserted(verifier, clone, APP)
        assert json.loads(text)["credential_id"] == b64url(credential.credential_id)
        assert json.loads(text)["counter"] == credential.counter, "the clone counts on from the same value"
        assert verifier.credential(credential.credential_id).counter_failed is None
        rejected("counter", verifier.verify_assertion, text, data)
        # one assertion after the other, no race: the store marks the credential, for good
        marked = verifier.credential(credential.credential_id).counter_failed
        assert marked is not None
        later = verifier.verify_assertion(*asserted(verifier, clone, APP))
        assert later.counter == credential.counter + 1 and later.counter_failed == marked
    finally:
        os.kill(clone.tpm.pid, signal.SIGTERM)


def test_the_python_binding_registers_and_asserts_too(machine, certificates, ca):
    """deviceid.webauthn_attestation() and webauthn_assertion(), through the C ABI in another process."""
    verifier = WebAuthnVerifier([ca.certificate])
    create = client_data(verifier.new_challenge())
    get = json.dumps({"type": "webauthn.get", "challenge": b64url(verifier.new_challenge()), "origin": ORIGIN}).encode()
    out = subprocess.run([sys.executable, "-c", f"""
import hashlib, json, sys, deviceid
create, get, certificate = json.loads(sys.stdin.read())
print(deviceid.webauthn_attestation("{APP}", hashlib.sha256(create.encode()).digest(), certificate))
print(deviceid.webauthn_assertion("{APP}", hashlib.sha256(get.encode()).digest()))
try:
    deviceid.webauthn_assertion("{APP}", b"short")
except deviceid.InvalidArgumentError as e:
    print(json.dumps(str(e)))
"""], input=json.dumps([create.decode(), get.decode(), certificates[APP]]),
        env=dict(os.environ, DEVICEID_TPM_TCTI=machine.tpm.tcti), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    attestation, signed, refused = out.stdout.splitlines()
    credential = verifier.register(attestation, create, app_id=APP)
    assert verifier.verify_assertion(signed, get, credential).counter == json.loads(signed)["counter"]
    assert "32 bytes" in json.loads(refused)


class InterleavingProxy:
    """Stands between DeviceID and a swtpm, as another process would through the kernel's
    resource manager (swtpm serves one connection at a time, so two processes never interleave
    there): at DeviceID's first TPM2_NV_Increment, it increments the same index itself just
    before, and reads it just after, on the same connection. Then both read one count, unless
    DeviceID makes sure the count it reports is its own."""

    NV_INCREMENT, NV_READ = 0x134, 0x14E

    def __init__(self, machine, directory):
        self.observed = []  # the counts the other process read
        self.listener = Listener(machine, directory, self.connection)
        self.path = self.listener.path

    def connection(self, client, upstream, commands):
        if commands:
            self.serve(client, upstream)
        else:
            both_ways(client, upstream)

    @staticmethod
    def exactly(sock, n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def message(self, sock):
        head = self.exactly(sock, 10)
        return head + self.exactly(sock, int.from_bytes(head[2:6], "big") - 10)

    @staticmethod
    def command(code, index, parameters=b""):
        password = (0x40000009).to_bytes(4, "big") + b"\0\0" + b"\0" + b"\0\0"
        body = index * 2 + len(password).to_bytes(4, "big") + password + parameters
        return (0x8002).to_bytes(2, "big") + (10 + len(body)).to_bytes(4, "big") + code.to_bytes(4, "big") + body

    def serve(self, client, upstream):
        try:
            while True:
                request = self.message(client)
                code = int.from_bytes(request[6:10], "big")
                if code == self.NV_INCREMENT and not self.observed:
                    index = request[10:14]
                    upstream.sendall(self.command(self.NV_INCREMENT, index))
                    assert int.from_bytes(self.message(upstream)[6:10], "big") == 0
                    upstream.sendall(request)
                    answer = self.message(upstream)
                    upstream.sendall(self.command(self.NV_READ, index, (8).to_bytes(2, "big") + b"\0\0"))
                    read = self.message(upstream)
                    assert int.from_bytes(read[6:10], "big") == 0
                    self.observed.append(int.from_bytes(read[16:24], "big"))
                else:
                    upstream.sendall(request)
                    answer = self.message(upstream)
                client.sendall(answer)
        except OSError:
            pass
        finally:  # swtpm serves the next connection only once this one is closed
            for sock in (client, upstream):
                sock.close()

    def close(self):
        self.listener.close()


def test_a_count_another_process_read_is_never_reported(machine, tmp_path):
    """NV_Increment answers no count: DeviceID reads it after. Another process's increment and
    read around DeviceID's increment (the proxy does both) read the same count; DeviceID reports
    a later one, its own."""
    assert assertion(machine, "com.example.interleaved", b"{}").returncode == 0  # the counter exists
    proxy = InterleavingProxy(machine, tmp_path)
    try:
        made = assertion(None, "com.example.interleaved", b"{}", env={"DEVICEID_TPM_TCTI": f"swtpm:path={proxy.path}"})
    finally:
        proxy.close()
    assert made.returncode == 0, made.stderr
    assert len(proxy.observed) == 1, "the proxy interleaved once"
    counter = json.loads(made.stdout)["counter"]
    assert counter > proxy.observed[0], (counter, proxy.observed)
    after = assertion(machine, "com.example.interleaved", b"{}")
    assert after.returncode == 0 and json.loads(after.stdout)["counter"] == counter + 1, (after.stderr, counter)


def test_a_revoked_ak_stops_assertions_and_bad_client_data_is_a_reason(machine, ca, tmp_path):
    app = "com.example.revoked"
    verifier = WebAuthnVerifier([ca.certificate], origins=[ORIGIN], store=ca.store)
    credential = signed_in(verifier, machine, app, enrol(machine, app, ca), tmp_path)
    credential = verifier.verify_assertion(*asserted(verifier, machine, app), credential)
    assert ca.revoke(credential.ak_serial, "key compromise")
    rejected("revoked", verifier.verify_assertion, *asserted(verifier, machine, app), credential)
    message = attest(machine, APP, b"{}", enrol(machine, APP, ca), tmp_path).stdout
    for data in (b'{"type":"webauthn.create","challenge":"AA","origin":[]}', b"[" * 100000, b"\xff",
                 b'{"type":"webauthn.create","type":"webauthn.create","challenge":"AA","origin":"x"}'):
        rejected("client-data", verifier.register, message, data)
    for text in ("[" * 100000, "{}", '{"app_id":"a"}', credential.to_json().replace('"counter":', '"counter":-')):
        with pytest.raises(ValueError):
            WebAuthnCredential.from_json(text)


def test_an_app_server_without_the_cas_store_follows_its_crl(machine, ca, tmp_path):
    app = "com.example.crl-webauthn"
    app_server = WebAuthnVerifier([ca.certificate], crls=[ca.crl().public_bytes(serialization.Encoding.DER)])
    certificate = enrol(machine, app, ca)
    credential = signed_in(app_server, machine, app, certificate, tmp_path)
    app_server.verify_assertion(*asserted(app_server, machine, app))
    assert ca.revoke(credential.ak_serial, "key-compromise")
    app_server.verify_assertion(*asserted(app_server, machine, app))  # its CRL is older than the revocation
    assert app_server.load_crl(ca.crl().public_bytes(serialization.Encoding.DER)) is True
    rejected("revoked", app_server.verify_assertion, *asserted(app_server, machine, app))
    data = client_data(app_server.new_challenge())
    rejected("revoked", app_server.register, attest(machine, app, data, certificate, tmp_path).stdout, data)


def test_a_tpm_that_stops_mid_assertion_is_a_timeout(machine, tmp_path):
    """The counter's increment reaches the TPM and no answer comes: TIMED_OUT at the deadline,
    nothing printed; the next assertion counts on."""
    before = json.loads(assertion(machine, APP, b"{}").stdout)["counter"]
    proxy = RestartingProxy(machine, tmp_path, InterleavingProxy.NV_INCREMENT, hold=True)
    try:
        start = time.monotonic()
        made = assertion(None, APP, b"{}", "--timeout", "1500", env={"DEVICEID_TPM_TCTI": f"swtpm:path={proxy.path}"})
        elapsed = time.monotonic() - start
    finally:
        proxy.close()
    assert proxy.restarted.is_set(), "the proxy held the NV_Increment command"
    assert made.returncode == 16 and made.stdout == "" and "did not answer within 1500 ms" in made.stderr, made.stderr
    assert elapsed < 10
    after = assertion(machine, APP, b"{}")
    assert after.returncode == 0 and json.loads(after.stdout)["counter"] > before, after.stderr


def ruby_judge(attestation_object, data, ca, qualifying=None):
    """ruby-tpm-key-attestation's verdict on the TPM part of an attestation object."""
    decoded = _cbor.loads(attestation_object, "the attestation object")
    statement = decoded["attStmt"]
    if qualifying is None:
        qualifying = hashlib.sha256(decoded["authData"] + hashlib.sha256(data).digest()).digest()
    case = {"cert_info": statement["certInfo"], "signature": statement["sig"], "pub_area": statement["pubArea"],
            "qualifying_data": qualifying}
    case = {k: base64.b64encode(v).decode() for k, v in case.items()}
    case.update(x5c=[base64.b64encode(c).decode() for c in statement["x5c"]],
                root_pem=ca.certificate.public_bytes(serialization.Encoding.PEM).decode())
    assert shutil.which("ruby"), "ruby is missing: scripts/install-deps installs ruby-tpm-key-attestation"
    out = subprocess.run(["ruby", str(HERE / "tpm_key_attestation_judge.rb")], input=json.dumps(case),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["ok"]


def test_ruby_tpm_key_attestation_accepts_the_tpm_part_and_rejects_changes(registered, ca, certificates, machine,
                                                                           make_ca, tmp_path):
    message, data, _ = registered
    attestation_object = unb64url(message["attestation_object"])
    assert ruby_judge(attestation_object, data, ca)
    assert not ruby_judge(attestation_object, client_data(os.urandom(32)), ca), "other client data"
    assert not ruby_judge(flipped(attestation_object, b"\xffTCG", 40), data, ca), "a changed certInfo byte"
    assert not ruby_judge(attestation_object, data, make_ca("another CA")), "an untrusted CA"
    crossed = attest(machine, APP, data, certificates[OTHER], tmp_path)
    assert not ruby_judge(unb64url(json.loads(crossed.stdout)["attestation_object"]), data, ca), "another app's AK"
