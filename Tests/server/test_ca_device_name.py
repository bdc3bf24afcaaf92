"""The TPM a Privacy CA names in an AK certificate: the maker, model and version from the
directoryName of the EK (or platform AK) certificate, and nothing else of it (a cloud's platform AK
certificate may name the instance, which app servers must not see), kept by a pending challenge as
RFC 4514 text and read back when the AK certificate is issued. A name whose text does not read back is not kept: the enrolment goes on without it, where
0.3's CA failed at its last step with a UnicodeDecodeError (a 500 from the service, the challenge
used up) on an attribute of bytes that are not UTF-8, which RFC 4514 writes as #hex."""
import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from deviceid_verifier._ca import TCG_AT_TPM_MANUFACTURER, TCG_AT_TPM_MODEL, TCG_AT_TPM_VERSION, PrivacyCA

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
    device = x509.Name([x509.RelativeDistinguishedName([MANUFACTURER, x509.NameAttribute(TCG_AT_TPM_MODEL, "swtpm"),
                                                        x509.NameAttribute(TCG_AT_TPM_VERSION, "id:20191023")])])
    kept = PrivacyCA._device_of(certificate_naming(device))
    assert sorted(kept.split("+")) == ["2.23.133.2.1=id:00001014", "2.23.133.2.2=swtpm", "2.23.133.2.3=id:20191023"]


def test_only_the_tpms_maker_model_and_version_are_kept():
    """A platform AK certificate's directoryName that also names the VM: the AK certificate an app
    server sees names the TPM's kind only (an earlier try copied the whole name)."""
    instance = x509.NameAttribute(NameOID.COMMON_NAME, "vm 6f1c2a4e-instance-of-customer-x")
    serial = x509.NameAttribute(NameOID.SERIAL_NUMBER, "0123456789")
    device = x509.Name([x509.RelativeDistinguishedName([MANUFACTURER, instance]),
                        x509.RelativeDistinguishedName([x509.NameAttribute(TCG_AT_TPM_MODEL, "vTPM")]),
                        x509.RelativeDistinguishedName([serial])])
    kept = PrivacyCA._device_of(certificate_naming(device))
    assert kept == "2.23.133.2.2=vTPM,2.23.133.2.1=id:00001014", kept
    assert "instance" not in kept and "0123456789" not in kept


def test_an_attribute_whose_text_does_not_read_back_is_not_kept():
    """0.3 kept the whole name and failed on its last step; now such an attribute is not one of
    the three kept, and the rest is."""
    odd = x509.NameAttribute(NameOID.X500_UNIQUE_IDENTIFIER, b"\xff\xfe", _type=x509.name._ASN1Type.BitString)
    device = x509.Name([MANUFACTURER, odd])
    assert device.rfc4514_string() == "2.5.4.45=#fffe,2.23.133.2.1=id:00001014"
    assert PrivacyCA._device_of(certificate_naming(device)) == "2.23.133.2.1=id:00001014"


def test_a_certificate_that_names_no_tpm_gives_no_name():
    assert PrivacyCA._device_of(certificate_naming(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")]))) == ""
