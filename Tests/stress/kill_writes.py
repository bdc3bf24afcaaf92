"""SIGKILL at random points while the file store is being written, N times.

A child process imports deviceid, says "ready", then loops: get(app) (minting on the first pass)
and store_secret(svc, acct, A|B), printing each handed-out ID. The parent waits for "ready" (so a
slow machine's interpreter start-up is never mistaken for a write), kills the child after a random
0-8 ms, then checks:
- the secret reads back as a complete A or B value (never torn, never corrupt);
- the app's ID, once any child printed it, never changes;
- no error other than NOT_FOUND (secret never written yet);
- the kills did land mid-write: some child handed out an ID and the store holds it.
Prints the figures; exits non-zero on any violation.

    python3 kill_writes.py --iterations 1000 --store DIR
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time

CHILD = r"""
import sys, deviceid
deviceid.set_backend("file")
print("ready", flush=True)
a, b = b"A" * 3000, b"B" * 3000
i = 0
while True:
    print(deviceid.get("kill.app"), flush=True)
    deviceid.store_secret("kill", "acct", a if i % 2 else b)
    i += 1
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--store", required=True)
    args = parser.parse_args()
    env = dict(os.environ, DEVICEID_STORE_DIR=args.store)
    import deviceid

    deviceid.set_backend("file")
    deviceid.set_store_dir(args.store)
    handed_out = None
    violations = []
    killed_mid_run = 0
    start = time.monotonic()
    for i in range(args.iterations):
        child = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, text=True)
        ready = child.stdout.readline()
        if ready != "ready\n":
            child.kill()
            child.communicate()
            violations.append(f"iteration {i}: the child died before it was ready ({ready!r}, code {child.returncode})")
            continue
        time.sleep(random.uniform(0, 0.008))  # a random point among the writes
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        killed_mid_run += child.returncode == -signal.SIGKILL
        for line in out.split():
            if handed_out is None:
                handed_out = line
            elif line != handed_out:
                violations.append(f"iteration {i}: ID changed from {handed_out} to {line}")
        try:
            secret = deviceid.lookup_secret("kill", "acct")
            if secret not in (None, b"A" * 3000, b"B" * 3000):
                violations.append(f"iteration {i}: torn secret of {len(secret)} bytes")
            if handed_out is not None:
                deviceid.set_store_dir(args.store)  # forget the in-memory answer: read the file again
                now = deviceid.get("kill.app")
                if now != handed_out:
                    violations.append(f"iteration {i}: stored ID {now} is not the handed-out {handed_out}")
        except deviceid.DeviceIDError as error:
            violations.append(f"iteration {i}: {error.name}: {error}")
    if handed_out is None:
        violations.append("no child handed out an ID before its kill: nothing was tested")
    leftovers = [n for n in os.listdir(args.store) if n.startswith(".tmp-")] if os.path.isdir(args.store) else []
    print(f"kill_writes: iterations={args.iterations} killed={killed_mid_run} seconds={time.monotonic() - start:.1f} "
          f"id={'stable' if not violations else 'VIOLATED'} violations={len(violations)} "
          f"temporary_files_left={len(leftovers)}")
    for v in violations[:10]:
        print("VIOLATION:", v)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
