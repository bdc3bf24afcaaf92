"""What the salted sessions cost (issue 53): two installed prefixes, the one before and the one
after, run alternately on one swtpm, so that the machine's load falls on both alike: min and
median wall time of hardware-id, attest certify and assert, whole process, then hardware_id()
again and attest() in a process (the Python binding). Prints a Markdown table.

    scripts/with-swtpm /usr/bin/python3 bench/tpm_sessions.py BEFORE_PREFIX AFTER_PREFIX [RUNS]

With a persistent SRK (docs/HARDWARE-ID.md, "Salted sessions"), the swtpm is given one first:

    scripts/with-swtpm bash -c 'cd "$SWTPM_STATE" && tpm2_createprimary -Q -C o -G ecc256:aes128cfb \
        -a "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|restricted|decrypt" -c srk.ctx \
        && tpm2_evictcontrol -Q -C o -c srk.ctx 0x81000001 && tpm2_flushcontext -t && cd - >/dev/null \
        && /usr/bin/python3 bench/tpm_sessions.py BEFORE_PREFIX AFTER_PREFIX 40'"""
import base64
import os
import statistics
import subprocess
import sys
import time

APP = "com.example.bench"
IN_PROCESS = """
import sys, time, deviceid
def once(f):
    t = time.perf_counter(); f(); return (time.perf_counter() - t) * 1e3
deviceid.hardware_id("{app}")
call = {{"hardware_id": lambda: deviceid.hardware_id("{app}"), "attest": lambda: deviceid.attest("{app}", nonce=bytes(32))}}
print(once(call[sys.argv[1]]))
"""


def whole(cli, args):
    started = time.perf_counter()
    subprocess.run([cli, *args], check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1e3


def in_process(prefix, function):
    env = dict(os.environ, DEVICEID_LIBRARY=f"{prefix}/lib/libdeviceid.so.2", PYTHONPATH=f"{prefix}/python")
    out = subprocess.run([sys.executable, "-c", IN_PROCESS.format(app=APP), function], check=True, env=env,
                         capture_output=True, text=True).stdout
    return float(out)


def main():
    before, after, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 60
    nonce = base64.b64encode(bytes(32)).decode()
    digest = base64.urlsafe_b64encode(bytes(32)).decode().rstrip("=")
    rows = {
        "`deviceid hardware-id`": lambda p: whole(f"{p}/bin/deviceid", ["hardware-id", APP]),
        "`deviceid attest certify`": lambda p: whole(f"{p}/bin/deviceid", ["attest", "certify", APP, "--nonce", nonce]),
        "`deviceid assert`": lambda p: whole(f"{p}/bin/deviceid", ["assert", APP, "--client-data-hash", digest]),
        "`deviceid.hardware_id()`, again in a process": lambda p: in_process(p, "hardware_id"),
        "`deviceid.attest()` in a process": lambda p: in_process(p, "attest"),
    }
    print("| | before (min / median) | after (min / median) |\n|---|---|---|")
    for name, measure in rows.items():
        for prefix in (before, after):
            measure(prefix)  # warm: the key made once, the files in the page cache
        times = {before: [], after: []}
        for _ in range(runs):
            for prefix in (before, after):
                times[prefix].append(measure(prefix))
        cells = [f"{min(t):.1f} / {statistics.median(t):.1f} ms" for t in times.values()]
        print(f"| {name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
