# Debian's ruby-tpm-key-attestation (the TPM checks under webauthn-ruby), never DeviceID's code:
# reads one case as JSON on stdin and prints its verdict as JSON.
#
#   {"cert_info", "signature", "pub_area", "x5c": [...], "qualifying_data", "root_pem"}  (base64)
#   → {"ok": true|false}
#
# TPM::KeyAttestation checks certInfo (TPM-generated, a certification, extraData = the qualifying
# data, the Name of pubArea), the AK's ECDSA/SHA-256 signature, that the AK certificate is
# conformant to the TCG AIK profile, and its chain to the one trusted root given. Its table of TPM
# vendors lacks swtpm's manufacturer id, id:00001014, which is added here.
require "base64"
require "json"
require "openssl"
require "tpm/key_attestation"

vendors = TPM::VENDOR_IDS.merge("id:00001014" => "swtpm")
TPM.send(:remove_const, :VENDOR_IDS)
TPM.const_set(:VENDOR_IDS, vendors.freeze)

case_ = JSON.parse($stdin.read)
bytes = ->(key) { Base64.strict_decode64(case_.fetch(key)) }
attestation = TPM::KeyAttestation.new(
  bytes.call("cert_info"), bytes.call("signature"), bytes.call("pub_area"),
  case_.fetch("x5c").map { |c| Base64.strict_decode64(c) }, bytes.call("qualifying_data"),
  signature_algorithm: TPM::ALG_ECDSA, hash_algorithm: TPM::ALG_SHA256,
  trusted_certificates: [OpenSSL::X509::Certificate.new(case_.fetch("root_pem"))]
)
puts JSON.generate({ "ok" => attestation.valid? ? true : false })
