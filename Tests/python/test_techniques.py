"""The identifier techniques through the Python package, the CLI and real network interfaces."""
import hashlib
import os
import re
import subprocess
import uuid

import pytest

import deviceid
from conftest import UUID_V4, run



def test_uuid4_formats_and_uniqueness():
    ids = {deviceid.uuid4() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(UUID_V4.match(i) for i in ids)
    upper = deviceid.uuid4(uppercase=True)
    assert upper == upper.upper() and uuid.UUID(upper).version == 4
    assert re.fullmatch(r"[0-9a-f]{32}", deviceid.uuid4(compact=True))


@pytest.mark.parametrize("text", ["1B4E28BA-2FA1-4D2B-883F-0016D3CCA427", "1b4e28ba2fa14d2b883f0016d3cca427"])
def test_parse_uuid(text):
    assert deviceid.parse_uuid(text) == uuid.UUID(text).bytes


@pytest.mark.parametrize("bad", ["", "{1b4e28ba-2fa1-4d2b-883f-0016d3cca427}", "urn:uuid:1b4e28ba-2fa1-4d2b-883f-0016d3cca427",
                                 "1b4e28ba-2fa1-4d2b-883f-0016d3cca42", "1b4e28ba-2fa1-4d2b-883f-0016d3cca427 ",
                                 "1b4e28ba-2fa14d2b-883f-0016d3cca427-", "g" * 32, "\udc80" * 36])
def test_parse_uuid_refuses_malformed_text(bad):
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.parse_uuid(bad)


def test_digests_match_hashlib():
    for data in [b"", b"abc", bytes(range(256)) * 10]:
        assert deviceid.hash_hex(data, "md5") == hashlib.md5(data).hexdigest()
        assert deviceid.hash_hex(data, "sha256") == hashlib.sha256(data).hexdigest()
    token = bytes.fromhex("deadbeef" * 8)
    assert deviceid.token_hash(token, "com.example.app", "md5") == hashlib.md5(token + b"com.example.app").hexdigest()
    assert deviceid.token_hash(token, "com.example.app") == hashlib.sha256(token + b"com.example.app").hexdigest()
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.hash_hex(b"x", "sha1")


@pytest.mark.parametrize("app", ["4a8b6d2e1f3c4e5d9a7b6c5d4e3f2a1b", "8f3c2a1b-9d4e-4f6a-b7c8-d9e0f1a2b3c4",
                                 "ffffffffffffffffffffffffffffffff", "00000000000000000000000000000002"])
def test_app_specific_machine_id_matches_systemd_id128(cli, app):
    expected = subprocess.run(["systemd-id128", "machine-id", f"--app-specific={app}"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert deviceid.machine_app_specific(app, compact=True) == expected
    assert deviceid.machine_app_specific(app) == str(uuid.UUID(expected))
    assert run([cli, "machine-id", "app-specific", app, "--compact"]).stdout.strip() == expected


def test_reverse_dns_app_ids_map_by_sha256():
    digest = hashlib.sha256(b"deviceid.app-id:com.example.app").digest()[:16]
    expected = subprocess.run(["systemd-id128", "machine-id", f"--app-specific={digest.hex()}"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert deviceid.machine_app_specific("com.example.app", compact=True) == expected
    with pytest.raises(deviceid.InvalidArgumentError):
        deviceid.machine_app_specific("0" * 32)


def test_raw_machine_id_is_the_file(tmp_path, cli):
    assert deviceid.machine_id_raw() == open("/etc/machine-id").read().strip()
    for content, code in [("", 26), ("0" * 32 + "\n", 26), ("uninitialized\n", 26), ("xyz\n", 26)]:
        path = tmp_path / "machine-id"
        path.write_text(content)
        result = run([cli, "machine-id", "raw"], env={"DEVICEID_MACHINE_ID_PATH": str(path)})
        assert result.returncode == code, (content, result.stderr)
        assert "machine ID" in result.stderr
    missing = run([cli, "machine-id", "raw"], env={"DEVICEID_MACHINE_ID_PATH": str(tmp_path / "none")})
    assert missing.returncode == 1


def test_scoped_ids_agree_across_languages(cli, store, keyring):
    vendor = deviceid.vendor_id("com.acme")
    assert run([cli, "vendor", "get", "com.acme"]).stdout.strip() == vendor
    assert vendor != deviceid.vendor_id("org.other")
    advertising = deviceid.advertising_id()
    assert run([cli, "advertising"]).stdout.strip() == advertising
    shared = deviceid.openudid("com.a")
    assert run([cli, "openudid", "get", "com.b"]).stdout.strip() == shared

    assert run([cli, "openudid", "opt-out", "com.b", "on"]).returncode == 0
    with pytest.raises(deviceid.OptedOutError):
        deviceid.openudid("com.b")
    assert run([cli, "openudid", "get", "com.b"]).returncode == 24
    assert deviceid.openudid("com.a") == shared

    deviceid.set_advertising_limited(True)
    assert run([cli, "advertising"]).stdout.strip() == deviceid.NULL_UUID
    assert deviceid.identifier("advertising").limited
    assert run([cli, "advertising", "limit", "off"]).returncode == 0
    assert deviceid.advertising_id() == advertising
    deviceid.reset_advertising_id()
    assert deviceid.advertising_id() not in (advertising, deviceid.NULL_UUID)


# ---- MAC discovery against real interfaces in a network namespace of the test's own ----------

UNIVERSAL, UNIVERSAL2, LOCAL = "00:16:3e:12:34:56", "00:16:3e:00:00:02", "06:16:3e:aa:bb:cc"


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def netns():
    names = []

    def make(links):
        name = f"deviceid-{os.getpid()}-{len(names)}"
        ip("netns", "add", name)
        names.append(name)
        for link, address, kind in links:
            if kind == "veth":
                ip("-n", name, "link", "add", link, "address", address, "type", "veth",
                   "peer", "name", link + "p", "address", "0a:00:00:00:00:01")
            else:
                ip("-n", name, "link", "add", link, "address", address, "type", kind)
        return name

    yield make
    for name in names:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def mirror_sysfs(ns, root, hardware):
    """Copies the namespace's /sys/class/net into `root`, marking `hardware` as device-backed
    (real ifb/veth links have no device of their own; the choice among NICs is what is tested)."""
    script = f"""
        for d in /sys/class/net/*; do n=$(basename $d); mkdir -p {root}/class/net/$n
            for a in type address addr_assign_type ifindex; do cat $d/$a > {root}/class/net/$n/$a; done
        done
        for n in {' '.join(hardware)}; do mkdir {root}/class/net/$n/device; done
    """
    subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", script], check=True)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_mac_choice_in_a_network_namespace(cli, netns, tmp_path, order):
    links = [("a-local", LOCAL, "ifb"), ("b-uni", UNIVERSAL, "ifb"), ("c-uni", UNIVERSAL2, "veth")]
    ordered = [links[(i + order) % 3] for i in range(3)]
    ns = netns(ordered)
    root = tmp_path / f"sysfs{order}"
    mirror_sysfs(ns, root, ["a-local", "b-uni", "c-uni", "c-unip"])
    env = {"DEVICEID_SYSFS_ROOT": str(root)}
    import json

    chosen = json.loads(run(["ip", "netns", "exec", ns, cli, "--json", "mac"], env=env).stdout)
    assert chosen["interface"] == "b-uni" and chosen["mac"] == UNIVERSAL.upper() and not chosen["weak"]

    md5 = json.loads(run(["ip", "netns", "exec", ns, cli, "--json", "mac-md5", "--bundle", "com.example.app"], env=env).stdout)
    compact = UNIVERSAL.replace(":", "").upper()
    assert md5["md5"] == hashlib.md5((compact + "com.example.app").encode()).hexdigest()
    plain = run(["ip", "netns", "exec", ns, cli, "mac-md5"], env=env).stdout.strip()
    assert plain == hashlib.md5(compact.encode()).hexdigest()

    weak = json.loads(run(["ip", "netns", "exec", ns, cli, "--json", "mac", "--interface", "a-local"]).stdout)
    assert weak == {"mac": LOCAL.upper(), "interface": "a-local", "permanent": False, "weak": True}


def test_only_weak_and_virtual_links_give_not_found_or_weak(cli, netns, tmp_path):
    ns = netns([("v0", UNIVERSAL, "veth"), ("l0", LOCAL, "ifb")])
    # Nothing device-backed: no candidate at all, not a virtual link's address.
    assert run(["ip", "netns", "exec", ns, cli, "mac"]).returncode == 1
    root = tmp_path / "sysfs"
    mirror_sysfs(ns, root, ["l0"])
    result = run(["ip", "netns", "exec", ns, cli, "--json", "mac"], env={"DEVICEID_SYSFS_ROOT": str(root)})
    assert '"weak":true' in result.stdout and '"interface":"l0"' in result.stdout


def test_md5_refused_by_openssl_is_unsupported_not_a_crash(cli, netns, tmp_path):
    # FIPS-style configuration: only algorithms with the property fips=yes may be fetched, which
    # the default provider has none of — MD5 (and SHA-256) are refused as they would be in FIPS mode.
    config = tmp_path / "openssl.cnf"
    config.write_text("openssl_conf = init\n[init]\nalg_section = algorithms\n"
                      "[algorithms]\ndefault_properties = fips=yes\n")
    result = run([cli, "hash", "md5"], input="abc", env={"OPENSSL_CONF": str(config)})
    assert result.returncode == 22, result.stderr
    assert "OpenSSL refuses MD5" in result.stderr
    # A real interface with a usable address, so that the MAC is found and MD5 is what is refused.
    ns = netns([("u0", UNIVERSAL, "ifb")])
    result = run(["ip", "netns", "exec", ns, cli, "mac-md5", "--interface", "u0"], env={"OPENSSL_CONF": str(config)})
    assert result.returncode == 22 and "OpenSSL refuses MD5" in result.stderr, result.stderr
    assert run(["ip", "netns", "exec", ns, cli, "mac-md5", "--interface", "u0"]).returncode == 0, "the control"


def test_product_uuid_raw_from_a_sysfs_tree(cli, tmp_path):
    dmi = tmp_path / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    (dmi / "product_uuid").write_text("4C4C4544-0042-3510-8052-B4C04F4E4B32\n")
    env = {"DEVICEID_SYSFS_ROOT": str(tmp_path)}
    assert run([cli, "product-uuid", "raw"], env=env).stdout.strip() == "4c4c4544-0042-3510-8052-b4c04f4e4b32"
    assert run([cli, "product-uuid", "raw", "--compact", "--uppercase"], env=env).stdout.strip() \
        == "4C4C4544004235108052B4C04F4E4B32"
    (dmi / "product_uuid").chmod(0o000)
    denied = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", cli, "product-uuid", "raw"],
                 env=env)
    assert denied.returncode == 19 and "Permission denied" in denied.stderr  # usually root-only
    (dmi / "product_uuid").unlink()
    assert run([cli, "product-uuid", "raw"], env=env).returncode == 1
