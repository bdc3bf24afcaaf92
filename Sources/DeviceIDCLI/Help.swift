/// The command line's help: one entry per command, from which `deviceid --help`, `deviceid help
/// COMMAND`, `deviceid COMMAND --help` and the usage hints are all made, so they cannot disagree.
enum Help {
    struct Entry {
        let command: String
        /// One line per form: the synopsis, then what it does.
        let forms: [(String, String)]
        /// What the command's own help adds.
        let details: String
    }

    static let entries: [Entry] = [
        Entry(command: "get", forms: [("get APP_ID", "print this device's stable ID for APP_ID")], details: """
            The ID is a UUID v4 minted once per APP_ID and user, kept in the keyring (Secret Service)
            and mirrored in the file store; it survives restarts and reinstalls. With --json the
            answer says where it came from and how far to trust it (device_changed, weak, file_only,
            repaired, mirrored, provisional, app_data_only, anchor_changed) and where it lives
            (location: keyring, portal, app-data, host, container, volume, bind-mount,
            undetermined). In a
            Flatpak or Snap whose Secret portal answers, the ID is derived from the portal's
            secret for the app: it survives removal of the app's data, and reset is UNSUPPORTED.
            """),
        Entry(command: "reset", forms: [("reset APP_ID", "forget it; the next get mints a new one")], details: """
            Removes the ID from every store. A locked keyring fails the reset before anything is
            removed (exit 14), so the old ID cannot come back from the store that kept it.
            """),
        Entry(command: "secret", forms: [
            ("secret store SERVICE ACCOUNT", "store the secret read from standard input (--allow-empty)"),
            ("secret lookup SERVICE ACCOUNT", "write the secret to standard output"),
            ("secret delete SERVICE ACCOUNT", "delete the secret"),
        ], details: """
            Keychain-style secrets, kept in the keyring (in a sandbox without one: a file sealed
            with the app's key from the Secret portal). With no keyring to take it, store exits 28
            (NO_KEYRING) and writes nothing: a secret goes to a file in plain text only with
            --backend file chosen, which says so (--json: "location", "path"). The secret never
            travels through argv or the environment: store reads standard input (prompting without
            echo on a terminal); an empty one, or a lone line break, is refused (exit 11) unless
            --allow-empty says it is meant: an unset variable (echo "$UNSET") or a command that
            failed before the pipe gives one. lookup and delete exit 1 when there is no such secret.
            """),
        Entry(command: "vendor", forms: [("vendor get|reset VENDOR_ID", "identifierForVendor: one ID per vendor")],
              details: "Every app that passes the same VENDOR_ID gets the same ID; reset re-mints it."),
        Entry(command: "advertising", forms: [
            ("advertising [get|reset]", "the advertising ID (zeros while tracking is limited)"),
            ("advertising limit [on|off]", "show or set \"limit ad tracking\""),
        ], details: "A resettable device-wide ID; while tracking is limited it reads as all zeros."),
        Entry(command: "openudid", forms: [
            ("openudid get APP_ID", "the ID every app of this user shares"),
            ("openudid opt-out APP_ID on|off", "opt an app out of (or back into) OpenUDID"),
            ("openudid reset", "forget the shared ID"),
        ], details: "One ID shared by all of this user's apps; an app that opted out reads zeros."),
        Entry(command: "uuid", forms: [("uuid", "a random UUID v4 (--uppercase, --compact)")],
              details: "From getrandom(2); --compact drops the dashes."),
        Entry(command: "mac", forms: [("mac", "the primary hardware address (--interface, --compact)")], details: """
            The primary physical NIC, chosen deterministically (the permanent address when the driver
            reports one). A locally administered address is reported as weak.
            """),
        Entry(command: "mac-md5", forms: [("mac-md5", "MD5 of the MAC's 12 hex digits (--interface, --bundle ID)")],
              details: "The iOS-era MD5(MAC) and, with --bundle, MD5(MAC + bundle id)."),
        Entry(command: "hash", forms: [("hash md5|sha256", "hex digest of stdin; with --bundle ID, of stdin + ID")],
              details: "Hashing a push token with the bundle id, as the iOS technique did."),
        Entry(command: "machine-id", forms: [
            ("machine-id app-specific APP_ID", "systemd's app-specific machine ID (--compact: its form)"),
            ("machine-id raw", "the RAW machine ID (not for sending anywhere)"),
        ], details: """
            app-specific is exactly sd_id128_get_machine_app_specific(3): APP_ID is a 128-bit ID
            (32 hex digits or a UUID), as `systemd-id128 machine-id --app-specific=` takes.
            Both say weak (with the reason) when the machine ID is not this machine's own: in a
            container, one baked into the image is shared by every container made from it.
            """),
        Entry(command: "product-uuid", forms: [("product-uuid raw", "the RAW firmware product UUID (usually root only)")],
              details: "Read from /sys/class/dmi/id/product_uuid, which only root may read on most systems."),
        Entry(command: "hardware-id", forms: [("hardware-id APP_ID", "this TPM's hardware-bound ID for APP_ID")], details: """
            A UUID (version 8) derived by the TPM 2.0 from its own seed and APP_ID: the same on
            every call, after every store, the home directory or the OS is wiped; another,
            unlinkable one per APP_ID; a new one only when the TPM is cleared or replaced. Stored
            nowhere. The TPM is /dev/tpmrm0 (root:tss 0660 on Debian: the user must be in the tss
            group) unless DEVICEID_TPM_TCTI names another ("swtpm:path=SOCKET"). Exits 15 without
            a TPM, 19 without permission, 14 in dictionary-attack lockout.
            """),
        Entry(command: "attest", forms: [
            ("attest enrol APP_ID", "print APP_ID's enrolment request for the attestation CA"),
            ("attest activate APP_ID [FILE]", "answer the CA's challenge (from FILE or stdin)"),
            ("attest certify APP_ID --nonce B64", "evidence for APP_ID's server (--ak-certificate FILE)"),
            ("attest webauthn APP_ID --client-data-hash B64URL", "WebAuthn registration (--ak-certificate FILE)"),
        ], details: """
            Attestation of the hardware-bound ID, in wire format v1 (JSON with base64 fields;
            docs/HARDWARE-ID.md). Each app has its own attestation key (AK), so no two apps'
            servers see a common key. enrol sends the EK certificates and APP_ID's AK to the
            attestation CA your deployment chose (only it sees the EK); activate proves the AK
            lives in that TPM (TPM2_ActivateCredential); certify has the AK certify the app's key
            over the server's nonce (TPM2_Certify), with the CA's AK certificate message from
            --ak-certificate FILE. Servers check evidence with the deviceid_verifier Python package.
            webauthn is App Attest for Linux: WebAuthn's "tpm" attestation of APP_ID's credential
            key over the client data's SHA-256 (base64url), which any WebAuthn verifier registers
            for relying party id APP_ID, given an AK certificate of the TCG AIK profile.
            """),
        Entry(command: "assert", forms: [
            ("assert APP_ID --client-data-hash B64URL", "a WebAuthn assertion for APP_ID's server"),
        ], details: """
            App Attest for Linux, each request: APP_ID's credential key (the one attest webauthn
            registered) signs the authenticator data and the client data's SHA-256; the signCount
            is APP_ID's counter in the TPM, incremented by each call, so that a server catches a
            replay or a cloned TPM by a count that did not grow. Exits 15 without a TPM, 20
            when the TPM's NV memory has no room for the counter.
            """),
        Entry(command: "tpm-pin", forms: [
            ("tpm-pin forget", "forget this machine's pin for the TPM (after tpm2_clear)"),
        ], details: """
            Every TPM call salts its session to the TPM's storage key (SRK), whose Name the first
            call on this machine pinned for this user (kept in the file store under a hash of the
            machine ID and the TPM's address; no ID depends on it). A TPM that answers with another
            key is refused (exit 18, IO): it was cleared (tpm2_clear) or replaced, or something
            between DeviceID and the TPM answers as it. Once you know it is the TPM, forget the
            pin: the next call pins the key it meets. doctor says whether a pin is held.
            """),
        Entry(command: "doctor", forms: [("doctor", "check the bus, the keyring and the file store")], details: """
            Says where IDs are kept and which stores answer now, and why not (a locked keyring: how
            to unlock it, from a shell too); creates, reads back and deletes a probe item in the
            keyring. Names the environment (host, Flatpak app, Snap, container), what the
            Secret portal said in a sandbox, whether the machine ID is weak, and where IDs live
            there and what removes them (--json: "environment"). Names the TPM (maker,
            firmware), the EK certificates it holds and the attestation route it allows, or
            why none, and whether its salting key is pinned (never counted against the stores). Exits 15 when a check this
            configuration needs fails.
            """),
        Entry(command: "version", forms: [("version", "print the version")], details: ""),
        Entry(command: "help", forms: [("help [COMMAND]", "print this text, or one command's")], details: ""),
    ]

    static let options = """
        options:
          --backend auto|secret-service|file   (default: $DEVICEID_BACKEND, else auto)
          --protection portable|this-device-only|this-device-only+pcr7
                                                what IDs and secrets written get: this-device-only
                                                seals them to this machine's TPM, and another
                                                machine reads COPIED (exit 29); +pcr7 also binds
                                                them to the Secure Boot state (PCR 7) (default:
                                                $DEVICEID_PROTECTION, else portable)
          --timeout MS                          deadline for each keyring conversation
          --store-dir DIR                       file store directory (absolute)
          --interactive[=MS]                    let the keyring ask to unlock or confirm, waiting
                                                up to MS (default 120000) for the person
          --json                                machine-readable output and errors
          --interface IF, --bundle ID, --uppercase, --compact   for the techniques above
          --nonce BASE64, --ak-certificate FILE                for attest certify
          --client-data-hash B64URL, --ak-certificate FILE     for attest webauthn, assert
          --allow-empty                         secret store: an empty secret is meant
          -h, --help                            this text; after a command, that command's
          --version                             the version

        exit status: 0 success, 1 not found, 2 usage, 10+|status| for other failures
        (14 locked, 15 unavailable, 16 timed out, 17 corrupt, 19 permission; see deviceid(1)).

        """

    static func line(_ form: (String, String)) -> String {
        "  " + form.0 + String(repeating: " ", count: max(1, 33 - form.0.count)) + form.1 + "\n"
    }

    /// `deviceid --help`.
    static var usage: String {
        "usage: deviceid [OPTIONS] COMMAND [ARGS]\n\ncommands:\n"
            + entries.flatMap { $0.forms }.map { line($0) }.joined() + "\n" + options
    }

    static func entry(_ command: String) -> Entry? { entries.first { $0.command == command } }

    /// `deviceid help COMMAND`.
    static func text(for entry: Entry) -> String {
        "usage:\n" + entry.forms.map { "  deviceid [OPTIONS] \($0.0)\n" }.joined() + "\n"
            + entry.forms.map { "  \($0.0): \($0.1)\n" }.joined() + "\n"
            + (entry.details.isEmpty ? "" : entry.details + "\n\n") + "Global options: deviceid --help\n"
    }

    /// The hint under a one-line usage error.
    static func hint(_ command: String?) -> String {
        if let command, entry(command) != nil { return "deviceid help \(command)" }
        return "deviceid --help"
    }
}
