"""docs/STATE.md "In a sandbox", randomized: hypothesis drives `deviceid get` inside one Flatpak-style
sandbox (scripts/with-flatpak-sandbox) whose Secret portal answers, each time, in one of the shapes
the portal and its back end can take (Tests/fakes/fake-secret-portal, or no portal at all), and
whose app data may be removed between calls (`flatpak uninstall --delete-data`). A reference model
of the sandbox's steps says what each answer may be:

- the portal answers (Response 0, 64 bytes): the ID derived from its secret, D_s(k), source
  "portal"; the mirror is then anchored to s and a provisional ID is gone for good. The fake has
  two secrets (the host's keyring item replaced, and back): an answer whose secret is not the one
  the mirror was anchored to is flagged anchor_changed, and only that one;
- no portal: the anchored mirror's ID ("mirrored"); else the provisional ID kept before; else a
  new provisional one (flags provisional and app_data_only);
- a portal that fails (Response 1 or 2 with or without bytes, 128 bytes, a reply of the wrong type,
  a pipe left open, a back end that stops half-way, another connection's forged Response 0): the
  anchored mirror's ID; else the provisional ID; else an error and nothing minted.

So, whatever the sequence: no answer that is not provisional is ever other than D_s(k) for a
secret s the portal gave, a change of s is flagged where it is seen, and nothing is minted while a
portal that may hold the secret fails. The fake's secrets are fixed, so each D_s(k) is computed
here. Each step starts a sandbox (≈ 0.2 s); DEVICEID_SANDBOX_MODEL_EXAMPLES and
DEVICEID_SANDBOX_MODEL_STEPS bound the run (6 sequences of 25 steps by default)."""
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import tempfile

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

ROOT = os.environ.get("DEVICEID_TEST_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLI = os.environ["DEVICEID_TEST_CLI"]
FLATPAK = os.path.join(ROOT, "scripts", "with-flatpak-sandbox")
FAKE = os.path.join(ROOT, "Tests", "fakes", "fake-secret-portal")
APP = "org.example.Modelled"
KEYS = ["com.example.one", "com.example.two"]
# What the fake portal writes, per answering shape.
SECRETS = {"healthy": bytes(range(64)), "late-response": bytes(range(64)), "other-secret": bytes(range(64, 128))}
ANSWERS = list(SECRETS)
FAILURES = ["failed-bytes", "cancelled", "oversize", "short", "wrong-reply", "failed-open", "partial", "forged-response"]
SHAPES = ANSWERS + FAILURES + ["absent"]


def derived(key, secret):
    """docs/ENVIRONMENTS.md "Sandboxes and containers": the portal-derived stable ID."""
    inner = hmac.new(secret, b"deviceid.portal.stable-id.v1", hashlib.sha256).digest()
    raw = bytearray(hmac.new(inner, key.encode(), hashlib.sha256).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def get_in_sandbox(home, key, shape):
    env = dict(os.environ, FP_HOME=home, FP_BIND=f"{os.path.dirname(os.path.dirname(CLI))}:"
               f"{os.path.dirname(os.path.dirname(CLI))}", FP_SECRETS="0")
    for name in ("DEVICEID_STORE_DIR", "DEVICEID_BACKEND", "FP_PORTAL_COMMAND"):
        env.pop(name, None)
    if shape == "absent":
        env["FP_PORTAL"] = "0"
    else:
        env["FP_PORTAL"] = "1"
        env["FP_PORTAL_COMMAND"] = f"{FAKE} {shape}"
    result = subprocess.run([FLATPAK, APP, CLI, "--json", "--timeout", "600", "get", key], env=env,
                            capture_output=True, text=True, timeout=60)
    answer = json.loads(result.stdout) if result.returncode == 0 else None
    return result.returncode, answer, result.stderr


STEP = st.one_of(st.tuples(st.just("get"), st.sampled_from(KEYS), st.sampled_from(SHAPES)),
                 st.just(("remove app data",)))


class Model:
    """What the sandbox's steps allow, per app key: the secret the app data's anchored mirror was
    derived from (None: no mirror), and the provisional ID it holds, if any."""

    def __init__(self):
        self.anchored = {key: None for key in KEYS}
        self.provisional = {key: None for key in KEYS}

    def check_get(self, key, shape, rc, answer, where):
        if answer is not None:
            finals = {derived(key, secret) for secret in SECRETS.values()}
            assert answer["provisional"] or answer["id"] in finals, f"a final ID no secret gives: {where}"
        if shape in ANSWERS:
            secret = SECRETS[shape]
            changed = self.anchored[key] not in (None, secret)
            assert rc == 0, where
            assert (answer["id"], answer["source"], answer["mirrored"], answer["anchor_changed"]) == \
                (derived(key, secret), "portal", False, changed), where
            self.anchored[key], self.provisional[key] = secret, None
        elif self.anchored[key] is not None:
            mirrored = derived(key, self.anchored[key])
            assert rc == 0 and (answer["id"], answer["mirrored"], answer["anchor_changed"]) == (mirrored, True, False), where
        elif self.provisional[key] is not None:
            assert rc == 0 and (answer["id"], answer["provisional"]) == (self.provisional[key], True), where
        elif shape == "absent":
            assert rc == 0 and answer["provisional"] and answer["app_data_only"], where
            self.provisional[key] = answer["id"]
        else:
            assert rc != 0, f"nothing may be minted while the portal fails: {where}"

    def remove_app_data(self):
        self.anchored = {key: None for key in KEYS}
        self.provisional = {key: None for key in KEYS}


@settings(max_examples=int(os.environ.get("DEVICEID_SANDBOX_MODEL_EXAMPLES", "6")), deadline=None, database=None,
          derandomize=os.environ.get("DEVICEID_MODEL_RANDOM") != "1", suppress_health_check=list(HealthCheck))
@given(st.lists(STEP, min_size=int(os.environ.get("DEVICEID_SANDBOX_MODEL_STEPS", "25")),
                max_size=int(os.environ.get("DEVICEID_SANDBOX_MODEL_STEPS", "25"))))
def test_sandbox_model(steps):
    home = tempfile.mkdtemp(prefix="deviceid-model-sandbox-")
    model, done = Model(), []
    try:
        for step in steps:
            if step[0] == "get":
                _, key, shape = step
                rc, answer, err = get_in_sandbox(home, key, shape)
                model.check_get(key, shape, rc, answer, f"{shape} for {key} after {done}: exit {rc} {answer} {err[-600:]}")
                done.append((key, shape, rc))
            else:
                shutil.rmtree(os.path.join(home, ".var", "app", APP), ignore_errors=True)
                model.remove_app_data()
                done.append(step)
    finally:
        shutil.rmtree(home, ignore_errors=True)
