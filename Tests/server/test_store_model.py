"""A randomized stateful test of every Store against the reference model of
docs/SERVER-STATE.md: random sequences of the operations, with a clock that moves, and after each
step the store's answer must be the model's."""
import contextlib
import copy
import dataclasses
import datetime
import itertools
import os

import pytest
from hypothesis import HealthCheck, Phase, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from deviceid_verifier import Ban, DeviceBits, IssueLimit, Tenant, CertificateRecord, CredentialRecord, Limit, Limited, MemoryStore, NonceState, PendingChallenge, open_store
from deviceid_verifier._store import Activity, PublishedCRL
from deviceid_verifier._store._base import CheckedAssertion

T0 = datetime.datetime(2026, 12, 2, 12, 0, 0)
PSEUDONYMS = (b"p" * 32, b"q" * 32, b"r" * 32)
APPS = ("com.example.a", "com.example.b")
CREDENTIALS = (b"c" * 32, b"d" * 32)
PURPOSES = ("attestation", "webauthn")
#: A nonce's app id: none (any app may spend it) or one of APPS.
NONCE_APPS = (None, *APPS)
RECEIPTS = (b"r" * 32, b"s" * 32)
#: Few values, so that equal and lower counters come up often; 2**32 - 1 is the largest signCount.
COUNTERS = st.sampled_from([0, 1, 2, 3, 2**32 - 1])


class Rollback(Exception):
    """Raised inside atomic(): the block's changes must all be undone."""


class Model:
    """docs/SERVER-STATE.md, "Operations", as plainly as it can be written."""

    def __init__(self):
        self.nonces = {}        # nonce → [expires, used, purpose, app id or None]
        self.challenges = {}    # id → PendingChallenge
        self.receipts = {}      # key → (answer, expires)
        self.certificates = {}  # serial → CertificateRecord
        self.limit = Limit(5, datetime.timedelta(days=1))
        self.credentials = {}   # credential id → CredentialRecord
        self.revocation_generation = 0
        self.published_crl = None
        self.devices = {}       # pseudonym → device name (the least pseudonym of the group)
        self.bans = {}          # (pseudonym, app id) → Ban
        self.tenants = {}       # name → Tenant
        self.issues = {}        # tenant → (window start, issued)
        self.bits = {}          # (tenant, device key) → DeviceBits
        self.activity = {}      # (tenant, device key) → Activity (hour, count in it, count the hour before)

    def write_bits(self, tenant, key, bits, now):
        before = self.bits.get((tenant, key), DeviceBits((False,) * 3, (None,) * 3, now))
        months = tuple(now.strftime("%Y-%m") if b != a else m for b, a, m in zip(bits, before.bits, before.months))
        record = DeviceBits(bits, months, now)
        if any(bits):
            self.bits[tenant, key] = record
        else:
            self.bits.pop((tenant, key), None)
        return record

    def count_assertion(self, tenant, key, now):
        hour = int((now - datetime.datetime(1970, 1, 1)).total_seconds()) // 3600
        before = self.activity.get((tenant, key))
        if before is None or before.hour < hour - 1:
            self.activity[tenant, key] = Activity(hour, 1, 0)
        elif before.hour == hour - 1:
            self.activity[tenant, key] = Activity(hour, 1, before.count)
        else:  # this hour, or a later one a clock ahead wrote
            self.activity[tenant, key] = Activity(before.hour, before.count + 1, before.previous)

    def device_bits(self, tenant, keys):
        found = [(self.bits[tenant, k].updated, k) for k in keys if (tenant, k) in self.bits]
        return self.bits[tenant, max(found)[1]] if found else None

    def add_tenant(self, tenant):
        if tenant.name in self.tenants:
            return f"a tenant named {tenant.name!r} exists"
        for other in self.tenants.values():
            shared = sorted(set(other.app_ids) & set(tenant.app_ids))
            if shared:
                return f"the app id {shared[0]!r} is the tenant {other.name!r}'s"
        self.tenants[tenant.name] = tenant
        return None

    def members(self, pseudonym):
        device = self.devices.get(pseudonym, pseudonym)
        return {p for p, d in self.devices.items() if d == device} | {pseudonym}

    def link(self, pseudonyms):
        group = set(pseudonyms)
        for p in pseudonyms:
            group |= self.members(p)
        name = min(self.devices.get(p, p) for p in pseudonyms)
        for p in group:
            self.devices[p] = name
        return name

    def banned(self, pseudonym, app_id):
        bans = [self.bans[p, app_id] for p in self.members(pseudonym) if (p, app_id) in self.bans]
        return min(bans, key=lambda b: (b.since, b.serial)) if bans else None

    def use_nonce(self, nonce, now, purpose, app_id):
        if nonce not in self.nonces:
            return NonceState.UNKNOWN
        expires, used, issued_for, bound_to = self.nonces[nonce]
        if issued_for != purpose or bound_to not in (None, app_id):
            return NonceState.UNKNOWN
        self.nonces[nonce][1] = True
        return NonceState.USED if used else NonceState.EXPIRED if expires < now else NonceState.FRESH

    def add_challenge(self, challenge_id, pending, now, most):
        held = sorted(p.expires for p in self.challenges.values()
                      if p.ek_pseudonym == pending.ek_pseudonym and p.expires >= now)
        if len(held) >= most:
            return Limited(held[len(held) - most])
        self.challenges[challenge_id] = pending
        return None

    def receipt(self, key, now):
        kept = self.receipts.get(key)
        return kept[0] if kept is not None and kept[1] >= now else None

    def take_challenge(self, challenge_id, now):
        pending = self.challenges.pop(challenge_id, None)
        return pending if pending is not None and pending.expires >= now else None

    def limited(self, pseudonym, app_id, limit, now):
        newest = sorted((r.issued for r in self.certificates.values()
                         if r.ek_pseudonym in self.members(pseudonym) and r.app_id == app_id
                         and r.issued > now - limit.window),
                        reverse=True)
        return Limited(newest[limit.enrolments - 1] + limit.window) if len(newest) >= limit.enrolments else None

    def add_certificate(self, record, limit):
        refusal = self.banned(record.ek_pseudonym, record.app_id) or self.limited(record.ek_pseudonym, record.app_id,
                                                                                   limit, record.issued)
        if refusal is None:
            self.certificates[record.serial] = record
            self.devices.setdefault(record.ek_pseudonym, record.ek_pseudonym)
        return refusal

    def enrolments(self, pseudonym, app_id, since):
        return sum(1 for r in self.certificates.values()
                   if r.ek_pseudonym in self.members(pseudonym) and r.app_id == app_id and r.issued > since)

    def revoke(self, serial, reason, now):
        record = self.certificates.get(serial)
        if record is None:
            return False
        changed = False
        for other in list(self.certificates.values()):
            if other.ek_pseudonym in self.members(record.ek_pseudonym) and other.app_id == record.app_id \
                    and other.revoked is None:
                self.certificates[other.serial] = dataclasses.replace(other, revoked=now, revocation_reason=reason)
                changed = True
        if self.banned(record.ek_pseudonym, record.app_id) is None:
            self.bans[record.ek_pseudonym, record.app_id] = Ban(now, reason, serial)
            changed = True
        if changed:
            self.revocation_generation += 1
        return changed

    def lift(self, serial):
        record = self.certificates.get(serial)
        if record is None:
            return 0
        lifted = [(p, record.app_id) for p in self.members(record.ek_pseudonym) if (p, record.app_id) in self.bans]
        for key in lifted:
            del self.bans[key]
        return len(lifted)

    def add_credential(self, record):
        known = self.credentials.get(record.credential_id)
        if known is not None and known.app_id != record.app_id:
            return None
        if known is not None:
            record = CredentialRecord(known.credential_id, known.app_id, known.cose_key, record.ak_name,
                                      record.ak_serial, max(known.counter, record.counter), known.registered,
                                      known.counter_failed, record.ak_anchor, record.ak_not_after)
        self.credentials[record.credential_id] = record
        return record

    def advance_counter(self, credential_id, counter, now):
        known = self.credentials.get(credential_id)
        if known is None:
            return False
        if counter > known.counter:
            self.credentials[credential_id] = dataclasses.replace(known, counter=counter)
            return True
        if known.counter_failed is None:
            self.credentials[credential_id] = dataclasses.replace(known, counter_failed=now)
        return False

    def add_tenant_nonce(self, nonce, expires, purpose, app_id, tenant, limit, now):
        start = datetime.datetime(1970, 1, 1) + (now - datetime.datetime(1970, 1, 1)) // limit.window * limit.window
        kept = self.issues.get(tenant)
        if kept is not None and kept[0] >= start and kept[1] >= limit.issued:
            return Limited(start + limit.window)
        self.issues[tenant] = (start, 1) if kept is None or kept[0] < start else (kept[0], kept[1] + 1)
        self.nonces[nonce] = [expires, False, purpose, app_id]
        return None

    def spend_assertion(self, nonce, now, app_id, credential_id, counter, key, keep_until):
        state = self.use_nonce(nonce, now, "webauthn", app_id)
        if state is NonceState.USED and key is not None:
            return state, self.receipt(key, now)
        if state is not NonceState.FRESH:
            return state, None
        answer = b"accepted" if self.advance_counter(credential_id, counter, now) else b"counter"
        if key is not None:
            self.receipts[key] = (answer, keep_until)
        return state, answer

    def checked_spend_assertion(self, credential_id, app_id, cose_key, anchors, nonce, now, counter, key, keep_until):
        credential = self.credentials.get(credential_id)
        if credential is None:
            return CheckedAssertion(None, None, None, None)
        certificate = self.certificates.get(credential.ak_serial)
        ban = None if certificate is None else self.banned(certificate.ek_pseudonym, certificate.app_id)
        passes = (credential.app_id == app_id and credential.cose_key == cose_key and credential.ak_anchor in anchors
                  and credential.ak_not_after is not None and credential.ak_not_after >= now
                  and (certificate is None or certificate.revoked is None and ban is None))
        spent = self.spend_assertion(nonce, now, app_id, credential_id, counter, key, keep_until) if passes else None
        return CheckedAssertion(credential, certificate, ban, spent)

    def purge(self, now):
        self.nonces = {n: e for n, e in self.nonces.items() if e[0] >= now}
        self.challenges = {i: p for i, p in self.challenges.items() if p.expires >= now}
        self.receipts = {k: e for k, e in self.receipts.items() if e[1] >= now}
        hour = int((now - datetime.datetime(1970, 1, 1)).total_seconds()) // 3600
        self.activity = {k: a for k, a in self.activity.items() if a.hour >= hour - 1}


# Coarse times, so that the boundaries (an expiry equal to now, an issue time equal to the
# window's start) come up often rather than once in a million draws.
seconds = st.sampled_from([0, 1, 600, 1200, 2000, 3600]).map(lambda s: datetime.timedelta(seconds=s))


class StoreMachine(RuleBasedStateMachine):
    open_new_store = None  # set per kind of store below

    @initialize()
    def start(self):
        self.store = type(self).open_new_store()
        self.model = Model()
        self.now = T0
        self.counter = itertools.count(1)

    @rule(step=seconds)
    def time_passes(self, step):
        self.now += step

    @rule(lifetime=seconds, purpose=st.sampled_from(PURPOSES), app_id=st.sampled_from(NONCE_APPS))
    def add_nonce(self, lifetime, purpose, app_id):
        nonce = next(self.counter).to_bytes(32, "big")
        self.store.add_nonce(nonce, self.now + lifetime, purpose, app_id)
        self.model.nonces[nonce] = [self.now + lifetime, False, purpose, app_id]

    @rule(data=st.data(), purpose=st.sampled_from(PURPOSES), app_id=st.sampled_from(APPS))
    def use_nonce(self, data, purpose, app_id):
        nonce = data.draw(st.sampled_from(sorted(self.model.nonces) + [b"unknown".ljust(32, b"\0")]))
        assert self.store.use_nonce(nonce, self.now, purpose, app_id) == self.model.use_nonce(nonce, self.now,
                                                                                              purpose, app_id)

    @rule(lifetime=seconds, pseudonym=st.sampled_from(PSEUDONYMS), most=st.integers(min_value=1, max_value=3))
    def add_challenge(self, lifetime, pseudonym, most):
        challenge_id = format(next(self.counter), "032x")
        pending = PendingChallenge(b"s" * 32, b"ak", APPS[0], pseudonym, self.now + lifetime,
                                   linked=(("H-2", PSEUDONYMS[2], b"t" * 32),) if pseudonym == PSEUDONYMS[0] else ())
        assert self.store.add_challenge(challenge_id, pending, self.now, most) == self.model.add_challenge(
            challenge_id, pending, self.now, most)

    @rule(key=st.sampled_from(RECEIPTS), lifetime=seconds)
    def add_receipt(self, key, lifetime):
        if key in self.model.receipts:  # a receipt is kept once, by the request that spent its nonce
            return
        answer = b"answer %d" % next(self.counter)
        self.store.add_receipt(key, answer, self.now + lifetime)
        self.model.receipts[key] = (answer, self.now + lifetime)

    @rule(key=st.sampled_from(RECEIPTS))
    def receipt(self, key):
        assert self.store.receipt(key, self.now) == self.model.receipt(key, self.now)

    @rule(data=st.data(), commit=st.booleans(), counter=COUNTERS, pseudonym=st.sampled_from(PSEUDONYMS))
    def spend_atomically(self, data, commit, counter, pseudonym):
        """What a spending request does (docs/SERVER-STATE.md, invariant 4): several operations in
        one atomic() block, which either commits all of them or, when the block raises, none."""
        nonce = data.draw(st.sampled_from(sorted(self.model.nonces) + [b"unknown".ljust(32, b"\0")]))
        challenge_id = data.draw(st.sampled_from(sorted(self.model.challenges) + ["f" * 32]))
        credential = data.draw(st.sampled_from(CREDENTIALS))
        key = b"t%d" % next(self.counter)
        record = CertificateRecord(next(self.counter), pseudonym, APPS[0], b"name", self.now, self.now)
        model = copy.deepcopy(self.model)
        answers = (model.use_nonce(nonce, self.now, "attestation", APPS[0]),
                   model.take_challenge(challenge_id, self.now), model.add_certificate(record, model.limit), model.advance_counter(credential, counter, self.now))
        model.receipts[key] = (b"kept", self.now)
        with contextlib.suppress(Rollback), self.store.atomic():
            assert (self.store.use_nonce(nonce, self.now, "attestation", APPS[0]),
                    self.store.take_challenge(challenge_id, self.now), self.store.add_certificate(record, model.limit),
                    self.store.advance_counter(credential, counter, self.now)) == answers
            self.store.add_receipt(key, b"kept", self.now)
            if not commit:
                raise Rollback()
        if commit:
            self.model = model
        assert self.store.receipt(key, self.now) == self.model.receipt(key, self.now)
        assert self.store.certificate(record.serial) == self.model.certificates.get(record.serial)
        assert self.store.credential(credential) == self.model.credentials.get(credential)

    @rule(data=st.data())
    def take_challenge(self, data):
        challenge_id = data.draw(st.sampled_from(sorted(self.model.challenges) + ["f" * 32]))
        assert self.store.take_challenge(challenge_id, self.now) == self.model.take_challenge(challenge_id, self.now)

    @rule(pseudonym=st.sampled_from(PSEUDONYMS), app_id=st.sampled_from(APPS), skew=seconds, life=seconds)
    def add_certificate(self, pseudonym, app_id, skew, life):
        # issued up to 2000 s off the clock either way: hosts' clocks differ
        issued = self.now + skew - datetime.timedelta(seconds=1800)
        record = CertificateRecord(next(self.counter), pseudonym, app_id, b"name", issued, issued + life)
        assert self.store.add_certificate(record, self.model.limit) == self.model.add_certificate(record,
                                                                                                  self.model.limit)

    @rule(pseudonym=st.sampled_from(PSEUDONYMS), app_id=st.sampled_from(APPS), back=seconds)
    def count(self, pseudonym, app_id, back):
        since = self.now - back
        assert self.store.enrolments(pseudonym, app_id, since) == self.model.enrolments(pseudonym, app_id, since)
        assert self.store.limited(pseudonym, app_id, self.model.limit, self.now) == self.model.limited(
            pseudonym, app_id, self.model.limit, self.now)
        assert self.store.banned(pseudonym, app_id) == self.model.banned(pseudonym, app_id)
        assert self.store.device(pseudonym) == self.model.devices.get(pseudonym, pseudonym)

    @rule(pseudonyms=st.lists(st.sampled_from(PSEUDONYMS), min_size=1, max_size=3))
    def link(self, pseudonyms):
        assert self.store.link(pseudonyms) == self.model.link(pseudonyms)

    @precondition(lambda self: self.model.certificates)
    @rule(data=st.data(), reason=st.sampled_from(["key-compromise", "superseded"]))
    def revoke(self, data, reason):
        serial = data.draw(st.sampled_from(sorted(self.model.certificates) + [10_000]))
        assert self.store.revoke(serial, reason, self.now) == self.model.revoke(serial, reason, self.now)
        for known in self.model.certificates:
            assert self.store.certificate(known) == self.model.certificates[known]

    @precondition(lambda self: self.model.certificates)
    @rule(data=st.data())
    def lift(self, data):
        serial = data.draw(st.sampled_from(sorted(self.model.certificates) + [10_000]))
        assert self.store.lift(serial) == self.model.lift(serial)

    @rule(credential=st.sampled_from(CREDENTIALS), app_id=st.sampled_from(APPS), counter=COUNTERS, data=st.data(),
          anchor=st.sampled_from([None, b"a" * 32, b"b" * 32]), life=seconds)
    def add_credential(self, credential, app_id, counter, data, anchor, life):
        # an AK certificate's serial the store may know, or not
        serial = data.draw(st.sampled_from(sorted(self.model.certificates)[:3] + [1, 2, 3]))
        # AK anchor and not after: none as in a credential registered before migration 0006
        record = CredentialRecord(credential, app_id, b"cose:" + app_id.encode(), b"ak%d" % serial, serial, counter,
                                  self.now, None, anchor, None if anchor is None else self.now + life)
        assert self.store.add_credential(record) == self.model.add_credential(record)

    @rule(credential=st.sampled_from(CREDENTIALS), counter=COUNTERS)
    def advance_counter(self, credential, counter):
        assert self.store.advance_counter(credential, counter, self.now) == self.model.advance_counter(
            credential, counter, self.now)
        assert self.store.credential(credential) == self.model.credentials.get(credential)

    @rule(data=st.data(), app_id=st.sampled_from(APPS), credential=st.sampled_from(CREDENTIALS + (b"u" * 32,)),
          counter=COUNTERS, key=st.sampled_from((None, *RECEIPTS)), lifetime=seconds)
    def spend_assertion(self, data, app_id, credential, counter, key, lifetime):
        """An assertion's writes as one operation: the WebAuthn challenge, the counter (or its mark),
        the receipt; and a retry's receipt for a challenge used before."""
        nonce = data.draw(st.sampled_from(sorted(self.model.nonces) + [b"unknown".ljust(32, b"\0")]))
        if key is not None and key in self.model.receipts and self.model.nonces.get(nonce, [0, True])[1] is False:
            key = None  # a receipt is kept once, by the request that spent its nonce (its digest names the nonce)
        expected = self.model.spend_assertion(nonce, self.now, app_id, credential, counter, key, self.now + lifetime)
        assert self.store.spend_assertion(nonce, self.now, app_id, credential, counter, key,
                                          self.now + lifetime) == expected
        assert self.store.credential(credential) == self.model.credentials.get(credential)
        if key is not None:
            assert self.store.receipt(key, self.now) == self.model.receipt(key, self.now)

    @rule(data=st.data(), app_id=st.sampled_from(APPS), credential=st.sampled_from(CREDENTIALS + (b"u" * 32,)),
          counter=COUNTERS, key=st.sampled_from((None, *RECEIPTS)), lifetime=seconds,
          anchors=st.sampled_from([frozenset(), frozenset({b"a" * 32}), frozenset({b"a" * 32, b"b" * 32})]))
    def checked_spend_assertion(self, data, app_id, credential, counter, key, lifetime, anchors):
        """An assertion's read and writes as one operation: the writes only for a credential that
        passes (its app, a trusted anchor, not expired, its certificate neither revoked nor banned)."""
        nonce = data.draw(st.sampled_from(sorted(self.model.nonces) + [b"unknown".ljust(32, b"\0")]))
        if key is not None and key in self.model.receipts and self.model.nonces.get(nonce, [0, True])[1] is False:
            key = None  # a receipt is kept once, by the request that spent its nonce (its digest names the nonce)
        cose_key = b"cose:" + data.draw(st.sampled_from(APPS)).encode()  # add_credential's keys: one per app id
        expected = self.model.checked_spend_assertion(credential, app_id, cose_key, anchors, nonce, self.now, counter,
                                                      key, self.now + lifetime)
        assert self.store.checked_spend_assertion(credential, app_id, cose_key, anchors, nonce, self.now, counter, key,
                                                  self.now + lifetime) == expected
        assert self.store.credential(credential) == self.model.credentials.get(credential)
        if key is not None:
            assert self.store.receipt(key, self.now) == self.model.receipt(key, self.now)

    @rule(credential=st.sampled_from(CREDENTIALS + (b"u" * 32,)))
    def credential_and_certificate(self, credential):
        known = self.model.credentials.get(credential)
        assert self.store.credential_and_certificate(credential) == (
            None if known is None else (known, self.model.certificates.get(known.ak_serial)))

    @rule(enrolments=st.integers(min_value=1, max_value=4), window=st.sampled_from([1, 600, 1200, 3600]))
    def set_limit(self, enrolments, window):
        limit = Limit(enrolments, datetime.timedelta(seconds=window))
        self.store.set_limit(limit)
        self.model.limit = limit

    @rule(name=st.sampled_from(["t1", "t2"]), apps=st.sets(st.sampled_from(APPS), min_size=1),
          key=st.sampled_from([b"k" * 32, b"l" * 32]))
    def add_tenant(self, name, apps, key):
        if any(t.key_digest == key for t in self.model.tenants.values()) and name not in self.model.tenants:
            return  # keys are 32 random bytes: two tenants never draw one
        tenant = Tenant(name, tuple(sorted(apps)), key, self.now)
        assert self.store.add_tenant(tenant) == self.model.add_tenant(tenant)
        assert self.store.tenants() == sorted(self.model.tenants.values(), key=lambda t: t.name)
        assert self.store.tenant(key) == next((t for t in self.model.tenants.values() if t.key_digest == key), None)

    @rule(name=st.sampled_from(["t1", "t2"]))
    def remove_tenant(self, name):
        self.model.issues.pop(name, None)
        assert self.store.remove_tenant(name) == (self.model.tenants.pop(name, None) is not None)

    @rule(name=st.sampled_from(["t1", "t2"]), issued=st.integers(min_value=1, max_value=3),
          window=st.sampled_from([1, 600, 3600]))
    def set_tenant_limit(self, name, issued, window):
        limit = IssueLimit(issued, datetime.timedelta(seconds=window))
        known = name in self.model.tenants
        if known:
            self.model.tenants[name] = dataclasses.replace(self.model.tenants[name], limit=limit)
        assert self.store.set_tenant_limit(name, limit) == known
        assert self.store.tenants() == sorted(self.model.tenants.values(), key=lambda t: t.name)

    @rule(name=st.sampled_from(["t1", "t2"]), lifetime=seconds, purpose=st.sampled_from(PURPOSES),
          app_id=st.sampled_from(NONCE_APPS), issued=st.integers(min_value=1, max_value=2),
          back=st.sampled_from([0, 0, 1, 3600]))
    def add_tenant_nonce(self, name, lifetime, purpose, app_id, issued, back):
        """A nonce issued to a tenant, counted against the limit its service holds (the service
        passes its copy of the tenant's; a window of its own per tenant, so that limits are met
        often); `back`: a host whose clock is behind the one that counted last."""
        limit = IssueLimit(issued, datetime.timedelta(seconds=600 if name == "t1" else 3600))
        nonce = next(self.counter).to_bytes(32, "big")
        now = self.now - datetime.timedelta(seconds=back)
        expected = self.model.add_tenant_nonce(nonce, self.now + lifetime, purpose, app_id, name, limit, now)
        assert self.store.add_tenant_nonce(nonce, self.now + lifetime, purpose, app_id, name, limit, now) == expected

    @rule(tenant=st.sampled_from(["t1", "t2"]), key=st.sampled_from(PSEUDONYMS), bits=st.tuples(*[st.booleans()] * 3))
    def write_bits(self, tenant, key, bits):
        assert self.store.write_bits(tenant, key, bits, self.now) == self.model.write_bits(tenant, key, bits, self.now)

    @rule(tenant=st.sampled_from(["t1", "t2"]), keys=st.lists(st.sampled_from(PSEUDONYMS), max_size=3))
    def device_bits(self, tenant, keys):
        assert self.store.device_bits(tenant, keys) == self.model.device_bits(tenant, keys)

    @rule(tenant=st.sampled_from(["t1", "t2"]), first=st.sampled_from(PSEUDONYMS),
          keys=st.lists(st.sampled_from(PSEUDONYMS), max_size=3), count=st.booleans(),
          behind=st.sampled_from([0, 3600]))
    def tenant_device(self, tenant, first, keys, count, behind):
        now = self.now - datetime.timedelta(seconds=behind)  # a host whose clock is an hour behind
        if count:
            self.model.count_assertion(tenant, first, now)
        expected = (self.model.device_bits(tenant, keys), self.model.activity.get((tenant, first)))
        assert self.store.tenant_device(tenant, first, keys, now, count) == expected

    @rule(pseudonym=st.sampled_from(PSEUDONYMS))
    def pseudonyms(self, pseudonym):
        assert self.store.pseudonyms(pseudonym) == sorted(self.model.members(pseudonym))

    @rule(back=seconds)
    def forget_bits(self, back):
        before = self.now - back
        old = [k for k, b in self.model.bits.items() if b.updated < before]
        for k in old:
            del self.model.bits[k]
        assert self.store.forget_bits(before) == len(old)

    @rule(behind=st.integers(min_value=0, max_value=1), age=seconds)
    def publish_crl(self, behind, age):
        # a worker that read the generation before a revocation, or built its CRL earlier, loses
        crl = PublishedCRL(max(self.model.revocation_generation - behind, 0), self.now - age,
                           b"crl %d" % next(self.counter))
        self.store.publish_crl(crl)
        kept = self.model.published_crl
        if kept is None or (crl.generation, crl.built) > (kept.generation, kept.built):
            self.model.published_crl = crl
        assert self.store.published_crl() == self.model.published_crl

    @rule()
    def purge(self):
        self.store.purge(self.now)
        self.model.purge(self.now)

    @invariant()
    def revoked_list_agrees(self):
        if hasattr(self, "store"):
            expected = sorted((r.serial, r.revoked) for r in self.model.certificates.values()
                              if r.revoked is not None and r.not_after >= self.now)
            assert self.store.revoked(self.now) == expected
            assert self.store.limit() == self.model.limit
            assert self.store.revocation_generation() == self.model.revocation_generation


# No target phase: stateful tests report a step-count target, and optimising it spent 90% of the
# time on one long example instead of many different ones.
# Derandomized unless DEVICEID_MODEL_RANDOM=1, as Tests/model: CI runs the same examples every time;
# a random run explores others.
SETTINGS = settings(stateful_step_count=40, deadline=None, database=None,
                    derandomize=os.environ.get("DEVICEID_MODEL_RANDOM") != "1",
                    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgresql"])
def test_the_store_follows_the_model(kind, postgresql, tmp_path):
    files = itertools.count()
    if kind == "postgresql":
        url = postgresql.new_database()
        open_store(url)

        def open_new():
            store = open_store(url, migrate=False)
            with store._tx() as cursor:  # an empty database of the current schema, quickly
                for table in ("nonces", "challenges", "certificates", "enrolment_pairs", "credentials", "receipts",
                              "challenge_eks", "device_links", "bans", "tenant_apps", "tenants", "device_bits",
                              "device_activity", "tenant_issues"):
                    cursor.execute(f"DELETE FROM {table}")
                cursor.execute("UPDATE limits SET enrolments = 5, window_seconds = 86400")
                cursor.execute("UPDATE revocation_generation SET generation = 0")
                cursor.execute("DELETE FROM published_crl")
            return store
    elif kind == "sqlite":
        def open_new():
            return open_store(f"sqlite:///{tmp_path}/model-{next(files)}.sqlite3")
    else:
        def open_new():
            return MemoryStore()

    machine = type(f"{kind}Machine", (StoreMachine,), {"open_new_store": staticmethod(open_new)})
    # the reference run is cheap: many examples in memory; the databases, as many as a few seconds allow
    machine.TestCase.settings = settings(SETTINGS, max_examples=100 if kind == "memory" else 40)
    machine.TestCase().runTest()
