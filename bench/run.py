"""Runs every comparison of bench/run inside a private keyring and writes bench/RESULTS.md.

Each row pairs a DeviceID operation with the anchor users would otherwise use, measured in the
same run, with min / median / max and the ratio of medians (DeviceID / anchor; below 1 is faster).
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

WORK = os.environ["BENCH_WORK"]
ROOT = os.environ["BENCH_ROOT"]
PREFIX = f"{WORK}/prefix"
VENV_PY = f"{WORK}/venv/bin/python"
CLI = f"{PREFIX}/bin/deviceid"
ENV = dict(os.environ, DEVICEID_LIBRARY=f"{PREFIX}/lib/libdeviceid.so.1", PYTHONPATH=f"{PREFIX}/python",
           DEVICEID_STORE_DIR=tempfile.mkdtemp(prefix="deviceid-bench-"))
APP = "bench.app"
rows = []  # (group, what, unit, stats, anchor name, anchor stats, target)


def sh(args, **kw):
    return subprocess.run(args, env=ENV, check=True, capture_output=True, text=True, **kw).stdout


def stats(values):
    values = sorted(values)
    return values[0], statistics.median(values), values[-1]


def row(group, ours, ours_stats, anchor, anchor_stats, unit, target):
    rows.append((group, ours, ours_stats, anchor, anchor_stats, unit, target))


def repeat_process(args, n):
    """Runs a program that prints its own nanoseconds, n times."""
    return [float(sh(args).strip()) for _ in range(n)]


def hyperfine(commands, runs=40):
    out = os.path.join(WORK, "hyperfine.json")
    subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--export-json", out, *commands],
                   env=ENV, check=True, capture_output=True)
    with open(out) as f:
        results = json.load(f)["results"]
    return [stats([t * 1e3 for t in r["times"]]) for r in results]  # ms


def main():
    sh([CLI, "get", APP])  # mint: keyring item + mirror
    sh([CLI, "get", APP])

    print("micro-benchmarks (in-process)...", file=sys.stderr)
    micro = {}
    for line in sh([f"{WORK}/micro", "21"]).splitlines():
        name, lo, med, hi = line.split()
        micro[name] = (float(lo), float(med), float(hi))
    row("cached deviceid_get after the first answer (C)", "deviceid_get", micro["cached_get.deviceid_get"],
        "sd_id128_get_machine (warm)", micro["cached_get.sd_id128_get_machine"], "ns", "≤ 50 ns")
    row("UUID v4, text", "deviceid_uuid_generate", micro["uuid.deviceid_uuid_generate"],
        "libuuid uuid_generate_random + unparse", micro["uuid.libuuid_generate_random+unparse"], "ns", "≤ 600 ns")
    row("MD5(MAC + bundle id), hex (27 bytes)", "deviceid_hash_hex(MD5)", micro["md5.deviceid_hash_hex"],
        "OpenSSL MD5() + hex", micro["md5.openssl_MD5+hex"], "ns", "≤ 1.3× MD5()")
    row("MD5 per call through EVP", "deviceid_hash_hex(MD5)", micro["md5.deviceid_hash_hex"],
        "EVP_Digest(EVP_md5()) + hex", micro["md5.openssl_EVP_Digest(EVP_md5())+hex"], "ns", "—")
    row("app-specific machine ID, warm", "deviceid_machine_app_specific", micro["app_specific.deviceid_machine_app_specific"],
        "sd_id128_get_machine_app_specific + format", micro["app_specific.sd_id128_get_machine_app_specific+format"],
        "ns", "≤ 0.5× systemd")
    row("MD5(MAC + bundle id) with NIC discovery", "deviceid_mac_md5", micro["mac_md5.deviceid_mac_md5(discovery+md5)"],
        "OpenSSL MD5() + hex (no discovery)", micro["md5.openssl_MD5+hex"], "ns", "—")

    print("first keyring lookup in a fresh process...", file=sys.stderr)
    ours, theirs = [], []
    for _ in range(30):
        ours.append(float(sh([f"{WORK}/first_call", "deviceid", APP])) / 1e6)
        theirs.append(float(sh([f"{WORK}/first_call", "libsecret", APP])) / 1e6)
    row("first deviceid_get in a process, keyring (C)", "deviceid_get", stats(ours),
        "secret_password_lookupv_sync, first call", stats(theirs), "ms", "≤ 1.05× libsecret")

    print("whole processes (hyperfine)...", file=sys.stderr)
    cli, tool = hyperfine([f"{CLI} get {APP}", f"secret-tool lookup service deviceid.app username {APP}"])
    row("`deviceid get` whole process", "deviceid get", cli, "secret-tool lookup", tool, "ms", "≤ 1.0× secret-tool")
    py_ours, py_keyring, py_machineid = hyperfine([
        f"{VENV_PY} -c 'import deviceid; deviceid.get(\"{APP}\")'",
        f"{VENV_PY} -c 'import keyring; keyring.get_password(\"deviceid.app\", \"{APP}\")'",
        f"{VENV_PY} -c 'import machineid; machineid.id()'",
    ], runs=20)
    row("Python: import + get, whole process", "import deviceid; get()", py_ours,
        "import keyring; get_password()", py_keyring, "ms", "≤ 0.2× keyring")
    row("Python: import + get, whole process", "import deviceid; get()", py_ours,
        "import machineid; id()", py_machineid, "ms", "≤ 1.0× py-machineid")

    print("Python warm calls...", file=sys.stderr)
    warm = json.loads(sh([VENV_PY, "-c", f"""
import json, timeit, deviceid, keyring
from deviceid import _native
deviceid.get("{APP}"); keyring.get_password("deviceid.app", "{APP}")
def per_call(stmt, number):
    return [t / number * 1e9 for t in timeit.repeat(stmt, number=number, repeat=15, globals=globals())]
print(json.dumps({{
    "get": per_call('deviceid.get("{APP}")', 20000),
    "floor": per_call("_native.version_major()", 20000),
    "keyring": [t / 1e6 for t in per_call('keyring.get_password("deviceid.app", "{APP}")', 20)],
}}))
"""]))
    row("Python warm call", "deviceid.get()", stats([t / 1e3 for t in warm["get"]]),
        "ctypes floor (a no-argument call)", stats([t / 1e3 for t in warm["floor"]]), "µs", "≤ 2 µs")
    row("Python warm call", "deviceid.get()", stats([t / 1e3 for t in warm["get"]]),
        "keyring.get_password() (warm)", stats([t * 1e3 for t in warm["keyring"]]), "µs", "—")

    print("dlopen...", file=sys.stderr)
    ours = [v / 1e6 for v in repeat_process([f"{WORK}/dlopen", f"{PREFIX}/lib/libdeviceid.so.1"], 30)]
    theirs = [v / 1e6 for v in repeat_process([f"{WORK}/dlopen", "libsecret-1.so.0", "libcrypto.so.3"], 30)]
    row("dlopen of the library", "libdeviceid.so.1", stats(ours), "libsecret-1 + libcrypto", stats(theirs),
        "ms", "≤ 1.5× libsecret + libcrypto")

    print("file store as it grows...", file=sys.stderr)
    store = tempfile.mkdtemp(prefix="deviceid-bench-store-")
    growth = []
    for n in (10, 100, 1000, 10000):
        count, lo, med, hi = sh([f"{WORK}/filestore", store, str(n)]).split()
        growth.append((int(count), float(lo) / 1e3, float(med) / 1e3, float(hi) / 1e3))

    print("memory and concurrency...", file=sys.stderr)
    def peak_kb(args):
        out = subprocess.run(["/usr/bin/time", "-f", "%M", *args], env=ENV, capture_output=True, text=True, check=True)
        return int(out.stderr.strip().splitlines()[-1])
    memory = [("deviceid get (CLI)", stats([peak_kb([CLI, "get", APP]) for _ in range(5)])),
              ("C program calling deviceid_get", stats([peak_kb([f"{WORK}/get_once", APP]) for _ in range(5)])),
              ("secret-tool lookup", stats([peak_kb(["secret-tool", "lookup", "service", "deviceid.app", "username", APP])
                                            for _ in range(5)]))]
    concurrency = []
    for n in (1, 2, 4, 8, 16):
        times = []
        for trial in range(5):
            app = f"fresh.{n}.{trial}.{time.time_ns()}"
            start = time.monotonic()
            procs = [subprocess.Popen([CLI, "get", app], env=ENV, stdout=subprocess.PIPE) for _ in range(n)]
            ids = {p.communicate()[0] for p in procs}
            times.append((time.monotonic() - start) * 1e3)
            assert len(ids) == 1, "one ID per first run"
        concurrency.append((n, stats(times)))

    write(growth, memory, concurrency)


def fmt(value):
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def write(growth, memory, concurrency):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    lines = [
        "# Benchmark results",
        "",
        f"Produced by `bench/run` on {time.strftime('%Y-%m-%d')}: {os.cpu_count()} cores ({cpu}), "
        f"Linux {platform.release()}, release builds, a private gnome-keyring. A noisy VM: compare the",
        "ratios, not the absolute numbers. min / median / max; ratio = DeviceID median ÷ anchor median.",
        "",
        "| what | DeviceID | min / median / max | anchor | min / median / max | ratio | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for group, ours, o, anchor, a, unit, target in rows:
        lines.append(f"| {group} | {ours} | {fmt(o[0])} / **{fmt(o[1])}** / {fmt(o[2])} {unit} | {anchor} | "
                     f"{fmt(a[0])} / **{fmt(a[1])}** / {fmt(a[2])} {unit} | {o[1] / a[1]:.2f}× | {target} |")
    lines += ["", "File store lookups (uncached, fresh in-memory state each time) as the store grows:", "",
              "| IDs in the store | min / median / max µs |", "|---|---|"]
    lines += [f"| {n} | {fmt(lo)} / **{fmt(med)}** / {fmt(hi)} |" for n, lo, med, hi in growth]
    lines += ["", "Peak resident memory (KiB, `/usr/bin/time -f %M`):", "", "| program | min / median / max |", "|---|---|"]
    lines += [f"| {name} | {s[0]} / **{s[1]}** / {s[2]} |" for name, s in memory]
    lines += ["", "First run with N processes racing for a new app's ID (wall ms until all have it; one ID each time):",
              "", "| processes | min / median / max ms |", "|---|---|"]
    lines += [f"| {n} | {fmt(s[0])} / **{fmt(s[1])}** / {fmt(s[2])} |" for n, s in concurrency]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
