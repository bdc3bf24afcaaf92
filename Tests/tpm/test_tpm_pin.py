"""The salting key pinned at first use (docs/STATE.md, "TPM pins"; docs/HARDWARE-ID.md, "Salted
sessions"): the Name of the key the first conversation on a machine was salted to, kept per
machine and TPM address in the user's file store. Before, nothing was kept: another TPM at the
same address, or a proxy answering the salting key's CreatePrimary (or a persistent SRK's
ReadPublic) with another TPM's key of the same template, was salted to as the first one was —
another TPM gave its own ID, exit 0, and a key swapped under the session failed later, in other
words (the first command under the session failed its HMAC)."""
import hashlib
import hmac
import os

import pytest

from proxies import RewritingProxy, frame, frame_code, read_frame
from test_deviceid_device import APP_A, deviceid, hardware_id, transient_handles
from test_endorsement import platform
from test_hostile_tpm import SALT_KEY_ATTRIBUTES, SRK_PERSISTENT, TPM2_CC_CREATE_PRIMARY, create_primary_template

IO = 18  # the command's exit code for IO: 10 + |status|
TPM2_CC_READ_PUBLIC, TPM2_CC_FLUSH_CONTEXT = 0x173, 0x165
MACHINE_IDS = {"one": "0123456789abcdef0123456789abcdef", "two": "fedcba9876543210fedcba9876543210"}
SRK = ["-G", "ecc256:aes128cfb", "-a", "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|restricted|decrypt"]


class Home:
    """A user's home and file store, on the machine whose /etc/machine-id `machine` names."""

    def __init__(self, tmp_path):
        self.path, self.store = tmp_path / "home", tmp_path / "home" / "store"
        self.path.mkdir()
        for name, value in MACHINE_IDS.items():
            (tmp_path / f"machine-id-{name}").write_text(value + "\n")
        self.tmp_path = tmp_path

    def run(self, tcti, *args, machine="one"):
        return deviceid(None, *args, env={"DEVICEID_TPM_TCTI": tcti, "HOME": str(self.path),
                                          "DEVICEID_STORE_DIR": str(self.store),
                                          "DEVICEID_MACHINE_ID_PATH": str(self.tmp_path / f"machine-id-{machine}")})

    def id(self, tcti, machine="one"):
        result = self.run(tcti, "hardware-id", APP_A, machine=machine)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    def pins(self):
        return {p.name: p.read_bytes() for p in self.store.glob("state-*")} if self.store.exists() else {}


def pin_file(machine_id, address):
    """The pin's file name, computed apart from the library: a state item (kind 3) of service
    "deviceid.state" and account "tpm-pin " + HMAC-SHA256(machine ID, label ‖ 0 ‖ address)."""
    mac = hmac.new(bytes.fromhex(machine_id), b"deviceid.tpm-pin.v1\0" + address.encode(), hashlib.sha256)
    key = b"deviceid.state\0" + b"tpm-pin " + mac.hexdigest().encode()
    return "state-" + hashlib.sha256(bytes([3]) + key).hexdigest()[:40], key


def refused_by_the_pin(result):
    assert result.returncode == IO, f"exit {result.returncode}: {result.stdout}{result.stderr}"
    assert "another salting key" in result.stderr and "cleared (tpm2_clear) or replaced" in result.stderr \
        and "something between DeviceID and the TPM" in result.stderr and "deviceid tpm-pin forget" in result.stderr, \
        result.stderr
    assert result.stdout == ""


def passing(command, forward, seen):
    return forward(command)


@pytest.fixture
def two(machines, request):
    return machines(request.node.name[-10:] + "-a"), machines(request.node.name[-10:] + "-b")


def proxy_at(directory, machine, answer=passing):
    """A proxy at `directory`/proxy.sock in front of `machine`: the address stays, the TPM behind
    it is whichever the test puts there."""
    for suffix in ("", ".ctrl"):
        if os.path.exists(directory / ("proxy.sock" + suffix)):
            os.unlink(directory / ("proxy.sock" + suffix))
    return RewritingProxy(machine, directory, answer)


def test_first_use_pins_and_a_second_call_passes_with_the_same_id(machines, tmp_path):
    machine = machines("pin-first")
    home = Home(tmp_path)
    first = home.id(machine.tpm.tcti)
    name, key = pin_file(MACHINE_IDS["one"], machine.tpm.tcti)
    pins = home.pins()
    assert list(pins) == [name], f"one pin, filed under the hash of the machine ID and the address: {list(pins)}"
    content = pins[name]
    assert key in content and MACHINE_IDS["one"].encode() not in content and bytes.fromhex(MACHINE_IDS["one"]) \
        not in content, "the machine ID is never kept in clear"
    value = content[20 + len(key):-32]
    assert len(value) == 34 and value[:2] == b"\x00\x0b", "the salting key's Name: SHA-256 ‖ digest"
    assert home.id(machine.tpm.tcti) == first == hardware_id(machine, APP_A)
    assert home.pins() == pins, "a second call finds the pin and leaves it"
    doctor = home.run(machine.tpm.tcti, "doctor")
    assert f"salting key pinned on this machine (Name {value[:8].hex()}" in doctor.stdout, doctor.stdout
    # No ID comes from the pin: removing it changes nothing but that it is written again.
    (home.store / name).unlink()
    assert home.id(machine.tpm.tcti) == first and home.pins() == pins


def test_another_tpm_at_the_address_is_refused_until_the_pin_is_forgotten(two, tmp_path):
    a, b = two
    home = Home(tmp_path)
    (tmp_path / "address").mkdir()
    proxy = proxy_at(tmp_path / "address", a)
    try:
        assert home.id(proxy.tcti) == hardware_id(a, APP_A)
    finally:
        proxy.close()
    pins = home.pins()
    proxy = proxy_at(tmp_path / "address", b)   # the same address, another TPM
    try:
        for call in (["hardware-id", APP_A], ["attest", "certify", APP_A, "--nonce", "bm9uY2U="]):
            refused_by_the_pin(home.run(proxy.tcti, *call))
        assert home.pins() == pins, "a refused conversation writes nothing"
        assert transient_handles(b) == []
        doctor = home.run(proxy.tcti, "doctor")
        assert "note tpm: the TPM at " + proxy.tcti + " answered with another salting key" in doctor.stdout, doctor.stdout
        forgot = home.run(proxy.tcti, "--json", "tpm-pin", "forget")
        assert forgot.returncode == 0 and forgot.stdout.strip() == \
            f'{{"tpm":"{proxy.tcti}","forgotten":true}}', forgot.stdout + forgot.stderr
        assert home.pins() == {}
        assert home.id(proxy.tcti) == hardware_id(b, APP_A) != hardware_id(a, APP_A)
        assert len(home.pins()) == 1 and home.pins() != pins, "the new TPM's key is pinned"
        doctor = home.run(proxy.tcti, "doctor")
        assert "salting key pinned on this machine" in doctor.stdout, doctor.stdout
        again = home.run(proxy.tcti, "tpm-pin", "forget")
        assert again.returncode == 0 and home.run(proxy.tcti, "tpm-pin", "forget").stdout == \
            f"no pin was held for the TPM at {proxy.tcti}\n"
    finally:
        proxy.close()


def test_the_same_home_on_another_machine_pins_afresh(two, tmp_path):
    """A home copied to another machine, whose TPM is at the same address: no pin for that machine,
    so it pins its own TPM's key; back on the first machine, the first pin holds."""
    a, b = two
    home = Home(tmp_path)
    (tmp_path / "address").mkdir()
    proxy = proxy_at(tmp_path / "address", a)
    try:
        first = home.id(proxy.tcti, machine="one")
    finally:
        proxy.close()
    proxy = proxy_at(tmp_path / "address", b)
    try:
        assert home.id(proxy.tcti, machine="two") == hardware_id(b, APP_A)
        assert set(home.pins()) == {pin_file(MACHINE_IDS[m], proxy.tcti)[0] for m in ("one", "two")}
        refused_by_the_pin(home.run(proxy.tcti, "hardware-id", APP_A, machine="one"))
    finally:
        proxy.close()
    proxy = proxy_at(tmp_path / "address", a)
    try:
        assert home.id(proxy.tcti, machine="one") == first
    finally:
        proxy.close()


def ask(machine, command):
    """One command sent straight to `machine`'s swtpm, and its answer."""
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(machine.tpm.socket))
        s.sendall(command)
        return read_frame(s)


def another_tpms_salting_key(other, persistent):
    """An answer function: after `honest` answers, the salting key's CreatePrimary (or, with
    `persistent`, the ReadPublic of the SRK at 0x81000001) is answered with `other`'s: a key of the
    same template, from another TPM. The TPM behind the proxy makes its own, whose handle the
    answer keeps (so that DeviceID's flush reaches it), and the other's is flushed there."""
    state = {"honest": True}

    def answer(command, forward, seen):
        reply = forward(command)
        if state["honest"]:
            return reply
        code = frame_code(command)
        if code == TPM2_CC_CREATE_PRIMARY and not persistent:
            template = create_primary_template(command)[1]
            if template is not None and template["attributes"] == SALT_KEY_ATTRIBUTES:
                theirs = ask(other, command)
                ask(other, frame(0x8001, TPM2_CC_FLUSH_CONTEXT, theirs[10:14]))
                return theirs[:10] + reply[10:14] + theirs[14:]
        if code == TPM2_CC_READ_PUBLIC and persistent and command[10:14] == SRK_PERSISTENT.to_bytes(4, "big"):
            return ask(other, command)
        return reply
    return answer, state


@pytest.mark.parametrize("persistent", [False, True], ids=["made", "persistent SRK"])
def test_another_tpms_salting_key_is_refused_by_the_pin(two, tmp_path, persistent):
    a, b = two
    if persistent:
        for machine in (a, b):
            platform(machine, "tpm2_createprimary", "-C", "o", *SRK, "-c", "srk.ctx")
            platform(machine, "tpm2_evictcontrol", "-C", "o", "-c", "srk.ctx", f"{SRK_PERSISTENT:#x}")
            platform(machine, "tpm2_flushcontext", "-t")
    home = Home(tmp_path)
    answer, state = another_tpms_salting_key(b, persistent)
    proxy = RewritingProxy(a, tmp_path, answer)
    try:
        assert home.id(proxy.tcti) == hardware_id(a, APP_A)
        pins = home.pins()
        state["honest"] = False
        refused_by_the_pin(home.run(proxy.tcti, "hardware-id", APP_A))
        assert home.pins() == pins
        assert transient_handles(a) == [] and transient_handles(b) == []
    finally:
        proxy.close()
