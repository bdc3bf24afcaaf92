"""Concurrency hammer: P processes x T threads calling get / reset / secret store-lookup-delete at
once through libdeviceid, in rounds separated by a barrier.

Checked each round:
- every thread asking for the round's fresh app id got the same ID (one mint per app per epoch);
- every thread reads back exactly the secret it last stored under its own account (no lost update);
- a secret all threads overwrite ends as one of the written values;
- the only errors are documented statuses (LOCKED/TIMED_OUT are not expected on a healthy keyring).
Prints a summary line and exits non-zero on any violation or deadlock (a round over --round-timeout).

    python3 hammer.py --processes 64 --threads 8 --rounds 3 --backend auto
"""
import argparse
import multiprocessing as mp
import sys
import threading
import time


def worker(index, args, barrier, results):
    import deviceid

    deviceid.set_backend(args.backend)
    deviceid.set_timeout_ms(args.timeout_ms)
    report = {"ids": {}, "errors": [], "lost": 0, "ops": 0}
    lock = threading.Lock()

    def thread_main(t):
        account = f"p{index}-t{t}"
        for r in range(args.rounds):
            try:
                barrier.wait(timeout=args.round_timeout)
            except threading.BrokenBarrierError:
                with lock:
                    report["errors"].append(("barrier", f"round {r} deadline"))
                return
            try:
                got = deviceid.get(f"{args.prefix}-round-{r}")
                deviceid.reset(f"{args.prefix}-churn")           # concurrent resets of another app
                deviceid.get(f"{args.prefix}-churn")
                value = f"{account}-{r}".encode()
                deviceid.store_secret(args.prefix, account, value)
                back = deviceid.lookup_secret(args.prefix, account)
                deviceid.store_secret(args.prefix, "shared", value)
                if r == args.rounds - 1 and t % 2 == 0:
                    deviceid.delete_secret(args.prefix, account)
                with lock:
                    report["ids"].setdefault(r, set()).add(got)
                    report["lost"] += back != value
                    report["ops"] += 8
            except deviceid.DeviceIDError as error:
                with lock:
                    report["errors"].append((error.name, str(error)))

    threads = [threading.Thread(target=thread_main, args=(t,)) for t in range(args.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    report["ids"] = {r: sorted(v) for r, v in report["ids"].items()}
    results.put(report)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--timeout-ms", type=int, default=20000)
    parser.add_argument("--round-timeout", type=float, default=120)
    parser.add_argument("--prefix", default=f"hammer-{time.time_ns()}")
    args = parser.parse_args()

    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(args.processes * args.threads)
    results = ctx.Queue()
    start = time.monotonic()
    procs = [ctx.Process(target=worker, args=(i, args, barrier, results)) for i in range(args.processes)]
    for p in procs:
        p.start()
    reports = []
    deadline = time.monotonic() + args.round_timeout * (args.rounds + 1)
    while len(reports) < len(procs) and time.monotonic() < deadline:
        try:
            reports.append(results.get(timeout=1))
        except Exception:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead and results.empty():
                break  # a worker died without reporting: no point waiting for it
    for p in procs:
        p.join(timeout=5)
        if p.exitcode is None:
            p.kill()
    elapsed = time.monotonic() - start
    crashed = sorted({p.exitcode for p in procs if p.exitcode not in (0, None)})

    ids = {}
    for report in reports:
        for r, values in report["ids"].items():
            ids.setdefault(r, set()).update(values)
    errors = [e for report in reports for e in report["errors"]]
    lost = sum(report["lost"] for report in reports)
    ops = sum(report["ops"] for report in reports)

    import deviceid
    deviceid.set_backend(args.backend)
    shared = deviceid.lookup_secret(args.prefix, "shared")
    written = {f"p{i}-t{t}-{args.rounds - 1}".encode() for i in range(args.processes) for t in range(args.threads)}

    violations = []
    for r in range(args.rounds):
        if len(ids.get(r, ())) != 1:
            violations.append(f"round {r}: {len(ids.get(r, ()))} different IDs")
    if lost:
        violations.append(f"{lost} lost secret updates")
    if shared not in written:
        violations.append(f"shared secret ended as {shared!r}, which no thread wrote last")
    if errors:
        violations.append(f"{len(errors)} errors, e.g. {errors[:3]}")
    if crashed or len(reports) < len(procs):
        violations.append(f"{len(procs) - len(reports)} workers did not report; exit codes {crashed}")

    print(f"hammer: backend={args.backend} {args.processes}x{args.threads} rounds={args.rounds} "
          f"ops={ops} seconds={elapsed:.1f} ids_per_round={[len(ids.get(r, ())) for r in range(args.rounds)]} "
          f"lost={lost} errors={len(errors)}")
    for v in violations:
        print("VIOLATION:", v)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
