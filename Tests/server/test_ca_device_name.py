"""The TPM a Privacy CA names in an AK certificate: the directoryName of the EK (or platform AK)
certificate, kept by a pending challenge as RFC 4514 text and read back when the AK certificate is
issued. A name whose text does not read back (an attribute of bytes that are not UTF-8, which
RFC 4514 writes as #hex) is not kept: the enrolment goes on without it, where before the CA failed
at its last step with a UnicodeDecodeError (a 500 from the service, the challenge used up)."""
import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from deviceid_verifier._ca import TCG_AT_TPM_MANUFACTURER, PrivacyCA

KEY = ec.generate_private_key(ec.SECP256R1())
MANUFACTURER = x509.NameAttribute(TCG_AT_TPM_MANUFACTURER, "id:00001014")


def certificate_naming(device: x509.Name) -> x509.Certificate:
    now = datetime.datetime(2026, 1, 1)
    return (x509.CertificateBuilder().subject_name(x509.Name([]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "a TPM maker")]))
            .public_key(KEY.public_key()).serial_number(1).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DirectoryName(device)]), critical=True)
            .sign(KEY, hashes.SHA256()))


def test_a_tpm_name_is_kept_as_text_that_reads_back():
    device = x509.Name([MANUFACTURER, x509.NameAttribute(NameOID.COMMON_NAME, "swtpm")])
    assert PrivacyCA._device_of(certificate_naming(device)) == "CN=swtpm,2.23.133.2.1=id:00001014"


def test_a_tpm_name_whose_text_does_not_read_back_is_not_kept():
    odd = x509.NameAttribute(NameOID.X500_UNIQUE_IDENTIFIER, b"\xff\xfe", _type=x509.name._ASN1Type.BitString)
    device = x509.Name([MANUFACTURER, odd])
    assert device.rfc4514_string() == "2.5.4.45=#fffe,2.23.133.2.1=id:00001014"   # what 0.3 kept, and failed on
    assert PrivacyCA._device_of(certificate_naming(device)) == ""


def test_a_certificate_that_names_no_tpm_gives_no_name():
    assert PrivacyCA._device_of(certificate_naming(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")]))) == ""
