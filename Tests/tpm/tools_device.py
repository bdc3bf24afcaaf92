"""The device side of the attestation protocol, driven by tpm2-tools against a swtpm, producing
the wire-format v1 JSON that `deviceid attest ...` will produce. It is written independently of
deviceid_verifier (its own hashes, templates and JSON) so that the tests cross-check the two.

tpm2-tools 5.4 does everything but one step: its tpm2_certify has no qualifying-data option
(it always certifies with extraData = 00 ff 55 aa), so TPM2_Certify with the server's nonce goes
through tpm2-pytss's ESAPI on the same TCTI. certify_with_tools() shows the tools' own result.

One AK per app id: the primary of the owner hierarchy whose template's unique is a hash of the
app id (ak_unique). The device enrols each app's AK with the CA (the request carries the app
id) and keeps one AK certificate per app id; an app's evidence is signed by that app's AK.

swtpm has no resource manager: every transient object and session is flushed after each tool.
"""
import base64
import hashlib
import json
import os
import struct
import subprocess
from pathlib import Path

HARDWARE_ID_LABEL = b"deviceid.hardware-id.v1"
AK_LABEL = b"deviceid.attestation-key.v1"
APP_ATTRIBUTES = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|sign"
AK_ATTRIBUTES = APP_ATTRIBUTES + "|restricted"
EK_CERT_RSA = 0x01C00002
EK_CERT_ECC = 0x01C00016
TIMEOUT = 60
#: ESYS_TR names of the hierarchies the tests create primaries in → tpm2-tools' -C letters
HIERARCHIES = {"OWNER": "o", "ENDORSEMENT": "e"}


class DeviceError(Exception):
    """A tpm2-tools command failed; `stderr` has its words."""

    def __init__(self, command, returncode, stderr):
        super().__init__(f"{command[0]} exited {returncode}: {stderr.strip()}")
        self.command = command
        self.returncode = returncode
        self.stderr = stderr


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _len32(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def app_unique(app_id: str) -> bytes:
    return hashlib.sha256(_len32(HARDWARE_ID_LABEL) + _len32(app_id.encode())).digest()


def ak_unique(app_id: str) -> bytes:
    return hashlib.sha256(_len32(AK_LABEL) + _len32(app_id.encode())).digest()


def tag(app_id: str) -> str:
    """A short file-name-safe tag of an app id."""
    return hashlib.sha256(app_id.encode()).hexdigest()[:12]


def hardware_id(name: bytes) -> str:
    """The device's own computation of the hardware ID from an app key Name (UUIDv8)."""
    h = bytearray(hashlib.sha256(b"deviceid.hardware-id.v1/name" + name).digest()[:16])
    h[6] = (h[6] & 0x0F) | 0x80
    h[8] = (h[8] & 0x3F) | 0x80
    return "-".join(h.hex()[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))


def der_trim(data: bytes) -> bytes:
    """An NV-stored certificate without the padding some TPMs leave after its DER SEQUENCE."""
    if len(data) < 2 or data[0] != 0x30:
        raise ValueError("not a DER SEQUENCE")
    if data[1] < 0x80:
        return data[:2 + data[1]]
    n = data[1] & 0x7F
    length = int.from_bytes(data[2:2 + n], "big")
    return data[:2 + n + length]


def strip_tpm2b(data: bytes) -> bytes:
    """A TPM2B's contents (the tools write TPM2B_PUBLIC; the wire wants TPMT_PUBLIC)."""
    (size,) = struct.unpack(">H", data[:2])
    assert len(data) == 2 + size, "trailing bytes after a TPM2B"
    return data[2:]


class ToolsDevice:
    """One machine: a swtpm reached at `tcti`, with tpm2-tools' files in `workdir`."""

    def __init__(self, tcti: str, workdir: Path):
        self.tcti = tcti
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.ak_certificates = {}  # app id → DER AK certificate, once that app's AK is enrolled
        self._enrolling = None  # (app id, AK context) of the last enrolment request

    # -- tpm2-tools -------------------------------------------------------------------------

    def tool(self, *args: str, flush: bool = True) -> bytes:
        """Run one tpm2-tools command in the work directory; DeviceError if it fails."""
        env = dict(os.environ, TPM2TOOLS_TCTI=self.tcti)
        try:
            result = subprocess.run(list(args), cwd=self.workdir, env=env, capture_output=True, timeout=TIMEOUT)
        finally:
            if flush:
                self.flush()
        if result.returncode != 0:
            raise DeviceError(list(args), result.returncode, result.stderr.decode(errors="replace"))
        return result.stdout

    def flush(self) -> None:
        """Flush every transient object and session: there is no resource manager."""
        env = dict(os.environ, TPM2TOOLS_TCTI=self.tcti)
        for what in ("-t", "-l", "-s"):
            subprocess.run(["tpm2_flushcontext", what], cwd=self.workdir, env=env, capture_output=True,
                           timeout=TIMEOUT, check=True)

    def path(self, name: str) -> Path:
        return self.workdir / name

    def create_app_key(self, app_id: str, context: str = "app.ctx") -> str:
        """tpm2_createprimary of the app key for `app_id` (the frozen template); returns the context file."""
        # tpm2-tools 5.4 reads -u for ECC as TPMS_ECC_POINT with little-endian TPM2B sizes.
        unique = self.path(f"{context}.unique")
        unique.write_bytes(struct.pack("<H", 32) + app_unique(app_id) + struct.pack("<H", 0))
        self.tool("tpm2_createprimary", "-C", "o", "-g", "sha256", "-G", "ecc256:ecdsa-sha256:null",
                  "-a", APP_ATTRIBUTES, "-u", str(unique), "-c", context)
        return context

    def create_ak(self, app_id: str, hierarchy: str = "OWNER") -> str:
        """tpm2_createprimary of `app_id`'s AK (a primary of the owner hierarchy; `hierarchy`
        "ENDORSEMENT" plays a device that puts it elsewhere); returns the context file."""
        context = f"ak-{tag(app_id)}-{HIERARCHIES[hierarchy]}.ctx"
        unique = self.path(f"{context}.unique")  # AKU.bin: TPMS_ECC_POINT, sizes little-endian (see above)
        unique.write_bytes(b"\x20\x00" + ak_unique(app_id) + b"\x00\x00")
        self.tool("tpm2_createprimary", "-C", HIERARCHIES[hierarchy], "-g", "sha256", "-G", "ecc256:ecdsa-sha256:null",
                  "-a", AK_ATTRIBUTES, "-u", str(unique), "-c", context)
        return context

    def read_public(self, context: str):
        """(TPMT_PUBLIC, Name) of a loaded context, from tpm2_readpublic -o / -n."""
        self.tool("tpm2_readpublic", "-c", context, "-o", f"{context}.pub", "-n", f"{context}.name")
        return strip_tpm2b(self.path(f"{context}.pub").read_bytes()), self.path(f"{context}.name").read_bytes()

    def app_name(self, app_id: str) -> bytes:
        """The app key's Name as tpm2_readpublic -n reports it (independently of the verifier)."""
        return self.read_public(self.create_app_key(app_id, f"app-{tag(app_id)}.ctx"))[1]

    def ak_name(self, app_id: str, hierarchy: str = "OWNER") -> bytes:
        """The Name of `app_id`'s AK as tpm2_readpublic -n reports it."""
        return self.read_public(self.create_ak(app_id, hierarchy))[1]

    def ek_certificate(self, index: int = EK_CERT_RSA) -> bytes:
        out = f"ek-cert-{index:08x}.der"
        self.tool("tpm2_nvread", f"{index:#x}", "-o", out)
        return der_trim(self.path(out).read_bytes())

    # -- enrolment ----------------------------------------------------------------------------

    def enrolment_request(self, app_id: str, *, ak_public: bytes = None, ek_certificate: bytes = None,
                          ak_hierarchy: str = "OWNER") -> str:
        """Message 1, for `app_id`'s AK. `ak_public`/`ek_certificate` replace the TPM's (to play a
        cheating device); `ak_hierarchy` "ENDORSEMENT" enrols an AK of the template made there."""
        self.tool("tpm2_createek", "-G", "rsa", "-c", "ek.ctx", "-u", "ek.pub")
        context = self.create_ak(app_id, ak_hierarchy)
        self._enrolling = (app_id, context)
        return json.dumps({
            "v": 1, "type": "deviceid.enrolment-request", "app_id": app_id,
            "ek_certificate": b64(ek_certificate if ek_certificate is not None else self.ek_certificate()),
            "ak_public": b64(ak_public if ak_public is not None else self.read_public(context)[0]),
        })

    def enrolment_response(self, challenge: str, *, activate_context: str = None) -> str:
        """Message 3: TPM2_ActivateCredential with the EK's policy (PolicySecret(endorsement))."""
        message = json.loads(challenge)
        assert message["v"] == 1 and message["type"] == "deviceid.enrolment-challenge"
        blob, secret = unb64(message["credential_blob"]), unb64(message["encrypted_secret"])
        # tpm2_makecredential's file: magic, version, TPM2B_ID_OBJECT, TPM2B_ENCRYPTED_SECRET
        if activate_context is None:
            activate_context = self._enrolling[1]  # the AK of the last request
        self.path("cred.in").write_bytes(struct.pack(">IIH", 0xBADCC0DE, 1, len(blob)) + blob
                                         + struct.pack(">H", len(secret)) + secret)
        self.tool("tpm2_startauthsession", "--policy-session", "-S", "session.ctx", flush=False)
        try:
            self.tool("tpm2_policysecret", "-S", "session.ctx", "-c", "e", flush=False)
            self.tool("tpm2_activatecredential", "-c", activate_context, "-C", "ek.ctx", "-i", "cred.in",
                      "-o", "cred.out", "-P", "session:session.ctx", flush=False)
        finally:
            subprocess.run(["tpm2_flushcontext", "session.ctx"], cwd=self.workdir, capture_output=True,
                           env=dict(os.environ, TPM2TOOLS_TCTI=self.tcti), timeout=TIMEOUT)
            self.flush()
        return json.dumps({"v": 1, "type": "deviceid.enrolment-response", "id": message["id"],
                           "credential": b64(self.path("cred.out").read_bytes())})

    def accept_ak_certificate(self, message: str, app_id: str = None) -> None:
        """Message 4: keep the AK certificate of `app_id` (by default, of the last request) for its evidence."""
        parsed = json.loads(message)
        assert parsed["v"] == 1 and parsed["type"] == "deviceid.ak-certificate"
        self.ak_certificates[app_id if app_id is not None else self._enrolling[0]] = unb64(parsed["certificate"])

    def enrol(self, ca, app_id: str, *, ak_hierarchy: str = "OWNER") -> None:
        """The whole enrolment of `app_id`'s AK with a PrivacyCA in-process."""
        challenge = ca.challenge(self.enrolment_request(app_id, ak_hierarchy=ak_hierarchy))
        self.accept_ak_certificate(ca.finish(self.enrolment_response(challenge)), app_id)

    def load_external(self, public: bytes, context: str) -> str:
        """tpm2_loadexternal of a public area alone (a software key's, say) into the NULL hierarchy."""
        self.path(f"{context}.pub").write_bytes(struct.pack(">H", len(public)) + public)
        self.tool("tpm2_loadexternal", "-C", "n", "-u", f"{context}.pub", "-c", context)
        return context

    # -- attestation --------------------------------------------------------------------------

    def certify(self, app_id: str, nonce: bytes, *, app_attributes: int = 0x00040472, app_hierarchy: str = "OWNER",
                ak_app_id: str = None, ak_hierarchy: str = "OWNER"):
        """TPM2_Certify(app key, AK, qualifyingData=nonce, ECDSA/SHA-256) through ESAPI. The app
        key is a primary of `app_hierarchy` (an ESYS_TR name: OWNER, as the design says); the AK
        is the AK of `ak_app_id` (by default `app_id`), a primary of `ak_hierarchy` (OWNER).
        Returns (app TPMT_PUBLIC, AK TPMT_PUBLIC, TPMS_ATTEST, TPMT_SIGNATURE), all marshalled."""
        from tpm2_pytss import ESAPI, TPM2B_DATA, TPM2B_PUBLIC, TPM2B_SENSITIVE_CREATE, TPMT_PUBLIC, TPMT_SIG_SCHEME
        from tpm2_pytss.constants import ESYS_TR, TPM2_ALG, TPM2_ECC

        def template(attributes: int, x: bytes) -> TPM2B_PUBLIC:
            public = TPM2B_PUBLIC(TPMT_PUBLIC(type=TPM2_ALG.ECC, nameAlg=TPM2_ALG.SHA256, objectAttributes=attributes))
            detail = public.publicArea.parameters.eccDetail
            detail.symmetric.algorithm = TPM2_ALG.NULL
            detail.scheme.scheme = TPM2_ALG.ECDSA
            detail.scheme.details.ecdsa.hashAlg = TPM2_ALG.SHA256
            detail.curveID = TPM2_ECC.NIST_P256
            detail.kdf.scheme = TPM2_ALG.NULL
            public.publicArea.unique.ecc.x = x
            return public

        esapi = ESAPI(self.tcti)
        handles = []
        try:
            app, app_out = esapi.create_primary(TPM2B_SENSITIVE_CREATE(), template(app_attributes, app_unique(app_id)),
                                                getattr(ESYS_TR, app_hierarchy))[:2]
            handles.append(app)
            ak_unique_x = ak_unique(app_id if ak_app_id is None else ak_app_id)
            ak, ak_out = esapi.create_primary(TPM2B_SENSITIVE_CREATE(), template(0x00050472, ak_unique_x),
                                              getattr(ESYS_TR, ak_hierarchy))[:2]
            handles.append(ak)
            scheme = TPMT_SIG_SCHEME(scheme=TPM2_ALG.ECDSA)
            scheme.details.ecdsa.hashAlg = TPM2_ALG.SHA256
            attest, signature = esapi.certify(app, ak, TPM2B_DATA(nonce), scheme)
            return (app_out.publicArea.marshal(), ak_out.publicArea.marshal(),
                    bytes(attest.marshal()[2:]), bytes(signature.marshal()))
        finally:
            for handle in handles:
                esapi.flush_context(handle)
            esapi.close()

    def firmware_version(self) -> int:
        """TPM2_PT_FIRMWARE_VERSION_1 ‖ _2, as TPM2_GetCapability reports them (unobfuscated)."""
        from tpm2_pytss import ESAPI
        from tpm2_pytss.constants import TPM2_CAP, TPM2_PT
        esapi = ESAPI(self.tcti)
        try:
            first = int(TPM2_PT.FIXED) + 11  # TPM2_PT_FIRMWARE_VERSION_1; _2 follows
            _, data = esapi.get_capability(TPM2_CAP.TPM_PROPERTIES, first, 2)
            values = {int(p.property): int(p.value) for p in data.data.tpmProperties}
            return values[first] << 32 | values[first + 1]
        finally:
            esapi.close()

    def certify_with_tools(self, app_id: str):
        """tpm2_certify's own TPM2_Certify (default "tss" signature format = marshalled
        TPMT_SIGNATURE; qualifying data fixed by the tool). Returns (TPMS_ATTEST, TPMT_SIGNATURE)."""
        ak = self.create_ak(app_id)
        self.create_app_key(app_id)
        self.tool("tpm2_certify", "-c", "app.ctx", "-C", ak, "-g", "sha256", "-o", "attest.bin", "-s", "sig.bin")
        return self.path("attest.bin").read_bytes(), self.path("sig.bin").read_bytes()

    def quote(self, app_id: str, nonce: bytes):
        """tpm2_quote of PCR sha256:0 by `app_id`'s AK with the nonce: (TPMS_ATTEST, TPMT_SIGNATURE)."""
        ak = self.create_ak(app_id)
        self.tool("tpm2_quote", "-c", ak, "-l", "sha256:0", "-q", nonce.hex(), "-m", "quote.msg",
                  "-s", "quote.sig", "-g", "sha256")
        return self.path("quote.msg").read_bytes(), self.path("quote.sig").read_bytes()

    def sign_with_ak(self, app_id: str, data: bytes) -> bytes:
        """`app_id`'s AK's TPMT_SIGNATURE over SHA-256(data), through tpm2_hash's ticket (which the
        TPM withholds for data that starts with TPM_GENERATED_VALUE) and tpm2_sign."""
        ak = self.create_ak(app_id)
        self.path("sign.in").write_bytes(data)
        self.tool("tpm2_hash", "-C", "o", "-g", "sha256", "-o", "sign.digest", "-t", "sign.ticket", "sign.in")
        self.tool("tpm2_sign", "-c", ak, "-g", "sha256", "-s", "ecdsa", "-d", "-t", "sign.ticket",
                  "-o", "sign.sig", "sign.digest")
        return self.path("sign.sig").read_bytes()

    def evidence(self, app_id: str, nonce: bytes, **certify_options) -> str:
        """Message 5, for `app_id` and the server's `nonce`, signed by the AK of `ak_app_id` (by
        default `app_id`) with that app's AK certificate, if enrolled."""
        app_public, ak_public, attest, signature = self.certify(app_id, nonce, **certify_options)
        ak_certificate = self.ak_certificates.get(certify_options.get("ak_app_id") or app_id)
        name = b"\x00\x0b" + hashlib.sha256(app_public).digest()
        message = {
            "v": 1, "type": "deviceid.attestation", "app_id": app_id, "hardware_id": hardware_id(name),
            "nonce": b64(nonce), "app_public": b64(app_public), "ak_public": b64(ak_public),
            "attest": b64(attest), "signature": b64(signature),
        }
        if ak_certificate is not None:
            message["ak_certificate"] = b64(ak_certificate)
        return json.dumps(message)
