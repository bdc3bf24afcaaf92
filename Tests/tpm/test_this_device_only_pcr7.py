"""this-device-only+pcr7 (issue 54; docs/STATE.md, "Protection classes", "PCR 7"): an ID and a
secret sealed to one swtpm "machine" and to its PCR 7 (the Secure Boot state, as systemd-creds'
--tpm2-pcrs=7) read as COPIED once PCR 7 is extended (tpm2_pcrextend), in words naming the Secure
Boot state, with nothing minted over them, and read again after a reboot of the swtpm brings PCR 7
back; portable and plain this-device-only records of the same home are not affected. The
command, the Python binding and a C program agree (test_this_device_only.py's views)."""
import json
import os
import subprocess
import sys

from test_this_device_only import (  # noqa: F401 (c_program and homes are fixtures)
    APP, SECRET, SERVICE, ACCOUNT, JSON_CALL, assert_copied, assert_reads, c_program, cli_path, homes, login,
    mint, views,
)

PCR7 = "this-device-only+pcr7"
WORDS = "Secure Boot state (PCR 7)"
OTHERS = f"""
    $D get com.example.portable
    $D --protection this-device-only get com.example.plain
    printf %s plain-secret | $D --protection this-device-only secret store com.example.plain licence
    $D --protection this-device-only secret lookup com.example.plain licence; echo
"""


def tools(machine, *argv):
    return subprocess.run(list(argv), env=dict(os.environ, TPM2TOOLS_TCTI=machine.tpm.tcti), check=True,
                          capture_output=True, text=True, timeout=60).stdout


def extend_pcr7(machine):
    """What a Secure Boot change does to PCR 7: one more measurement extended into it."""
    tools(machine, "tpm2_pcrextend", "7:sha256=" + "5b" * 32)


def pcr7(machine) -> str:
    out = tools(machine, "tpm2_pcrread", "sha256:7")
    return out.split("0x", 1)[1].split()[0].lower()


def reboot(machine):
    """A power cycle of the swtpm (its PCRs back to zero, as at the first boot); DeviceID sends
    TPM2_Startup itself, tpm2-tools need it sent here."""
    tools(machine, "swtpm_ioctl", "--unix", f"{machine.tpm.socket}.ctrl", "-i")
    tools(machine, "tpm2_startup", "-c")


def test_a_pcr7_change_reads_copied_with_words_until_pcr7_returns(machines, homes, c_program):
    a = machines("pcr7")
    home = homes("h")
    before = login(a, home, OTHERS)
    assert before.returncode == 0, before.stderr
    id_a = mint(a, home, protection=PCR7)
    seen = views(a, home, c_program, PCR7)
    assert seen["keyring-item"] == "DIDTDP7"
    assert_reads(seen, id_a)
    assert id_a.encode() not in home.store_bytes()
    stored = home.store_bytes()

    extend_pcr7(a)
    assert_copied(views(a, home, c_program, PCR7), WORDS)
    # Read under the plain class too: the envelope, not the class, says what binds it.
    assert_copied(views(a, home, c_program, "this-device-only"), WORDS)
    assert home.store_bytes() == stored  # nothing minted over it
    # The portable and the plain this-device-only records answer as before.
    after = login(a, home, OTHERS)
    assert after.returncode == 0, after.stderr
    assert after.stdout.split() == before.stdout.split() and before.stdout.split()[-1] == "plain-secret", after.stdout

    reboot(a)
    assert pcr7(a) == "00" * 32
    assert_reads(views(a, home, c_program, PCR7), id_a)


def test_a_reset_after_a_pcr7_change_seals_to_the_new_state(machines, homes, c_program):
    a = machines("pcr7-reset")
    home = homes("h")
    id_a = mint(a, home, protection=PCR7)
    extend_pcr7(a)
    result = login(a, home, f"$D reset {APP} && $D --protection {PCR7} get {APP}")
    assert result.returncode == 0, result.stderr
    id_new = result.stdout.split()[0]
    assert id_new != id_a
    result = login(a, home, f"$D --protection {PCR7} get {APP}")
    assert result.returncode == 0 and result.stdout.split()[0] == id_new, result.stderr
    reboot(a)  # PCR 7 as at the first sealing, not as at the second
    result = login(a, home, JSON_CALL + f"j $D --json --protection {PCR7} get {APP}")
    answer, status = result.stdout.strip().rsplit(" ", 1)
    assert json.loads(answer)["error"]["name"] == "COPIED" and WORDS in json.loads(answer)["error"]["message"], answer


def test_another_machine_is_told_apart_from_a_pcr7_change(machines, homes, c_program):
    """The binding key is compared before the policy is tried: on another machine whose PCR 7
    differs too, the words say another machine."""
    a, b = machines("pcr7-a"), machines("pcr7-b")
    home = homes("a")
    mint(a, home, protection=PCR7)
    extend_pcr7(b)
    assert_copied(views(b, home.copy_to(homes("b").path), c_program, PCR7), "sealed on another machine")


def test_doctor_and_the_environment_report_name_the_pcr7_binding(machines, homes):
    a = machines("pcr7-doctor")
    home = homes("h")
    script = f"""
        echo "doctor $($D --json --protection {PCR7} doctor 2>/dev/null)"
        echo "python $($PY -c 'import deviceid; deviceid.set_protection("{PCR7}"); e = deviceid.environment(); print(e.protection, e.binding)')"
    """
    for expected in ("00" * 32, None):
        if expected is None:
            extend_pcr7(a)
            expected = pcr7(a)
        result = login(a, home, script)
        assert result.returncode == 0, result.stderr
        lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
        report = json.loads(lines["doctor"])
        protection = report["environment"]["protection"]
        check = [c for c in report["checks"] if c["name"] == "protection"][0]
        assert (protection["class"], protection["binding"], check["ok"]) == (PCR7, "tpm+pcr7", True), protection
        assert f"PCR 7 = {expected}" in protection["detail"], protection
        assert lines["python"] == f"{PCR7} tpm+pcr7"


def test_a_tpm_without_a_sha256_bank_refuses_pcr7_with_words(machines, homes):
    a = machines("pcr7-nobank")
    tools(a, "tpm2_pcrallocate", "sha1:all+sha256:none")
    reboot(a)
    home = homes("h")
    result = login(a, home, JSON_CALL + f"""
        echo "get $(j $D --json --protection {PCR7} get {APP})"
        echo "store $(printf %s {SECRET} | j $D --json --protection {PCR7} secret store {SERVICE} {ACCOUNT})"
        echo "doctor $($D --json --protection {PCR7} doctor 2>/dev/null)"
        echo "plain $($D --protection this-device-only get com.example.plain)"
    """)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    for name in ("get", "store"):
        answer, status = lines[name].rsplit(" ", 1)
        error = json.loads(answer)["error"]
        assert error["name"] == "UNSUPPORTED" and "no SHA-256 bank" in error["message"], error
    protection = json.loads(lines["doctor"])["environment"]["protection"]
    assert protection["binding"] == "refused" and "no SHA-256 bank" in protection["detail"], protection
    assert APP.encode() not in home.store_bytes()
    assert len(lines["plain"]) == 36  # this-device-only without PCR 7 still seals here


def test_the_names_and_the_room_of_a_pcr7_secret(tmp_path):
    """Every surface knows the class by one name; its envelope keeps 32 more bytes (the policy)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DEVICEID_", "DBUS_")) or k.startswith(("DEVICEID_TEST_", "DEVICEID_LIBRARY"))}
    env.update(DEVICEID_BACKEND="file", DEVICEID_STORE_DIR=str(tmp_path / "store"),
               DEVICEID_TPM_TCTI=f"swtpm:path={tmp_path / 'no-tpm.sock'}")
    too_large = subprocess.run([cli_path(), "--json", "--protection", PCR7, "secret", "store", SERVICE, ACCOUNT],
                               env=env, input=b"x" * (65536 - 171), capture_output=True, timeout=60)
    assert too_large.returncode == 21 and b"at most 65364 bytes" in too_large.stderr, too_large
    wrong = subprocess.run([cli_path(), "--protection", "this-device-only+pcr8", "get", APP], env=env,
                           capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "portable, this-device-only, this-device-only+pcr7" in wrong.stderr, wrong.stderr
    env_wrong = subprocess.run([cli_path(), "get", APP], env=dict(env, DEVICEID_PROTECTION="pcr7"),
                               capture_output=True, text=True, timeout=60)
    assert "portable, this-device-only, this-device-only+pcr7" in env_wrong.stderr, env_wrong.stderr
    python = subprocess.run([sys.executable, "-c",
                             f"import deviceid; c = deviceid.Client(protection='{PCR7}'); print(c.protection)"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert python.stdout.strip() == PCR7, python.stderr
