"""Deletes that race: processes deleting one secret at once, as a reset in several processes of one
app may. The loser's Delete finds the item's object gone (gnome-keyring: "No such interface",
UnknownMethod; the error table calls it UNSUPPORTED, which deviceid_secret_delete() never
documents). A secret another process deleted first is deleted: each call answers 0 or NOT_FOUND.
Found when test_documented_statuses ran its two probes side by side against one store."""
import multiprocessing
import time

import deviceid

RACERS = 8
ROUNDS = 10


def _delete_at_once(barrier, service, account):
    deviceid.set_backend("secret-service")
    barrier.wait(timeout=30)
    try:
        deviceid.delete_secret(service, account)
        return "ok"
    except deviceid.DeviceIDError as error:
        return error.name if error.name == "NOT_FOUND" else f"{error.name}: {error}"


def test_processes_deleting_one_secret_at_once_each_answer_deleted_or_not_found(keyring):
    context = multiprocessing.get_context("fork")
    service = f"race.delete.{time.time_ns()}"
    outcomes = []
    with context.Manager() as manager, context.Pool(RACERS) as pool:
        for round_ in range(ROUNDS):
            deviceid.set_backend("secret-service")
            deviceid.store_secret(service, f"acct{round_}", b"to be deleted")
            barrier = manager.Barrier(RACERS)
            outcomes.append(pool.starmap(_delete_at_once, [(barrier, service, f"acct{round_}")] * RACERS))
    deviceid.set_backend("auto")
    for answers in outcomes:
        assert set(answers) <= {"ok", "NOT_FOUND"} and "ok" in answers, outcomes
