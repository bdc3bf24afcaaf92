"""deviceid.aio: the package's calls as coroutines that never block the event loop. Measured with a
ticker on the loop while a call waits on a Secret Service that answers nothing (the fault-injecting
one in its "slow" mode): the loop keeps running, and the call ends by its deadline with the
blocking call's own exception. The same call made blocking stops the ticker: the test can fail."""
import json
import textwrap

import pytest

from conftest import UUID_V4
from test_fake_service import with_fake

# A ticker every 10 ms beside one call, on a 1 s deadline against a Secret Service that never
# answers in time: prints the ticks the loop made while the call waited, and how it ended.
PROBE = textwrap.dedent("""
    import asyncio, json, sys, time
    import deviceid, deviceid.aio
    deviceid.set_backend("secret-service")
    deviceid.set_timeout(1.0)

    async def main(blocking):
        ticks = 0
        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1
        task = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        start = time.monotonic()
        try:
            if blocking:
                deviceid.get("aio.app")
            else:
                await deviceid.aio.get("aio.app")
            outcome = "answered"
        except deviceid.DeviceIDError as error:
            outcome = type(error).__name__
        elapsed = time.monotonic() - start
        task.cancel()
        print(json.dumps({"ticks": ticks, "outcome": outcome, "elapsed": elapsed}))

    asyncio.run(main(sys.argv[1] == "blocking"))
""")


@pytest.mark.parametrize("form", ["aio", "blocking"])
def test_a_call_waiting_on_the_keyring_leaves_the_loop_running(tmp_path, form):
    (tmp_path / "probe.py").write_text(PROBE)
    out, _ = with_fake("slow", f"python3 {tmp_path}/probe.py {form}", tmp_path)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["outcome"] == "TimedOutError", result
    assert 0.9 < result["elapsed"] < 2.5, result
    if form == "aio":
        # A tick every 10 ms for about a second: at least half of them, on a loaded machine.
        assert result["ticks"] >= 50, result
    else:
        # The control: the blocking call held the loop, which ticked at most once around it.
        assert result["ticks"] <= 1, result


def test_the_coroutines_answer_as_the_blocking_calls(store):
    import asyncio
    import deviceid
    import deviceid.aio

    async def main():
        first = await deviceid.aio.get("aio.same")
        info = await deviceid.aio.get_info("aio.same")
        vendor = await deviceid.aio.vendor_id("com.aio")
        environment = await deviceid.aio.environment(), await deviceid.aio.machine_id_weak()
        await deviceid.aio.store_secret("aio.svc", "acct", bytearray(b"\x00v"))
        secret = await deviceid.aio.lookup_secret("aio.svc", "acct")
        deleted = await deviceid.aio.delete_secret("aio.svc", "acct")
        await deviceid.aio.reset("aio.same")
        again = await deviceid.aio.get("aio.same")
        return first, info, vendor, environment, secret, deleted, again

    deviceid.set_backend("file")
    first, info, vendor, environment, secret, deleted, again = asyncio.run(main())
    assert UUID_V4.match(first) and info.id == first and info.source in ("file", "created")
    assert deviceid.get("aio.same") == again != first
    assert vendor == deviceid.vendor_id("com.aio")
    assert environment == (deviceid.environment(), deviceid.machine_id_weak())
    assert (secret, deleted) == (b"\x00v", True)


def test_errors_come_out_of_the_await_as_the_blocking_calls_raise_them(store):
    import asyncio
    import deviceid
    import deviceid.aio

    with pytest.raises(deviceid.InvalidArgumentError):
        asyncio.run(deviceid.aio.get(""))
    with pytest.raises(TypeError):
        asyncio.run(deviceid.aio.get(42))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [5, "text", None, [1, 2]])
def test_bytes_arguments_are_bytes_in_both_forms(store, value):
    # bytes(5) is five zero bytes: a secret or nonce given as a number must not become one.
    import asyncio
    import deviceid
    import deviceid.aio

    for call in (lambda: deviceid.store_secret("aio.types", "a", value),
                 lambda: asyncio.run(deviceid.aio.store_secret("aio.types", "a", value)),
                 lambda: deviceid.attest("aio.types", value),
                 lambda: asyncio.run(deviceid.aio.attest("aio.types", value))):
        with pytest.raises(TypeError):
            call()
    assert deviceid.lookup_secret("aio.types", "a") is None


def test_an_async_client_keeps_its_own_configuration(tmp_path, store):
    import asyncio
    import deviceid
    import deviceid.aio

    async def main():
        async with deviceid.aio.AsyncClient(backend="file", store_dir=str(tmp_path / "own"), timeout=2.0) as ids:
            own = await ids.get("aio.client")
            await ids.set_advertising_limited(True)
            limited = await ids.advertising_limited(), await ids.advertising_id()
            await ids.set_openudid_opt_out("aio.client", True)
            opted_out = await ids.openudid_opted_out("aio.client")
            environment = await ids.environment()
            return own, limited, opted_out, environment, repr(ids), ids.client.timeout

    deviceid.set_backend("file")
    own, limited, opted_out, environment, text, timeout = asyncio.run(main())
    assert UUID_V4.match(own) and own != deviceid.get("aio.client")
    assert limited == (True, deviceid.NULL_UUID) and not deviceid.advertising_limited()
    assert opted_out and not deviceid.openudid_opted_out("aio.client")
    assert environment.store_path == str(tmp_path / "own")
    assert text.startswith("<deviceid.aio.AsyncClient backend='file'") and timeout == 2.0


def test_a_forked_child_makes_its_own_threads(store, tmp_path):
    """The parent's executor threads are not in a child: its first coroutine makes new ones
    instead of waiting forever on a pool that has no threads."""
    import asyncio
    import os
    import deviceid
    import deviceid.aio

    deviceid.set_backend("file")
    parent = asyncio.run(deviceid.aio.get("aio.fork"))
    pid = os.fork()
    if pid == 0:
        try:
            signal_ok = asyncio.run(asyncio.wait_for(deviceid.aio.get("aio.fork"), 10)) == parent
            os._exit(0 if signal_ok else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
